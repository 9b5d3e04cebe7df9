"""Wall time of `cairn search` from a terminal, through the running daemon and without one, next to
`cairn --version` as the floor.

Usage: ``.venv/bin/python benchmarks/cli_search.py [RUNS]`` (default 20). What a user waits for is the
whole process — interpreter start, imports, the answer, the table printed, exit — so each candidate
is timed as a process, the way a shell runs it, ``RUNS`` times after a few warm-up runs (page cache):

- ``cairn --version``: the floor — the interpreter, typer and cairn's entry point, nothing else;
- ``search op, socket only``: the daemon's own share, one request over its socket from this process;
- ``cairn search``, daemon running: the client path (`cairn.cli.early_search` sends the search as the
  process starts, so the daemon answers while rich loads, and prints the page without loading typer; no
  setting or store module is loaded; a query with no match goes on to the command, as it always did);
- ``cairn search``, no daemon: the cold path as shipped (``search_without_daemon = "keywords"``) —
  settings and SQLite only, no Chroma, no embedding model: keyword matches, which are the hybrid answer
  when they are decisive and say so in a notice when they are not; a query no keyword matches loads
  the model after all (meaning may find what words did not);
- ``cairn search``, no daemon, hybrid: ``search_without_daemon = "hybrid"``, the command loading
  Chroma and the embedding model itself (the cold path before keywords came first).

Both cold rows run with ``search_starts_daemon`` off, so each run stays cold. Which answer each query
got cold is printed below the table.

Setup: a temporary ``CAIRN_HOME`` with every transcript of ``tests/fixtures/transcripts`` indexed by
the offline model; the daemon is warmed by one search first (its first one loads the embedding model),
as a daemon that has been up for a while is. Queries rotate through a few of different kinds. The bars:
the cold path's p50 at most 1.0 s and the daemon path's at most 0.3 s, on a quiet machine, each printed
next to the floor measured in the same run; the load average is printed with the figures, since on a
busy machine every row grows with it. Exit status 0 when both bars are met.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cairn.daemon.client import ask_daemon
from cairn.home import DaemonAddress

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "transcripts"
QUERIES = ("database is locked", "hook latency", "sqlite", "how are sessions parsed", "token usage")
#: The bars: `cairn search` without a daemon, and through it, p50 in seconds.
COLD_BAR_S = 1.0
DAEMON_BAR_S = 0.3


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _cairn(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cairn", *args], env=env, check=True, capture_output=True)


Measured = tuple[list[float], list[float], int]


def _time_process(argv_for: list[list[str]], runs: int, env: dict[str, str]) -> Measured:
    """Wall and CPU seconds of each run (argv rotating through `argv_for`) and the largest peak RSS of a
    run in MB. CPU time (user + system) grows less with the machine's load than wall time does, so it is
    the steadier figure on a busy machine."""
    times, cpu, peak = [], [], 0
    for i in range(runs):
        with tempfile.TemporaryFile() as errors:
            started = time.perf_counter()
            proc = subprocess.Popen(
                argv_for[i % len(argv_for)], stdout=subprocess.DEVNULL, stderr=errors, env=env
            )
            _, status, usage = os.wait4(proc.pid, 0)
            times.append(time.perf_counter() - started)
            errors.seek(0)
            stderr = errors.read().decode()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(proc.args)} failed:\n{stderr}")  # type: ignore[arg-type]
        cpu.append(usage.ru_utime + usage.ru_stime)
        peak = max(peak, usage.ru_maxrss // 1024)
    return times, cpu, peak


def _time_socket(home: Path, runs: int) -> Measured:
    """The `search` op alone: one request over the daemon's socket from this process (the client call
    `cairn search` makes, `ask_daemon`), no client process."""
    times = []
    for i in range(runs):
        started = time.perf_counter()
        ask_daemon(DaemonAddress(home), "search", {"query": QUERIES[i % len(QUERIES)], "limit": 10})
        times.append(time.perf_counter() - started)
    return times, [], 0


def _store_size(env: dict[str, str]) -> str:
    stats = json.loads(_cairn(env, "stats", "--json").stdout)
    return f"{stats.get('messages', 0)} messages, {stats.get('ideas', 0)} ideas"


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="cairn-cli-search-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
        # An installed cairn has its bytecode cached; without it every run would compile cairn's
        # modules from source (the warm-up runs write the cache).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            CAIRN_HOME=str(home),
            CAIRN_CLAUDE_PROJECTS_DIR=str(Path(tmp) / "claude-projects"),
            CAIRN_MODEL="offline",
            CAIRN_IDLE_EXIT_SECONDS="3600",
            CAIRN_HOOK_NO_SPAWN="1",
            CAIRN_SEARCH_STARTS_DAEMON="false",
        )
        transcripts = sorted(str(p) for p in FIXTURES.rglob("*.jsonl"))
        started = time.perf_counter()
        _cairn(env, "index", *transcripts, "--model", "offline")
        print(f"store: {len(transcripts)} fixture transcripts, {_store_size(env)}", end="")
        print(f" (indexed offline in {time.perf_counter() - started:.0f} s)")

        cairn = [sys.executable, "-m", "cairn"]
        searches = [[*cairn, "search", query] for query in QUERIES]
        results: dict[str, Measured] = {}
        _time_process([[*cairn, "--version"]], 3, env)
        results["cairn --version (floor)"] = _time_process([[*cairn, "--version"]], runs, env)
        _cairn(env, "daemon", "start")
        try:
            _time_process(searches, 3, env)  # the daemon's first search loads the embedding model
            results["search op, socket only"] = _time_socket(home, runs)
            results["cairn search, daemon running"] = _time_process(searches, runs, env)
        finally:
            _cairn(env, "daemon", "stop")
        _time_process(searches[:1], 1, env)
        results["cairn search, no daemon"] = _time_process(searches, runs, env)
        hybrid_env = {**env, "CAIRN_SEARCH_WITHOUT_DAEMON": "hybrid"}
        results["no daemon, hybrid (model)"] = _time_process(searches, runs, hybrid_env)
        answers = {query: _cold_answer(env, query) for query in QUERIES}

    load_after = os.getloadavg()[0]
    floor_p50 = statistics.median(results["cairn --version (floor)"][0])
    floor_p95 = _percentile(results["cairn --version (floor)"][0], 95)
    print(
        f"{runs} runs each; load average {load_before:.1f} before, {load_after:.1f} after, on "
        f"{os.cpu_count()} CPUs (every row grows with the load)"
    )
    columns = (
        ("p50 s", 8),
        ("p95 s", 8),
        ("p50/floor", 11),
        ("p95/floor", 11),
        ("CPU p50", 9),
        ("max RSS", 9),
    )
    print(f"{'candidate':<30}" + "".join(f"{title:>{width}}" for title, width in columns))
    for name, (times, cpu, peak) in results.items():
        p50, p95 = statistics.median(times), _percentile(times, 95)
        rss = f"{peak} MB" if peak else "-"
        ratios = f"{p50 / floor_p50:>10.1f}x{p95 / floor_p95:>10.1f}x"
        cpu_p50 = f"{statistics.median(cpu):.3f}" if cpu else "-"
        print(f"{name:<30}{p50:>8.3f}{p95:>8.3f}{ratios}{cpu_p50:>9}{rss:>9}")

    print("without a daemon, each query was answered by:")
    for query, answer in answers.items():
        print(f"  {query!r}: {answer}")
    daemon_p50 = statistics.median(results["cairn search, daemon running"][0])
    cold_p50 = statistics.median(results["cairn search, no daemon"][0])
    meets_cold = _bar("cold `cairn search`", cold_p50, floor_p50, COLD_BAR_S)
    meets_daemon = _bar("`cairn search` through the daemon", daemon_p50, floor_p50, DAEMON_BAR_S)
    if not (meets_cold and meets_daemon) and load_before >= 1:
        print("(on a loaded machine: rerun when it is quiet)")
    return 0 if meets_cold and meets_daemon else 1


def _bar(name: str, p50: float, floor_p50: float, bar: float) -> bool:
    """Print `name`'s p50 next to the floor and its bar; whether it meets the bar."""
    meets = p50 <= bar
    print(
        f"{name}: p50 {p50:.3f} s ({p50 / floor_p50:.1f}x the floor, `cairn --version` {floor_p50:.3f} s)"
        f" {'meets' if meets else 'MISSES'} the {bar:.1f} s bar"
    )
    return meets


def _cold_answer(env: dict[str, str], query: str) -> str:
    """How a search without the daemon answered `query`: its own page says."""
    page = json.loads(_cairn(env, "search", query, "--json").stdout)
    if page.get("vector_skipped"):
        return "keywords, decisive (the hybrid answer)"
    if page.get("vectors_unavailable"):
        return f"keywords only ({len(page['results'])} results, with the notice)"
    return f"hybrid: no keyword matched, so the model was loaded ({len(page['results'])} results)"


if __name__ == "__main__":
    sys.exit(main())
