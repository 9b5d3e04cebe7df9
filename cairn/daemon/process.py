"""The daemon as an operating-system process: its pidfile, starting it detached, stopping it, status.

One daemon runs per `CAIRN_HOME`. The store lock (`Store.open`) is what guarantees it — the kernel
drops a `flock` when its holder dies, so it can never go stale — and `$CAIRN_HOME/daemon.pid` is what
tells everyone else *which* process is the daemon and since when. The pidfile is written only after
the lock is held and removed on exit; one left behind by a killed daemon names a dead process (or one
that is no cairn daemon, after pid reuse) and is treated as absent, then replaced by the next start.

Status reads the queue through a read-only SQLite connection: the daemon owns the store, and a
reader needs no lock (WAL lets it read while the daemon writes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cairn.daemon.logs import log_path
from cairn.errors import Failure

if TYPE_CHECKING:  # finding the daemon (`running_pid`) needs no setting but the home (`cairn.home`)
    from cairn.config import Settings
    from cairn.home import DaemonAddress

# A cold start imports chromadb and onnxruntime and opens the store: seconds when the machine is quiet,
# much longer on two busy cores. `start` returns as soon as the pidfile names the child, so a generous
# limit costs nothing when all is well, and a short one kills a healthy daemon that was merely slow.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
_POLL = 0.05


class DaemonError(Failure):
    """Starting or stopping the daemon did not work; the message says why and what to do."""


@dataclass(frozen=True)
class PidInfo:
    pid: int
    started_at: float  # seconds since the epoch


@dataclass
class DaemonStatus:
    running: bool
    pid: int | None = None
    uptime_seconds: float | None = None
    queue: dict[str, int] = field(default_factory=dict)
    log: str = ""

    @property
    def depth(self) -> int:
        """Items waiting or being worked on: what the daemon still has to do."""
        return self.queue.get("pending", 0) + self.queue.get("running", 0)

    @property
    def parked(self) -> int:
        return self.queue.get("parked", 0)


def pid_alive(pid: int) -> bool:
    """True when `pid` names a live process (a zombie counts as dead: it will never act again)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


def _is_daemon(pid: int) -> bool:
    """Whether a live `pid` is a cairn daemon, so a pid recycled for another program is not trusted."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: liveness is all we can know
    return b"daemon" in args and any(b"cairn" in a for a in args)


def read_pidfile(settings: Settings | DaemonAddress) -> PidInfo | None:
    """The pidfile's content, or None when it is missing or unreadable."""
    try:
        first, _, rest = settings.pid_path.read_text().partition("\n")
        return PidInfo(int(first.strip()), float(rest.strip() or 0))
    except (OSError, ValueError):
        return None


def running_pid(settings: Settings | DaemonAddress) -> PidInfo | None:
    """The live daemon of this `CAIRN_HOME`, or None; a stale pidfile counts as none."""
    info = read_pidfile(settings)
    if info is None or not pid_alive(info.pid) or not _is_daemon(info.pid):
        return None
    return info


def write_pidfile(settings: Settings) -> None:
    """Record this process as the daemon: atomically, so a reader never sees half a file."""
    tmp = settings.pid_path.with_name(f".{settings.pid_path.name}.{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n{time.time():.3f}\n")
    os.replace(tmp, settings.pid_path)


def remove_pidfile(settings: Settings) -> None:
    """Remove the pidfile if it is this process's (a newer daemon's must survive an old one's exit)."""
    info = read_pidfile(settings)
    if info is not None and info.pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            settings.pid_path.unlink()


# Written by a daemon once its tokenizer and embedding model are loaded; read by the recall hook, which
# gives a daemon that has not written it yet a longer deadline (`cairn.daemon.recall.WARM_MARKER`).
WARM_MARKER = "daemon.warm"


def write_warm_marker(settings: Settings) -> None:
    """Record that this process, the daemon, is warm: atomically, like the pidfile."""
    path = settings.home / WARM_MARKER
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n")
    os.replace(tmp, path)


def remove_warm_marker(settings: Settings) -> None:
    """Remove the warm marker if it is this process's (a newer daemon's must survive an old one's exit)."""
    path = settings.home / WARM_MARKER
    with contextlib.suppress(OSError, ValueError):
        if int(path.read_text().split()[0]) == os.getpid():
            path.unlink()


