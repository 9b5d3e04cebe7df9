"""Driving real daemon processes from tests: bounded waits, and every started process killed at the end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.daemon.install import hook_command, usable_sqlite3, write_launchers
from cairn.store.store import Store
from tests.helpers.cli import cairn as run_cairn

DEFAULT_TIMEOUT = 20.0


def cairn(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m cairn ARGS` like `tests.test_cli.cairn`, but returning failures for the test to inspect."""
    return run_cairn(*args, check=False, timeout=timeout, env=env)


def status_json() -> dict[str, Any]:
    """`cairn status --json`, which must succeed."""
    proc = cairn("status", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def wait_for(predicate: Callable[[], object], timeout: float = DEFAULT_TIMEOUT, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
            return False
    return True


def pidfile_pid(home: Path) -> int | None:
    try:
        return int((home / "daemon.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def kill_hard(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, f"pid {pid} to die")


def query(home: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Read the store as any outside reader would, while the daemon owns it."""
    with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=10)) as conn:
        return list(conn.execute(sql, params))


def enqueue(home: Path, path: Path, session: str, event: str = "Stop") -> None:
    """What the hook does: one row into work_queue, collapsing into a pending row for the same path (and
    making one deferred by an indexing pause due now)."""
    with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=10)) as conn, conn:
        conn.execute(
            "INSERT INTO work_queue (path, session_id, event) VALUES (?, ?, ?) "
            "ON CONFLICT (path) WHERE status = 'pending' DO UPDATE SET next_try_at = NULL "
            "WHERE work_queue.event = 'paused'",
            (str(path), session, event),
        )


class Daemons:
    """Starts daemons for one CAIRN_HOME and remembers every pid, so the finaliser can kill them all.

    `env` is added to each daemon's environment (e.g. a dummy key for a fake model server).
    """

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.env = env
        self.pids: list[int] = []

    def start(self) -> int:
        proc = cairn("daemon", "start", env=self.env)
        assert proc.returncode == 0, proc.stderr
        pid = pidfile_pid(self.home)
        assert pid is not None and alive(pid)
        self.pids.append(pid)
        return pid

    def stop(self) -> None:
        proc = cairn("daemon", "stop")
        assert proc.returncode == 0, proc.stderr
        for pid in self.pids:
            self.wait_exit(pid)

    def wait_exit(self, pid: int, timeout: float = 30) -> None:
        wait_for(lambda: not alive(pid), timeout, f"daemon {pid} to exit")

    def wait_idle(self, timeout: float = 40) -> None:
        """Until nothing is pending or running; the daemon is still up (unless it idled out)."""
        wait_for(
            lambda: (
                query(self.home, "SELECT count(*) FROM work_queue WHERE status IN ('pending', 'running')")
                == [(0,)]
            ),
            timeout,
            "the queue to drain",
        )

    def cleanup(self) -> None:
        pid = pidfile_pid(self.home)
        for p in {*self.pids, *([pid] if pid else [])}:
            if alive(p):
                kill_hard(p)


@contextlib.contextmanager
def offline_daemons(home: Path, monkeypatch: pytest.MonkeyPatch, **settings: str) -> Iterator[Daemons]:
    """Daemons for `home` on the offline model, with `settings` (`CAIRN_*` names) in their environment;
    every one started is killed at the end."""
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    started = Daemons(home)
    try:
        yield started
    finally:
        started.cleanup()


def _own_processes(home: Path) -> list[int]:
    """Pids of this user's processes started with this test's CAIRN_HOME (daemons and their starters)."""
    marker = f"CAIRN_HOME={home}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
    return pids


def _make_store(settings: Settings) -> None:
    async def create() -> None:
        store = await Store.open(settings)
        await store.close()

    asyncio.run(create())


def _command(settings: Settings, kind: str) -> str:
    if kind == "sh":
        cli = usable_sqlite3()
        if cli is None:
            pytest.skip("no sqlite3 CLI (3.32+) on PATH")
        targets = write_launchers(settings, sqlite3=cli)
    else:
        targets = write_launchers(settings, sqlite3="")
    assert targets.kind == kind
    return hook_command(settings)
