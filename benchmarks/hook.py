"""Latency of cairn's Claude Code hook as a whole process, next to ``/bin/true`` as the floor.

Usage: ``.venv/bin/python benchmarks/hook.py [RUNS]`` (default 200). Claude Code waits for the hook on
every prompt and answer, so what counts is the wall time of the entire process — interpreter start,
reading stdin, one SQLite write, exit — not of the code inside it. Each candidate is run ``RUNS`` times
with a realistic Stop payload on stdin, through the exact command ``cairn install`` would write,
against a freshly created store in a temporary ``CAIRN_HOME`` (spawning the daemon disabled). A path
is varied per run half the time, so both the insert and the "already pending" no-op are measured.

Candidates: ``hook.sh`` (POSIX sh + the sqlite3 CLI, what ``cairn install`` prefers) run directly and
through the ``CAIRN_HOME/bin/cairn-hook`` launcher that ``cairn install`` registers (which checks its
targets and sources ``hook.sh`` into its own shell), and ``hook.py`` (the Python fallback under
``python -S -E``) through the launcher. The bar is a p50 under 15 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cairn.config import Settings
from cairn.daemon.install import hook_command, usable_sqlite3, write_launchers
from cairn.daemon.launcher import package_file
from cairn.store.store import Store

BAR_MS = 15.0


def _create_store(settings: Settings) -> None:
    async def create() -> None:
        store = await Store.open(settings)
        await store.close()

    asyncio.run(create())


def _time(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    """Wall milliseconds of each run of `argv`, fed a Stop payload on stdin."""
    times = []
    for i in range(runs):
        path = f"/bench/session-{i if i % 2 else 0}.jsonl"
        payload = json.dumps(
            {
                "session_id": "c45af7b1-cb7c-4e51-93db-8cbb250a877a",
                "transcript_path": path,
                "cwd": "/workspace",
                "permission_mode": "default",
                "hook_event_name": "Stop",
                "stop_hook_active": False,
            }
        ).encode()
        started = time.perf_counter()
        subprocess.run(argv, input=payload, stdout=subprocess.DEVNULL, env=env, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _script(name: str) -> str:
    return shlex.quote(str(package_file(name)))


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="cairn-hook-bench-") as tmp:
        settings = Settings.load(Path(tmp) / "home")
        _create_store(settings)
        env = {**os.environ, "CAIRN_HOME": str(settings.home), "CAIRN_HOOK_NO_SPAWN": "1"}
        floor = ["/bin/true"]
        # name -> (argv, the sqlite3 CLI the launcher is written for: None leaves the launcher alone)
        candidates: dict[str, tuple[list[str], str | None]] = {"/bin/true (floor)": (floor, None)}
        cli = usable_sqlite3()
        python = shlex.quote(sys.executable)
        if cli:
            direct = f"CAIRN_PYTHON={python} CAIRN_SQLITE3={shlex.quote(cli)} /bin/sh {_script('hook.sh')}"
            candidates["hook.sh (direct)"] = (["/bin/sh", "-c", direct], None)
            candidates["hook.sh via cairn-hook"] = (["/bin/sh", "-c", hook_command(settings)], cli)
        else:
            print("no sqlite3 CLI (3.32+) on PATH: hook.sh not measured")
        candidates["hook.py via cairn-hook"] = (["/bin/sh", "-c", hook_command(settings)], "")

        results = {}
        for name, (argv, sqlite3) in candidates.items():
            if sqlite3 is not None:
                write_launchers(settings, sqlite3=sqlite3)
            _time(argv, 10, env)  # warm the page cache
            times = _time(argv, runs, env)
            results[name] = (statistics.median(times), _percentile(times, 95))
        failures = (
            (settings.logs_dir / "hook.log").read_text() if (settings.logs_dir / "hook.log").exists() else ""
        )

    floor_p50, floor_p95 = results["/bin/true (floor)"]
    print(f"{runs} runs each; the hook commands run through /bin/sh -c as Claude Code runs them")
    print(f"{'candidate':<26}{'p50 ms':>9}{'p95 ms':>9}{'p50 / floor':>13}{'p95 / floor':>13}")
    for name, (p50, p95) in results.items():
        print(f"{name:<26}{p50:>9.2f}{p95:>9.2f}{p50 / floor_p50:>12.1f}x{p95 / floor_p95:>12.1f}x")
    if failures:
        print(f"the hook logged failures:\n{failures}")
        return 1
    best = min(p50 for name, (p50, _p95) in results.items() if not name.startswith("/bin/true"))
    print(f"best hook p50 {best:.2f} ms: {'meets' if best < BAR_MS else 'MISSES'} the {BAR_MS:.0f} ms bar")
    return 0 if best < BAR_MS else 1


if __name__ == "__main__":
    sys.exit(main())