#: How much of the log a failed start reads for its reason.
_LOG_TAIL_BYTES = 64_000


def start(settings: Settings, *, timeout: float = START_TIMEOUT) -> int:
    """Spawn `python -m cairn daemon run` detached and return its pid once its pidfile names it.

    The child gets a new session (no controlling terminal, untouched by the caller's Ctrl-C) and its
    stdio goes to the daemon log, so it survives the shell that started it. Raises `DaemonError` when
    a daemon already runs or the new one exits or stays silent instead of taking over the store.
    """
    if (current := running_pid(settings)) is not None:
        raise DaemonError(f"the cairn daemon is already running (pid {current.pid}) for {settings.home}")
    _check_writable(settings)
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CAIRN_HOME": str(settings.home)}
    with open(log_path(settings), "ab") as log, open(os.devnull, "rb") as devnull:
        logged_from = log.tell()
        child = subprocess.Popen(
            [sys.executable, "-m", "cairn", "daemon", "run"],
            stdin=devnull,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=env,
            cwd=settings.home,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_pidfile(settings)
        if info is not None and info.pid == child.pid:
            return child.pid
        if (code := child.poll()) is not None:
            why = _last_error(log_path(settings), logged_from)
            raise DaemonError(
                f"the cairn daemon exited at start (code {code})"
                + (f": {why}" if why else "")
                + f"; see {log_path(settings)}"
            )
        time.sleep(_POLL)
    child.terminate()
    raise DaemonError(f"the cairn daemon did not start within {timeout:.0f}s; see {log_path(settings)}")


def _last_error(path: Path, start: int) -> str | None:
    """The message of the last error the daemon logged after byte `start` of its log (`logs.FORMAT`:
    `time pid LEVEL logger: message`), or its last line of output there: why it exited at start (a
    model name no provider serves, a store another process holds), said where the user started it."""
    try:
        with open(path, "rb") as log:
            log.seek(start)
            lines = log.read(_LOG_TAIL_BYTES).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    errors = [line.split(": ", 1)[1] for line in lines if " ERROR " in line and ": " in line]
    if errors:
        return errors[-1].strip()
    said = [line.strip() for line in lines if line.strip()]
    return said[-1] if said else None


def _check_writable(settings: Settings) -> None:
    """Refuse to start a daemon that could only fail: it writes the store, its log and its socket.

    Said here, in the starting process, because a daemon that dies of it cannot even log why.
    """
    from cairn.store.failures import StoreReadOnlyError, disk_full, unwritable_reason

    if (reason := unwritable_reason(settings.home)) is not None:
        raise StoreReadOnlyError(settings.home, reason)
    if disk_full(settings.home):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(settings.home))


def stop(settings: Settings, *, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM the daemon and wait for it to exit; returns its pid, or None when none was running.

    The daemon finishes (or cleanly abandons) its current run first, so this can take as long as one
    agent run. Raises `DaemonError` when it is still alive after `timeout`.
    """
    info = running_pid(settings)
    if info is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(info.pid):
            return info.pid
        time.sleep(_POLL)
    raise DaemonError(
        f"the cairn daemon (pid {info.pid}) did not exit within {timeout:.0f}s of SIGTERM; "
        f"see {log_path(settings)}"
    )


def queue_counts(settings: Settings) -> dict[str, int]:
    """Queue items by status, read without the store lock; empty when there is no store yet."""
    import sqlite3  # here: finding the daemon (`running_pid`, every quick command) needs no SQLite

    from cairn.store.db import read_only_uri  # a read-only home needs `immutable`, see there

    if not settings.db_path.exists():
        return {}
    try:
        with contextlib.closing(sqlite3.connect(read_only_uri(settings.db_path), uri=True)) as conn:
            conn.execute(f"PRAGMA busy_timeout = {settings.sqlite_busy_timeout_ms}")
            rows = conn.execute("SELECT status, count(*) FROM work_queue GROUP BY status").fetchall()
    except sqlite3.Error:
        return {}
    return {str(status): int(n) for status, n in rows}


def status(settings: Settings) -> DaemonStatus:
    info = running_pid(settings)
    return DaemonStatus(
        running=info is not None,
        pid=info.pid if info else None,
        uptime_seconds=max(0.0, time.time() - info.started_at) if info else None,
        queue=queue_counts(settings),
        log=str(log_path(settings)),
    )
