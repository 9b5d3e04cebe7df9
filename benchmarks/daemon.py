"""End-to-end latency of live capture: a line appended to a transcript → indexed and embedded by the daemon.

A real daemon (offline model) runs on a temporary CAIRN_HOME. The demo session is written one line at a
time; after each line the work queue gets a notification, as the hook would add it, and the clock runs
until the file's indexing cursor covers the line and the vector outbox is empty (the line's ideas and
message are then searchable). The batch window is the floor: the daemon waits that long on purpose.

    .venv/bin/python benchmarks/daemon.py [--window 0.5] [--lines 20]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "cairn" / "demo" / "demo-session.jsonl"


def _covered(db: Path, line: int) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT indexed_line FROM transcript_files").fetchone()
        pending = conn.execute("SELECT count(*) FROM vector_outbox").fetchone()[0]
    finally:
        conn.close()
    return bool(row) and row[0] >= line and pending == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=0.5, help="CAIRN_BATCH_WINDOW_SECONDS for the run")
    parser.add_argument("--lines", type=int, default=20, help="how many appended lines to time")
    args = parser.parse_args()

    lines = DEMO.read_bytes().splitlines(keepends=True)
    with tempfile.TemporaryDirectory(prefix="cairn-bench-daemon-") as tmp:
        root = Path(tmp)
        env = {
            **{k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"},
            "CAIRN_HOME": str(root / "home"),
            "CAIRN_CLAUDE_PROJECTS_DIR": str(root / "projects"),
            "CAIRN_BATCH_WINDOW_SECONDS": str(args.window),
            "CAIRN_IDLE_EXIT_SECONDS": "120",
            "CAIRN_MODEL": "offline",
        }
        transcript = root / "projects" / "-home-dev-acme" / f"{DEMO.stem}.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_bytes(lines[0])
        cairn = [sys.executable, "-m", "cairn"]
        subprocess.run(
            [*cairn, "sync", "--no-index", str(transcript)], env=env, check=True, capture_output=True
        )
        subprocess.run([*cairn, "daemon", "start"], env=env, check=True, capture_output=True)
        db = root / "home" / "cairn.db"
        latencies: list[float] = []
        try:
            for number, raw in enumerate(lines[1 : args.lines + 1], start=2):
                with transcript.open("ab") as fh:
                    fh.write(raw)
                start = time.perf_counter()
                with sqlite3.connect(db, timeout=5) as conn:
                    conn.execute(
                        "INSERT INTO work_queue (path, session_id, event) VALUES (?, ?, 'Stop') "
                        "ON CONFLICT (path) WHERE status = 'pending' DO NOTHING",
                        (str(transcript), DEMO.stem),
                    )
                while not _covered(db, number):
                    if time.perf_counter() - start > 60:
                        print(f"line {number}: not indexed within 60 s", file=sys.stderr)
                        return 1
                    time.sleep(0.02)
                latencies.append(time.perf_counter() - start)
        finally:
            subprocess.run([*cairn, "daemon", "stop"], env=env, capture_output=True)

    p50 = statistics.median(latencies)
    p95 = sorted(latencies)[max(0, round(0.95 * len(latencies)) - 1)]
    print(f"{len(latencies)} appended lines, offline model, batch window {args.window:.2f} s (the floor)")
    print(
        f"append → indexed and embedded: p50 {p50:.3f} s ({p50 / args.window:.1f}x the window), "
        f"p95 {p95:.3f} s ({p95 / args.window:.1f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
