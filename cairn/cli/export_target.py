"""Where `cairn export --out PATH` writes, decided by what PATH is before a row is read.

A regular file (or a new one) gets the export as a new 0600 file renamed over the path when complete,
so a kill leaves the old file or the new one, never a half, and an existing file's mode (0644: the
whole memory world-readable) or a symlink's target is never written through.

That rename replaces the *directory entry* PATH. For anything but a regular file that is wrong: as
root, `--out /dev/stdout` replaced the `/dev/stdout` symlink with a 0600 regular file, and
`/dev/null` would have gone the same way. So what PATH leads to decides:

* the process's own stdout or stderr (`/dev/stdout`, `/proc/self/fd/1`, whatever fd 1 is): written
  there, in place;
* a character device (`/dev/null`, a terminal) or a FIFO: opened and written in place, streamed;
* a directory, a missing parent directory, a block device, a socket: refused in one line that says
  what to do, as is a path that cannot be written; before, the first two were tracebacks.

Without `--out` the export goes to stdout (`stdout_target`), which is the same in-place stream.

A write that fails is about the export's file, never the store, which export only reads: a full disk
under the export (`ENOSPC`, `EDQUOT`) is said as such, naming the file and what to do. It used to
reach the entry point's handler for store failures, which told the user *the store's* disk was full.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from cairn.errors import CairnError

__all__ = ["ExportTarget", "ExportTargetError", "export_target", "stdout_target"]

#: The errors that mean the disk under the export has no room (blocks, inodes or the quota).
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class ExportTargetError(CairnError):
    """PATH cannot take the export; the message is one line saying why and what to do. `code` is the
    exit status: 2 for a path refused before anything was written, 1 for a write that failed."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ExportTarget:
    """Where the export goes: a file put in place (`replace`), or a stream written in place."""

    path: Path
    replace: bool
    std: TextIO | None = None
    """The process's own stdout or stderr, when PATH is one of them."""
    name: str | None = None
    """How messages name the target when not by `path` ("stdout" when no --out was given)."""

    @property
    def shown(self) -> str:
        return self.name or str(self.path)

    @contextlib.contextmanager
    def open(self) -> Iterator[TextIO]:
        """The handle to write the export to; a file is put in place only when the block completes.
        A write that fails raises `ExportTargetError` (exit 1) with a line about this target."""
        if self.std is not None:
            try:
                yield self.std
                self.std.flush()
            except OSError as exc:
                _silence(self.std)
                raise _cannot_write(self.shown, exc, in_place=True) from None
        elif self.replace:
            with _replaced(self.path) as handle:
                yield handle
        else:
            with _opened(self.path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC) as fd:
                try:
                    with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as handle:
                        yield handle
                except OSError as exc:
                    raise _cannot_write(self.shown, exc, in_place=True) from None


def stdout_target() -> ExportTarget:
    """The export's target without --out: this process's stdout, written in place (a shell's
    `> file` or `| cmd`), its write failures said like those of --out."""
    return ExportTarget(Path("/dev/stdout"), replace=False, std=sys.stdout, name="stdout")


def export_target(path: Path) -> ExportTarget:
    """What `--out path` leads to, or `ExportTargetError`; nothing is created or opened yet."""
    shown = str(path)
    try:
        found = os.stat(path)  # follows symlinks: what a write would reach
    except FileNotFoundError:
        return _new_file(path)
    except NotADirectoryError:
        raise ExportTargetError(
            f"--out {shown}: part of that path is a file, not a directory; choose another path"
        ) from None
    except OSError as exc:
        raise _cannot("use", path, exc) from None
    mode = found.st_mode
    if stat.S_ISDIR(mode):
        raise ExportTargetError(
            f"--out {shown} is a directory: name a file in it, e.g. --out {path / 'cairn-export.jsonl'}"
        )
    std = _std_stream(found)
    if std is not None:
        return ExportTarget(path, replace=False, std=std)
    if stat.S_ISREG(mode):
        return ExportTarget(path, replace=True)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return ExportTarget(path, replace=False)
    kind = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file"
    raise ExportTargetError(
        f"--out {shown} is {kind}: name a regular file, or leave --out off to write to stdout"
    )


