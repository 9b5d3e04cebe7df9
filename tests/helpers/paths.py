"""Where the repository, its real Claude Code transcripts and the demo session are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Real Claude Code transcripts written by other people (MIT; each folder has its NOTICE), kept in the
#: repository so a fresh clone runs every test.
REAL_TRANSCRIPTS = REPO_ROOT / "tests" / "fixtures" / "transcripts"
DEMO = REPO_ROOT / "cairn" / "demo" / "demo-session.jsonl"
#: The three claude-code-viewer sessions (one Next.js app), in the order `cairn index` is given them.
VIEWER_SESSIONS = sorted(REAL_TRANSCRIPTS.glob("claude-code-viewer/*.jsonl"))


def real_transcripts() -> list[Path]:
    """Every real Claude Code JSONL file under tests/fixtures/transcripts."""
    files = sorted(REAL_TRANSCRIPTS.rglob("*.jsonl"))
    if not files:
        pytest.fail(f"no real transcripts found under {REAL_TRANSCRIPTS}")
    return files
