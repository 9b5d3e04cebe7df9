"""Latency of cairn's recall hook as a whole process, with the daemon up and down.

Usage: ``.venv/bin/python benchmarks/recall.py [RUNS]`` (default 200). Claude Code waits for the recall
hook before a session starts and before every prompt goes to the model, so what counts is the wall time
of the entire process as Claude Code runs it — ``/bin/sh -c`` the command ``cairn install`` writes,
interpreter start, one request over the daemon's socket, the answer printed, exit.

Setup: a temporary ``CAIRN_HOME`` with the demo session and two small real transcripts indexed offline,
and a daemon serving it (warmed by one request, as a daemon that has been up for a while is). Each run
uses a fresh session id, so deduplication never turns a run into a cheap "nothing new".

Measured, each ``RUNS`` times: the bare interpreter start (``python -S -E -c pass``, the floor no
Python hook can beat), the ``recall`` op over the socket from this process (the daemon's share),
``UserPromptSubmit`` with a prompt on the demo's topic (it injects) and an unrelated one (it does
not), ``SessionStart``, both events with the daemon stopped, and (at most 50 times, each waits out the
hook's deadline) a daemon that accepts the connection but never answers. The bars: p95 under 150 ms
with the daemon up, and under 300 ms — the hook's hard limit — with it down or hung.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.daemon.install import recall_command, write_launchers

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "cairn" / "demo" / "demo-session.jsonl"
VIEWER = REPO / "tests" / "fixtures" / "transcripts" / "claude-code-viewer"
CWD = "/home/dev/acme-api"
ON_TOPIC = "the orders tests fail with database is locked again"
UNRELATED = "what's a good recipe for banana bread?"
UP_BAR_MS = 150.0
DOWN_BAR_MS = 300.0


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _payload(event: str, **fields: str) -> dict[str, Any]:
    session = str(uuid.uuid4())
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-acme-api/{session}.jsonl",
        "cwd": CWD,
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def _time_hook(
    command: str, make: Callable[[], dict[str, Any]], runs: int, env: dict[str, str]
) -> tuple[list[float], int]:
    """Wall milliseconds of each run of the hook command, and how many runs injected something."""
    times, injected = [], 0
    for _ in range(runs):
        data = json.dumps(make()).encode()
        started = time.perf_counter()
        proc = subprocess.run(
            ["/bin/sh", "-c", command], input=data, capture_output=True, env=env, check=True
        )
        times.append((time.perf_counter() - started) * 1000)
        injected += bool(proc.stdout)
    return times, injected


def _time_argv(argv: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], int]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdin=subprocess.DEVNULL, env=env, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times, 0


def _time_socket(settings: Settings, runs: int) -> tuple[list[float], int]:
    """The `recall` op alone: one request over the socket from this process, no hook process."""
    times, injected = [], 0
    for _ in range(runs):
        request = _payload("UserPromptSubmit", prompt=ON_TOPIC)
        args = {
            "event": "UserPromptSubmit",
            "session_id": request["session_id"],
            "cwd": CWD,
            "prompt": ON_TOPIC,
        }
        started = time.perf_counter()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(settings.socket_path))
            sock.sendall(json.dumps({"op": "recall", "args": args}).encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
        times.append((time.perf_counter() - started) * 1000)
        injected += bool(json.loads(reply)["result"]["additionalContext"])
    return times, injected


def _cairn(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-m", "cairn", *args], env=env, check=True, capture_output=True)


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="cairn-recall-bench-") as tmp:
        settings = Settings.load(Path(tmp) / "home")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
        daemon_env = {
            **env,
            "CAIRN_HOME": str(settings.home),
            "CAIRN_CLAUDE_PROJECTS_DIR": str(Path(tmp) / "claude-projects"),
            "CAIRN_MODEL": "offline",
            "CAIRN_IDLE_EXIT_SECONDS": "3600",
        }
        viewer = sorted(VIEWER.glob("*.jsonl"))[:2]
        _cairn(daemon_env, "index", str(DEMO), *map(str, viewer), "--model", "offline")
        write_launchers(settings, sqlite3="")  # as `cairn install` does; the launcher pins CAIRN_HOME
        command = recall_command(settings)
        hook_env = {**env, "CAIRN_HOOK_NO_SPAWN": "1"}

        def prompt_on_topic() -> dict[str, Any]:
            return _payload("UserPromptSubmit", prompt=ON_TOPIC)

        def prompt_unrelated() -> dict[str, Any]:
            return _payload("UserPromptSubmit", prompt=UNRELATED)

        def session_start() -> dict[str, Any]:
            return _payload("SessionStart", source="startup")

        floor = [sys.executable, "-S", "-E", "-c", "pass"]
        results: dict[str, tuple[list[float], int]] = {}
        _cairn(daemon_env, "daemon", "start")
        try:
            _time_socket(settings, 5)  # warm: the first search loads the embedding model
            candidates: dict[str, Callable[[int], tuple[list[float], int]]] = {
                "python -S -E (floor)": lambda n: _time_argv(floor, n, env),
                "recall op, socket only": lambda n: _time_socket(settings, n),
                "UserPromptSubmit, on topic": lambda n: _time_hook(command, prompt_on_topic, n, hook_env),
                "UserPromptSubmit, unrelated": lambda n: _time_hook(command, prompt_unrelated, n, hook_env),
                "SessionStart": lambda n: _time_hook(command, session_start, n, hook_env),
            }
            for name, measure in candidates.items():
                measure(10)  # warm the page cache
                results[name] = measure(runs)
        finally:
            _cairn(daemon_env, "daemon", "stop")
        for name, make in (
            ("daemon down, UserPromptSubmit", prompt_on_topic),
            ("daemon down, SessionStart", session_start),
        ):
            _time_hook(command, make, 10, hook_env)
            results[name] = _time_hook(command, make, runs, hook_env)
        hung = Settings.load(Path(tmp) / "hung")
        hung.home.mkdir()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(str(hung.socket_path))
            listener.listen(1024)  # connections queue up, nobody ever answers
            hung_runs = min(runs, 50)
            write_launchers(hung, sqlite3="")
            results["daemon hung, UserPromptSubmit"] = _time_hook(
                recall_command(hung), prompt_on_topic, hung_runs, hook_env
            )
        log = settings.logs_dir / "hook.log"
        failures = log.read_text() if log.exists() else ""

    floor_p50 = statistics.median(results["python -S -E (floor)"][0])
    print(f"{runs} runs each (the hung daemon: {hung_runs}); hook commands run through /bin/sh -c")
    print(f"{'candidate':<32}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'injected':>10}{'p50 - floor':>13}")
    for name, (times, injected) in results.items():
        p50, p95 = statistics.median(times), _percentile(times, 95)
        print(f"{name:<32}{p50:>9.1f}{p95:>9.1f}{max(times):>9.1f}{injected:>10}{p50 - floor_p50:>+13.1f}")

    ok = True
    for name, bar in (
        ("UserPromptSubmit, on topic", UP_BAR_MS),
        ("UserPromptSubmit, unrelated", UP_BAR_MS),
        ("SessionStart", UP_BAR_MS),
        ("daemon down, UserPromptSubmit", DOWN_BAR_MS),
        ("daemon down, SessionStart", DOWN_BAR_MS),
        ("daemon hung, UserPromptSubmit", DOWN_BAR_MS),
    ):
        p95 = _percentile(results[name][0], 95)
        meets = p95 < bar
        ok &= meets
        print(f"{name}: p95 {p95:.1f} ms {'meets' if meets else 'MISSES'} the {bar:.0f} ms bar")
    for name in ("UserPromptSubmit, on topic", "SessionStart"):
        if results[name][1] < runs:
            print(f"{name}: {runs - results[name][1]} of {runs} runs injected nothing (answers too late?)")
            ok = False
    if failures:
        print(f"the hook logged failures:\n{failures}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
