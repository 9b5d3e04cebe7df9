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
  what to do, as is a path that cannot be written; before, the first two were tracebacks (item 7).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = ["ExportTarget", "ExportTargetError", "export_target"]


class ExportTargetError(Exception):
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

    @contextlib.contextmanager
    def open(self) -> Iterator[TextIO]:
        """The handle to write the export to; a file is put in place only when the block completes."""
        if self.std is not None:
            yield self.std
            self.std.flush()
        elif self.replace:
            with _replaced(self.path) as handle:
                yield handle
        else:
            with _opened(self.path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC) as fd:
                try:
                    with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as handle:
                        yield handle
                except OSError as exc:
                    raise _cannot("write", self.path, exc, code=1) from None


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
    return ExportTargetError(f"cannot {verb} --out {path}: {exc.strerror or exc}; choose another path", code)


@contextlib.contextmanager
def _opened(path: Path, flags: int, mode: int = 0o600) -> Iterator[int]:
    """`os.open`, its failure one line (`ExportTargetError`), the descriptor closed at the end."""
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        raise _cannot("write", path, exc) from None
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _replaced(path: Path) -> Iterator[TextIO]:
    """A new 0600 file beside `path`, renamed over it when the block completes; removed otherwise."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.export")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with _opened(temp, flags) as fd:  # (a failure here created nothing to remove)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as handle:
                yield handle
            os.replace(temp, path)
        except OSError as exc:
            raise _cannot("write", path, exc, code=1) from None
        finally:
            temp.unlink(missing_ok=True)
