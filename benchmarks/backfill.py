"""Backfill throughput with the offline indexer, next to capture alone as the baseline.

Usage: ``.venv/bin/python benchmarks/backfill.py [COPIES]`` (default 4). The shared fixtures under
``../shared/fixtures/transcripts`` are laid out as a Claude Code projects directory COPIES times
(each copy its own sessions), then two fresh stores are filled from it, each by a real process:

* ``cairn sync --no-index`` — capture only: read, normalise, store and embed every message. Every
  backfill pays this, so it is the floor;
* ``cairn backfill --model offline`` — capture, then index session by session, oldest first.

Both are timed wall-clock as a user sees them (process start included) and reported in messages per
second; the ratio says how much of capture's speed a backfill keeps once indexing is added. The
offline indexer stands in for a model, so this measures cairn's own overhead (planning, tools,
validation, applying, embedding ideas), not an API's latency.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "transcripts"
PROJECT = "-home-dev-bench"


def lay_out(projects: Path, copies: int) -> int:
    """Copy every fixture transcript `copies` times as distinct sessions; returns the file count."""
    root = projects / PROJECT
    root.mkdir(parents=True)
    count = 0
    for i in range(copies):
        for j, path in enumerate(sorted(FIXTURES.rglob("*.jsonl"))):
            shutil.copy(path, root / f"{i:04d}{j:04d}-0000-4000-8000-{path.stem[:12]:0>12}.jsonl")
            count += 1
    return count


def timed(args: list[str], env: dict[str, str]) -> tuple[float, Any]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", *args, "--json"], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"cairn {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return seconds, json.loads(proc.stdout)


def main() -> None:
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    with tempfile.TemporaryDirectory(prefix="cairn-bench-backfill-") as tmp:
        base = Path(tmp)
        files = lay_out(base / "projects", copies)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
        env["CAIRN_CLAUDE_PROJECTS_DIR"] = str(base / "projects")

        capture_home, backfill_home = str(base / "capture"), str(base / "backfill")
        sync_s, sync = timed(["sync", "--no-index"], {**env, "CAIRN_HOME": capture_home})
        back_s, back = timed(["backfill", "--model", "offline"], {**env, "CAIRN_HOME": backfill_home})

    messages = sync["sync"]["messages_added"]
    assert back["messages_added"] == messages, (back["messages_added"], messages)
    indexed = sum(s["messages"] for s in back["sessions"])
    capture_rate = messages / sync_s
    backfill_rate = messages / back_s
    print(f"{files} files, {back['sessions_total']} sessions, {messages} messages ({copies} copies)")
    print(f"capture only (cairn sync --no-index): {sync_s:6.2f} s  {capture_rate:8.1f} messages/s")
    print(
        f"backfill offline (capture + index):   {back_s:6.2f} s  {backfill_rate:8.1f} messages/s  "
        f"({back['batches']} runs, {indexed} messages sent, "
        f"{sum(back['applied']['ideas_by_intent'].values())} ideas)"
    )
    print(f"indexing phase alone: {indexed / back['wall_seconds']:.1f} sent messages/s")
    print(f"backfill / capture throughput: {backfill_rate / capture_rate:.2f}")


if __name__ == "__main__":
    main()
