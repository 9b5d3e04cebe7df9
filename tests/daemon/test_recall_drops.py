"""Drops and the adaptive deadline of the recall hook, with the command `cairn install` writes run as real
processes: every hook call the daemon does not serve is counted (concurrent hooks lose no count), a
daemon that has not reported warm gets the longer warm-up deadline and one that has gets the default,
and a real daemon writes its warm marker once warm and removes it when it stops."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from cairn.config import Settings
from cairn.daemon import recall as recall_hook
from cairn.daemon.install import recall_command, write_launchers
from cairn.daemon.recall_drops import DROPS_FILE, count_drop, read_drops
from tests.daemon.helpers import Daemons, pidfile_pid, wait_for
from tests.helpers.recall_hook import HANG_S, fake_daemon, prompt, run_hook, session_start


def write_pidfile(home: Path, pid: int, started: float) -> None:
    (home / "daemon.pid").write_text(f"{pid}\n{started:.3f}\n")


def test_concurrent_hooks_without_a_daemon_each_count_one_drop(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # Patient: eight interpreters starting at once on a loaded machine may read their payload late.
    env = {**os.environ, "CAIRN_HOOK_NO_SPAWN": "1", "CAIRN_RECALL_DEADLINE_MS": "20000"}
    settings = Settings.load(home)
    write_launchers(settings, sqlite3="")  # what `cairn install` writes; recall does not use sqlite3
    command = recall_command(settings)
    data = json.dumps(prompt("s", "why is the orders test flaky")).encode()
    procs = [
        subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        for _ in range(8)
    ]
    for proc in procs:
        out, _ = proc.communicate(data, timeout=60)
        assert proc.returncode == 0 and out == b""
    drops = read_drops(home)
    assert drops["total"] == 8 and drops["by_reason"]["no_daemon"] == 8
    assert drops["by_event"] == {"UserPromptSubmit": 8}
    assert drops["last"]["reason"] == "no_daemon"
    assert (home / DROPS_FILE).stat().st_mode & 0o777 == 0o600


def test_a_late_daemon_is_a_drop_with_the_default_deadline_once_warm(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with fake_daemon(home, lambda _line: None):
        write_pidfile(home, os.getpid(), time.time())
        (home / "daemon.warm").write_text(f"{os.getpid()}\n")
        started = time.monotonic()
        assert run_hook(home, prompt("s", "anything"), deadline_ms=None).stdout == b""
        assert time.monotonic() - started < HANG_S
    drops = read_drops(home)
    assert drops["by_reason"]["late"] == 1
    assert drops["last"]["deadline_ms"] == round(recall_hook.DEFAULT_DEADLINE_S * 1000)


def test_a_daemon_still_warming_up_gets_the_longer_deadline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with fake_daemon(home, lambda _line: None):
        write_pidfile(home, os.getpid(), time.time())  # started just now, no warm marker yet
        started = time.monotonic()
        assert run_hook(home, session_start("s"), deadline_ms=None).stdout == b""
        waited = time.monotonic() - started
    assert waited >= recall_hook.WARMUP_DEADLINE_S
    drops = read_drops(home)
    assert drops["by_reason"]["late"] == 1 and drops["by_event"] == {"SessionStart": 1}
    assert drops["last"]["deadline_ms"] == round(recall_hook.WARMUP_DEADLINE_S * 1000)


def test_warming_reads_the_pidfile_and_the_marker(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert not recall_hook.warming(home), "no daemon: nothing to wait for"
    now = time.time()
    write_pidfile(tmp_path, 4242, now)
    assert recall_hook.warming(home, now + 1)
    (tmp_path / "daemon.warm").write_text("1111\n")
    assert recall_hook.warming(home, now + 1), "an earlier daemon's marker does not count"
    (tmp_path / "daemon.warm").write_text("4242\n")
    assert not recall_hook.warming(home, now + 1)
    (tmp_path / "daemon.warm").unlink()
    assert not recall_hook.warming(home, now + recall_hook.WARMUP_WINDOW_S + 1), "never warm: default"


def test_the_drop_file_survives_garbage_and_never_creates_a_home(tmp_path: Path) -> None:
    (tmp_path / DROPS_FILE).write_text('{"by_reason": {"late": "x", "failed": 2}, "last": {"at": "[red]"}}')
    assert read_drops(tmp_path) == {
        "total": 2,
        "by_reason": {"late": 0, "failed": 2, "no_daemon": 0},
        "by_event": {},
        "last": None,
    }
    count_drop(str(tmp_path / "missing"), "SessionStart", "late", 200)
    assert not (tmp_path / "missing").exists()


def test_a_real_daemon_marks_itself_warm_and_unmarks_on_stop(cairn_home: Path, daemons: Daemons) -> None:
    pid = daemons.start()
    marker = cairn_home / "daemon.warm"
    wait_for(lambda: marker.exists() and marker.read_text().split() == [str(pid)], 120, "the warm marker")
    assert not recall_hook.warming(str(cairn_home))
    daemons.stop()
    assert not marker.exists() and pidfile_pid(cairn_home) is None
