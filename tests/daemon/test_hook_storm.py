"""A storm of hooks, `kill -9` of the daemon they started, more hooks: the next hook starts a new daemon.

Issue 30: the hook tested `kill -0 $pid`, which succeeds on a zombie, so where PID 1 never reaps, a
daemon killed with SIGKILL was taken for alive by every later hook and capture stopped for good. Here a
harness process is the daemon's reaper that never reaps (PR_SET_CHILD_SUBREAPER), as such a PID 1 is:
it runs the installed hook command for each appended line, kills the daemon the hooks started, and runs
more hooks. Every line must be stored exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.config import Settings
from tests.daemon.helpers import _command, _make_store, _own_processes, alive, kill_hard

HOOKS = 40  # before the kill, and as many after it

HARNESS = r"""
import ctypes, json, os, signal, sqlite3, subprocess, sys, time

libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER: orphaned daemons become ours
    sys.exit("prctl failed")
home, command, transcript, hooks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
session = "0b7c5e2a-3d41-4c8e-9f6a-cafe0000057a"


def pidfile():
    try:
        with open(os.path.join(home, "daemon.pid")) as fh:
            return int(fh.readline())
    except (OSError, ValueError):
        return None


def state(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[0].decode()
    except OSError:
        return None


def running():
    pid = pidfile()
    return pid if pid is not None and state(pid) not in (None, "Z") else None


def wait(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def pending():
    with sqlite3.connect(os.path.join(home, "cairn.db"), timeout=30) as conn:
        return conn.execute(
            "SELECT count(*) FROM work_queue WHERE status IN ('pending', 'running')"
        ).fetchone()[0]


def hook(i):
    line = {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/dev/storm",
        "sessionId": session, "version": "2.0.76", "gitBranch": "main", "type": "user",
        "uuid": f"00000000-0000-4000-8000-{i:012d}",
        "timestamp": f"2026-11-20T09:{i // 60:02d}:{i % 60:02d}Z",
        "message": {"role": "user", "content": f"storm line {i}: how does the zebrafish cache expire?"},
    }
    with open(transcript, "a") as fh:
        fh.write(json.dumps(line) + "\n")
    payload = {"session_id": session, "transcript_path": transcript, "hook_event_name": "Stop"}
    subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(), check=True, timeout=60)


for i in range(hooks):
    hook(i)
assert wait(running, 120), "the first hooks started no daemon"
first = running()
assert wait(lambda: pending() == 0, 120), "the first daemon did not drain the queue"
os.kill(first, signal.SIGKILL)
assert wait(lambda: state(first) == "Z", 30), "the killed daemon is not a zombie"

hook(hooks)  # one hook after the kill
restarted = wait(lambda: running() not in (None, first), 120)
second = running()
for i in range(hooks + 1, 2 * hooks):
    hook(i)
drained = wait(lambda: pending() == 0, 120)
if second is not None:
    os.kill(second, signal.SIGTERM)
    wait(lambda: state(second) in (None, "Z"), 60)
print(json.dumps({"first": first, "second": second, "restarted": restarted, "drained": drained}))
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are told by /proc")
@pytest.mark.parametrize("kind", ["sh", "python"])
def test_a_daemon_killed_in_a_storm_is_restarted_by_the_next_hook(
    settings: Settings, kind: str, tmp_path: Path
) -> None:
    _make_store(settings)
    transcript = tmp_path / "projects" / "-home-dev-storm" / "0b7c5e2a-3d41-4c8e-9f6a-cafe0000057a.jsonl"
    transcript.parent.mkdir(parents=True)
    env = {
        **{k: v for k, v in os.environ.items() if k not in {"CAIRN_HOOK_NO_SPAWN", "ANTHROPIC_API_KEY"}},
        "CAIRN_PYTHON": sys.executable,
        "CAIRN_MODEL": "offline",
        "CAIRN_BATCH_WINDOW_SECONDS": "0.2",
        "CAIRN_IDLE_EXIT_SECONDS": "120",
    }
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                HARNESS,
                str(settings.home),
                _command(settings, kind),
                str(transcript),
                str(HOOKS),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout.splitlines()[-1])
        assert result["restarted"], "a zombie daemon was taken for alive: no hook started another"
        assert result["second"] != result["first"] and result["drained"]
        with contextlib.closing(sqlite3.connect(settings.db_path)) as conn:
            lines = [line for (line,) in conn.execute("SELECT line FROM messages ORDER BY line")]
            queue = conn.execute("SELECT status, count(*) FROM work_queue GROUP BY status").fetchall()
        assert lines == list(range(1, 2 * HOOKS + 1)), "every line stored once: none lost, none twice"
        assert dict(queue).keys() <= {"done"}, queue
    finally:
        for pid in _own_processes(settings.home):
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                kill_hard(pid)
