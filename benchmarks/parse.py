"""How fast the transcript reader parses compared with plain ``json.loads``.

Usage: ``.venv/bin/python benchmarks/parse.py [FILE.jsonl ...]`` (default: every shared fixture under
``tests/fixtures/transcripts``). The set of files is processed repeatedly, enough times for one
pass to take about a second, and timed three ways (best of a few runs each):

* ``json.loads`` of every non-blank line of each file — the floor any reader pays;
* ``parse_entry`` of every non-blank line — the typed parse alone;
* ``read_from`` on each file — chunked reading, line splitting, typed parsing and bookkeeping, with
  each file's entries held in a list the way the daemon receives them.

Files are read one at a time rather than concatenated into one huge file: the daemon reads deltas of
transcripts, and holding millions of parsed entries at once would mostly measure the garbage
collector walking them. The reader is expected to reach at least half of ``json.loads``'s throughput.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cairn.transcripts.entries import parse_entry
from cairn.transcripts.reader import read_from

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO_ROOT / "tests" / "fixtures" / "transcripts"
TARGET_SECONDS = 1.0
RUNS = 3
TARGET_RATIO = 0.5


def _json_loads_all(paths: list[Path]) -> int:
    count = 0
    loads = json.loads
    for path in paths:
        for line in path.read_bytes().split(b"\n"):
            if line.strip():
                loads(line)
                count += 1
    return count


def _parse_entry_all(paths: list[Path]) -> int:
    count = 0
    for path in paths:
        for line in path.read_bytes().split(b"\n"):
            if line.strip():
                parse_entry(line)
                count += 1
    return count


def _read_from_all(paths: list[Path]) -> int:
    return sum(len(read_from(path).entries) for path in paths)


def _best_of(runs: int, work: Callable[[], int]) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(runs):
        start = time.perf_counter()
        count = work()
        best = min(best, time.perf_counter() - start)
    return best, count


def main(argv: list[str]) -> int:
    files = [Path(arg) for arg in argv] or sorted(DEFAULT_DIR.rglob("*.jsonl"))
    if not files:
        print(f"no transcripts found under {DEFAULT_DIR}", file=sys.stderr)
        return 2
    once, _ = _best_of(1, lambda: _json_loads_all(files))
    repeats = max(1, round(TARGET_SECONDS / max(once, 1e-6)))
    paths = files * repeats
    megabytes = sum(path.stat().st_size for path in paths) / 1e6

    json_seconds, lines = _best_of(RUNS, lambda: _json_loads_all(paths))
    parse_seconds, _ = _best_of(RUNS, lambda: _parse_entry_all(paths))
    reader_seconds, entries = _best_of(RUNS, lambda: _read_from_all(paths))

    json_rate = megabytes / json_seconds
    ratio = json_seconds / reader_seconds
    print(f"input: {len(files)} file(s) x {repeats} = {megabytes:.1f} MB, {lines} non-blank lines")
    print(f"json.loads per line   : {json_rate:8.1f} MB/s  ({json_seconds:.3f} s)")
    print(f"parse_entry per line  : {megabytes / parse_seconds:8.1f} MB/s  ({parse_seconds:.3f} s)")
    reader_rate = megabytes / reader_seconds
    print(f"read_from per file    : {reader_rate:8.1f} MB/s  ({reader_seconds:.3f} s, {entries} entries)")
    print(f"ratio read_from/json  : {ratio:8.2f}  (target >= {TARGET_RATIO})")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
