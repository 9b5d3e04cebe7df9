"""Fixtures the benchmark-file loaders' tests share (`load_qa`, `load_truth`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

LINE = json.dumps({"type": "user", "message": {"role": "user", "content": "hello"}})


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    """A transcripts root with `proj/x.jsonl` (5 lines) and `proj/y.jsonl` (one line, no newline)."""
    root = tmp_path / "transcripts"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "x.jsonl").write_text("\n".join([LINE] * 5) + "\n")
    (root / "proj" / "y.jsonl").write_text(LINE)  # one line, no newline at the end: still a line
    return root