def _new_file(path: Path) -> ExportTarget:
    """A path that does not exist (or a dangling symlink, replaced like a file): its directory must."""
    parent = path.absolute().parent
    if not parent.is_dir():
        if parent.exists():
            raise ExportTargetError(f"--out {path}: {parent} is not a directory; choose another path")
        raise ExportTargetError(
            f"--out {path}: the directory {parent} does not exist; create it (mkdir -p {parent}) "
            "or choose another path"
        )
    return ExportTarget(path, replace=True)


def _std_stream(found: os.stat_result) -> TextIO | None:
    """sys.stdout or sys.stderr when `found` is the very file it writes to."""
    for stream in (sys.stdout, sys.stderr):
        try:
            own = os.fstat(stream.fileno())
        except (AttributeError, OSError, ValueError):  # replaced by a buffer without a descriptor
            continue
        if (own.st_dev, own.st_ino) == (found.st_dev, found.st_ino):
            return stream
    return None


def _cannot(verb: str, path: Path, exc: OSError, code: int = 2) -> ExportTargetError:
    if exc.errno in _FULL_ERRNOS:
        return _cannot_write(str(path), exc, in_place=False)
    return ExportTargetError(f"cannot {verb} --out {path}: {exc.strerror or exc}; choose another path", code)


def _cannot_write(shown: str, exc: OSError, *, in_place: bool) -> ExportTargetError:
    """A write of the export that failed (exit 1). `in_place`: the target was written as a stream, so
    what reached it is incomplete; otherwise the temporary file is gone and the path is as it was.

    A full disk is the one a user most meets and the one most easily misread, so it is named: the
    disk that is full is the export's, the store is untouched, and the two ways out are said."""
    left = f"what reached {shown} is incomplete" if in_place else f"nothing was written to {shown}"
    elsewhere = "write it to a file with --out FILE" if shown == "stdout" else "choose another --out"
    if exc.errno in _FULL_ERRNOS:
        return ExportTargetError(
            f"writing the export to {shown} failed: its disk is full ({exc.strerror or 'no space left'}); "
            f"{left}, and the cairn store is unchanged. Free some space on that disk, or {elsewhere} "
            "on another disk",
            code=1,
        )
    return ExportTargetError(
        f"writing the export to {shown} failed: {exc.strerror or exc}; {left}, and the cairn store is "
        f"unchanged. Run it again, or {elsewhere}",
        code=1,
    )


def _silence(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null once a write to it failed: the interpreter flushes it
    again at exit, and what is still buffered would fail again there, printed as "Exception ignored"
    after the one line that said why."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # a buffer without a descriptor (a test's capture)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


@contextlib.contextmanager
def _opened(path: Path, flags: int, mode: int = 0o600, shown: Path | None = None) -> Iterator[int]:
    """`os.open`, its failure one line (`ExportTargetError`) about `shown` (default `path`), the
    descriptor closed at the end."""
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        raise _cannot("write", shown or path, exc) from None
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _replaced(path: Path) -> Iterator[TextIO]:
    """A new 0600 file beside `path`, renamed over it when the block completes; removed otherwise.

    The file is synced before the rename: a file system that reports a full disk only when the data
    is flushed (NFS) says so there, while `path` is still as it was, and a crash after the rename
    leaves the whole export rather than an empty file."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.export")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with _opened(temp, flags, shown=path) as fd:  # (a failure here created nothing to remove)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as handle:
                yield handle
            os.fsync(fd)
            os.replace(temp, path)
        except OSError as exc:
            raise _cannot_write(str(path), exc, in_place=False) from None
        finally:
            temp.unlink(missing_ok=True)
