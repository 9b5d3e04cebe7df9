"""The store lock: exclusive across processes, released by the kernel when its holder dies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cairn.store.lock import StoreLock, StoreLockedError
from tests.store.procs import read_line, spawn, stop

HOLD_LOCK = """
    import sys, time
    from cairn.store.lock import StoreLock
    lock = StoreLock(sys.argv[1])
    lock.acquire()
    print("locked", flush=True)
    time.sleep(120)
"""


@pytest.mark.process
def test_lock_held_by_another_process_is_refused_and_freed_when_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "store.lock"
    holder = spawn(HOLD_LOCK, str(path))
    try:
        assert read_line(holder) == "locked"
        lock = StoreLock(path)
        with pytest.raises(StoreLockedError) as refused:
            lock.acquire()
        assert refused.value.pid == holder.pid
        message = str(refused.value)
        assert f"cairn store at {tmp_path} is in use by process {holder.pid}" in message
        assert "python" in message  # the holder's command line, read from /proc
        assert "cairn daemon stop" in message
        assert lock.holder_pid() == holder.pid
        assert not lock.held

        holder.kill()
        holder.wait()
        # The dead holder's pid is still in the file, but its lock died with it.
        assert path.read_text().startswith(str(holder.pid))
        assert lock.holder_pid() is None
        lock.acquire()
        assert lock.holder_pid() == os.getpid()
        assert path.read_text().startswith(f"{os.getpid()}\n")
        lock.release()
    finally:
        stop(holder)


def test_second_lock_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.lock"
    with StoreLock(path) as first:
        assert first.held
        other = StoreLock(path)
        with pytest.raises(StoreLockedError, match=f"in use by process {os.getpid()}"):
            other.acquire()
        assert other.holder_pid() == os.getpid()
        first.acquire()  # re-acquiring through the holder is a no-op
    assert not first.held
    assert path.read_text() == ""  # released: no stale pid left for readers
    assert StoreLock(path).holder_pid() is None
    with StoreLock(path):
        pass


def test_holder_pid_of_a_store_never_locked(tmp_path: Path) -> None:
    assert StoreLock(tmp_path / "missing" / "store.lock").holder_pid() is None


def test_lock_creates_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "new-home" / "store.lock"
    with StoreLock(path):
        assert path.exists()
