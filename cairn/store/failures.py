"""Write failures a person can act on — a full disk, a read-only store — told in one line.

A full disk or a read-only `CAIRN_HOME` surfaces from many layers: `OSError` from a plain file write,
`sqlite3.OperationalError` ("database or disk is full", "attempt to write a readonly database"),
errors raised by Chroma's Rust core that only carry the OS's words in their text, each wrapped by
whatever called it. None of them is a bug, and a traceback hides the one thing to do: free space or
make the home writable. Nothing is lost either way — a SQLite transaction that fails rolls back
whole, a transcript's offset advances only with what was stored from it, and a vector that Chroma
could not write stays on the outbox — so the message can say so.

`describe_write_failure` recognises these anywhere in an exception's chain, so the faces (the CLI's
entry point, the MCP server) handle them in one place instead of a `try` around every write.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from cairn.errors import Failure

__all__ = ["StoreReadOnlyError", "describe_write_failure", "disk_full", "unwritable_reason"]

#: What to tell about a store that cannot be written after a failure: it is intact and resumable.
NOTHING_LOST = "nothing was lost: what was stored before is intact, and the next run continues from there"

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_READ_ONLY_ERRNOS = frozenset({errno.EROFS})
_DENIED_ERRNOS = frozenset({errno.EACCES, errno.EPERM})

# Lower-case phrases that name the condition in errors that carry no errno (SQLite, Chroma's Rust core).
_FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded")
_READ_ONLY_WORDS = ("read-only file system", "readonly database", "read only file system")

# Below this much free space a disk counts as full: SQLite cannot even make its 32 KiB -shm file then.
FULL_BELOW_BYTES = 1 << 20

# How many linked exceptions (`__cause__`/`__context__`) are looked through: chains are short.
_MAX_CHAIN = 16


class StoreReadOnlyError(Failure):
    """A write was asked of a store that cannot be written (opened read-only, or its home is not writable)."""

    def __init__(self, home: Path, reason: str) -> None:
        self.home = home
        self.reason = reason
        super().__init__(
            f"cannot write the cairn store at {home}: {reason}; {NOTHING_LOST}. "
            "Make it writable (or point CAIRN_HOME elsewhere) to change it; reading commands work as they are"
        )


class UnsafeHomeError(Failure):
    """`CAIRN_HOME` belongs to another user or any user may write it: whoever can write it can change
    what cairn remembers and injects into the user's sessions, so cairn does not use it."""

    def __init__(self, home: Path, why: str, fix: str) -> None:
        self.home = home
        super().__init__(
            f"cairn does not use CAIRN_HOME {home}: {why}, so others could change your memory; {fix}"
        )


def unsafe_home(home: Path) -> UnsafeHomeError | None:
    """Why `home` (existing) must not be used, or None: owned by another user, or writable by anyone."""
    try:
        info = home.stat()
    except OSError:
        return None  # missing or unreadable: the open reports that itself
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return UnsafeHomeError(
            home,
            f"it belongs to another user (uid {info.st_uid})",
            "run cairn as that user, or set CAIRN_HOME to a directory of your own",
        )
    if info.st_mode & stat.S_IWOTH:
        return UnsafeHomeError(
            home,
            f"any user may write it (mode {stat.S_IMODE(info.st_mode):o})",
            f"run `chmod 700 {home}` (or set CAIRN_HOME to a directory of your own)",
        )
    return None


def describe_write_failure(exc: BaseException, home: Path | None = None) -> str | None:
    """One line saying what is full or read-only and that nothing was lost; None for any other error.

    `home` (the store's directory) lets a permission error on a path inside it count as "not
    writable"; elsewhere a permission error is some other problem (a transcript cairn may not read)
    and is left to its usual handling.
    """
    for link in _chain(exc):
        if isinstance(link, StoreReadOnlyError) or NOTHING_LOST in str(link):
            return str(link)  # described already (and wrapped, e.g. by the vector index)
        if isinstance(link, OSError) and link.errno is not None:
            where = _where(link, home)
            if link.errno in _FULL_ERRNOS:
                return _full(where, link.strerror or "no space left on device")
            if link.errno in _READ_ONLY_ERRNOS:
                return _read_only(where, link.strerror or "read-only file system")
            if link.errno in _DENIED_ERRNOS and home is not None and _inside(link.filename, home):
                return _read_only(where, link.strerror or "permission denied")
        text = str(link).lower()
        if any(words in text for words in _FULL_WORDS) or (
            "disk i/o error" in text and home is not None and disk_full(home)
        ):  # SQLite says "disk I/O error" when a full disk stops it making its -shm file
            return _full(_where(link, home), _first_line(str(link)))
        if any(words in text for words in _READ_ONLY_WORDS):
            return _read_only(_where(link, home), _first_line(str(link)))
    return None


def unwritable_reason(home: Path) -> str | None:
    """Why `home` (or, before it exists, the directory it would be made in) cannot be written; None
    when it can. Asked up front, so a read-only store is known before any write is tried — and
    `access()` answers for the caller as it is (root included: a read-only mount refuses root too)."""
    existing = home
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if os.access(existing, os.W_OK | os.X_OK):
        return None
    try:
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return f"{existing} is not writable by this user"


def disk_full(path: Path) -> bool:
    """True when the file system holding `path` (or its nearest existing parent) has next to no room."""
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    try:
        fs = os.statvfs(existing)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < FULL_BELOW_BYTES


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from or while handling, nearest first, each once."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(seen) < _MAX_CHAIN:
        link = todo.pop(0)
        if any(link is s for s in seen):
            continue
        seen.append(link)
        todo.extend(e for e in (link.__cause__, link.__context__) if e is not None)
    return seen


def _where(exc: BaseException, home: Path | None) -> str:
    filename = getattr(exc, "filename", None)
    if isinstance(filename, str | bytes | os.PathLike):
        return os.fsdecode(filename)
    return f"the cairn store at {home}" if home is not None else "the cairn store"


def _inside(filename: object, home: Path) -> bool:
    if not isinstance(filename, str | bytes | os.PathLike):
        return False
    path = Path(os.fsdecode(filename))
    return path == home or home in path.parents


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "disk error"


def _full(where: str, detail: str) -> str:
    return (
        f"cannot write {where}: the disk is full ({detail}); {NOTHING_LOST}. Free some space and run it again"
    )


def _read_only(where: str, detail: str) -> str:
    return (
        f"cannot write {where}: it is read-only ({detail}); {NOTHING_LOST}. "
        "Make it writable (or point CAIRN_HOME elsewhere) and run it again"
    )
