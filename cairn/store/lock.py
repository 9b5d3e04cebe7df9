"""One process owns a store: an exclusive `flock` on `$CAIRN_HOME/store.lock`.

Chroma's embedded client loses vectors when two processes write one path, and SQLite offsets are only
exactly-once if a single writer applies them, so whoever writes the store first takes this lock and
everyone else is told who holds it. `flock` is tied to the open file description, so the kernel drops
the lock when the holder exits or is killed — a crashed daemon never leaves a stale lock behind. The
pid written into the file is only for the error message; the lock itself is the truth.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path
from types import TracebackType

from cairn.errors import Failure


class StoreLockedError(Failure):
    """Another process holds the store lock."""

    def __init__(self, store: Path, pid: int | None, description: str | None) -> None:
        self.store = store
        self.pid = pid
        self.description = description
        super().__init__(
            f"cairn store at {store} is in use by {self.holder}; "
            "stop it with `cairn daemon stop` or wait for it to finish"
        )

    @property
    def holder(self) -> str:
        """Who holds the lock, for messages: `process 123 (cairn backfill)`."""
        who = f"process {self.pid}" if self.pid else "another process"
        return f"{who} ({self.description})" if self.description else who


def _describe_self() -> str:
    """A short label for the lock file: the command line, so an error can say *what* holds the store."""
    return " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:200] or "python"


def _describe_pid(pid: int) -> str | None:
    """The command line of `pid` from /proc when available (Linux), else None."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    if not args:
        return None
    args[0] = os.path.basename(args[0])
    return " ".join(args)[:200]


class StoreLock:
    """An exclusive, non-blocking, crash-safe lock on one store.

    `acquire()` either takes the lock at once or raises `StoreLockedError`: a second cairn process
    must not queue up behind the owner but go and ask it (or tell the user). Taking the lock twice
    through the same `StoreLock` is a no-op; a second `StoreLock` on the same path — even in the same
    process — is refused, because `flock` locks belong to the open file, not the process.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid, description = self._read_holder()
            raise StoreLockedError(self.path.parent, pid, description) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n{_describe_self()}\n".encode())
            os.fsync(fd)
        except OSError:
            # A full disk: the lock is held all the same (the pid is only for error messages), and
            # the owner must still be able to read the store and say that the disk is full.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Give the lock up. The pid is cleared first so nobody reads a stale holder afterwards."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)

    def holder_pid(self) -> int | None:
        """The pid holding the lock now, or None when it is free.

        Probes with a shared non-blocking lock: a pid left in the file by a process that died does
        not count, since its lock died with it. The probe lasts microseconds; an `acquire()` that races
        with it may fail once, which is why callers report rather than retry in a loop.
        """
        if self._fd is not None:
            return os.getpid()
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._read_holder()[0]
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def _read_holder(self) -> tuple[int | None, str | None]:
        try:
            first, _, rest = self.path.read_text(errors="replace").partition("\n")
        except OSError:
            return None, None
        try:
            pid = int(first.strip())
        except ValueError:
            return None, None
        return pid, _describe_pid(pid) or rest.strip() or None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __del__(self) -> None:
        # A forgotten lock is released when its owner object goes, as it would be at process exit.
        if self._fd is not None:
            os.close(self._fd)
