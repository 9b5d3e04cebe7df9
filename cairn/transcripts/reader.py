"""Incremental, crash-safe reading of a transcript that Claude Code may still be appending to.

The daemon remembers a byte offset (and line number and inode) per transcript and calls
:func:`read_from` whenever the file changes. Three properties make that safe:

* Only *complete* lines are consumed. A trailing line without its newline is usually being written
  right now; it is left unread (``partial_bytes``) and the returned offset stops before it, so the
  next call picks it up whole. The exception is a *finished* file whose last entry simply has no
  newline (files copied out of other tools' storage end like that): when the unterminated tail
  parses as one complete JSON object and the file has not been modified for ``settle_seconds``, it
  is consumed as the last line, and the returned offset is the end of the file. Should the file
  grow later, reading resumes inside that physical line: a newline there is the late terminator and
  is skipped, anything else is the rest of the line, so nothing is read twice and line numbers stay
  physical.
* A bad line never stops reading: malformed lines are counted and skipped, and a line longer than
  ``max_line_bytes`` is skipped while scanning to its newline, so memory holds at most one chunk plus
  ``max_line_bytes`` whatever the file contains. *Any* exception parsing one line makes it malformed,
  not only a validation error: ``'[' * 2000`` once raised a RecursionError out of the reader that
  stopped ``cairn sync`` and crash-looped the daemon on that one file.
* Every entry read is nested at most ``MAX_NESTING`` containers deep, whichever path parsed it: the hot
  path's parser (jiter) refuses deeper JSON, and the long-line path refuses it too. What reads an entry
  afterwards (normalisation walks tool inputs recursively) can then never exhaust the stack; a 300 KB
  line nested 500 deep once passed ``json.loads`` and raised a RecursionError in normalisation.
* No string read is longer than ``MAX_TEXT_CHARS``: a line long enough to hold a longer one (a 20 MB
  log pasted into a prompt, a dumped file) is parsed by a slower path that cuts each long string to
  its head and its end around a marker saying how much was cut (``ReadEntry.chars_cut`` counts it),
  after redacting it whole, so no secret is split by the cut and kept in part.
  Stored whole, one such line once made a 52 MB database and a 2.85 GB capture; cut, what follows it
  costs what a normal message costs. Shorter lines cannot hold such a string (a JSON string of N
  characters takes at least N bytes), so the hot path pays one length comparison it paid anyway.
* A file that was truncated or replaced is read again from the start (``restarted``) rather than
  from an offset that no longer means anything.

The file is streamed in large chunks and lines are found with ``bytes.find``, so the per-line Python
work is one slice, one pydantic-core call and one small object.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from pydantic import ValidationError

from cairn.errors import Refusal
from cairn.transcripts.entries import Entry, parse_entry, parse_entry_object
from cairn.transcripts.redact import redact

__all__ = [
    "CHUNK_SIZE",
    "MALFORMED_LINES_KEPT",
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "MAX_TEXT_CHARS",
    "SETTLE_SECONDS",
    "TEXT_TAIL_CHARS",
    "EntryStream",
    "ReadEntry",
    "ReadResult",
    "TranscriptNotFound",
    "cut_text",
    "iter_entries",
    "read_from",
]

CHUNK_SIZE = 1 << 20
MAX_LINE_BYTES = 32 * 1024 * 1024
MALFORMED_LINES_KEPT = 100
#: Containers (objects and arrays, the line's own object included) one entry may nest: what the hot
#: path's JSON parser (jiter, inside pydantic-core) accepts, so that both paths accept the same lines.
MAX_NESTING = 201
SETTLE_SECONDS = 5.0
_REASON_MAX_CHARS = 200

#: Characters one string of an entry keeps at most, and so (``cairn.transcripts.normalise``) one
#: message's text: 256 K characters is ~50,000 words, far more than a search or the indexer uses of
#: one message, and little enough that cutting it into passages and embedding them stays cheap.
MAX_TEXT_CHARS = 256 * 1024
#: Of those, how many are the string's end: the last lines of a long output (a test summary, the
#: error a log ends with) are often what matters in it.
TEXT_TAIL_CHARS = 8 * 1024
#: A cut is moved to whitespace within this many characters, so that it splits no word. (Secrets are no
#: longer its concern: a string is redacted whole before it is cut.)
_CUT_SEARCH_CHARS = 1024


class TranscriptNotFound(Refusal, FileNotFoundError):
    """The transcript does not exist (any more): Claude Code may have deleted or moved it."""


@dataclass(frozen=True, slots=True)
class ReadEntry:
    """One parsed line and where it sits in the file.

    ``byte_start``/``byte_end`` are the half-open range of the line *including* its newline (a
    finished file's unterminated last line has none), so the ranges of consecutive lines tile the
    file and ``byte_end`` is the offset to resume after it.
    """

    entry: Entry
    line: int
    byte_start: int
    byte_end: int
    chars_cut: int = 0
    """Characters cut from the entry's strings longer than ``MAX_TEXT_CHARS`` (0 for nearly every line)."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Everything one :func:`read_from` call consumed, and the position to resume from."""

    path: Path
    entries: list[ReadEntry]
    start_offset: int
    offset: int
    line: int
    inode: int
    size: int
    malformed: int = 0
    malformed_lines: list[tuple[int, str]] = field(default_factory=list)
    oversized: int = 0
    partial_bytes: int = 0
    restarted: bool = False


class EntryStream(Iterator[ReadEntry]):
    """Iterates the complete entries of a transcript after an offset, one at a time.

    The position and counters are attributes that are kept current while iterating: after each
    yielded entry ``offset``/``line`` point just past it (and past any blank or bad lines before it),
    so a caller may stop early and resume exactly there. ``partial_bytes`` and the final ``offset``
    are known once the stream is exhausted. The file is opened on construction (so a missing file
    fails at once) and closed when the stream ends, on :meth:`close`, or on leaving a ``with`` block.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offset: int = 0,
        *,
        line: int | None = None,
        inode: int | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        chunk_size: int = CHUNK_SIZE,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        if max_line_bytes < 1 or chunk_size < 1:
            raise ValueError("max_line_bytes and chunk_size must be positive")
        self.path = Path(path)
        try:
            self._file: BinaryIO = open(self.path, "rb")  # noqa: SIM115 - closed by the stream
        except FileNotFoundError as exc:
            raise TranscriptNotFound(f"transcript not found: {self.path}") from exc
        try:
            stat = os.fstat(self._file.fileno())
            self.inode = stat.st_ino
            self.size = stat.st_size
            self.settled = time.time() - stat.st_mtime >= settle_seconds
            mid_line = _after_unterminated_entry(self._file, offset, max_line_bytes)
            self.restarted = _must_restart(self._file, offset, stat.st_size, inode, stat.st_ino, mid_line)
            if self.restarted:
                offset, line, mid_line = 0, 0, False
            if line is None:
                line = _count_newlines(self._file, offset, chunk_size) + mid_line
        except BaseException:
            self._file.close()
            raise
        # Resuming inside a physical line whose entry was already consumed: the scan starts one line
        # back, so that line's (late) newline closes it again without counting a new line.
        self._mid_line = mid_line
        self.start_offset = offset
        self.offset = offset
        self.line = line
        self.malformed = 0
        self.malformed_lines: list[tuple[int, str]] = []
        self.oversized = 0
        self.partial_bytes = 0
        self._max_line_bytes = max_line_bytes
        self._chunk_size = chunk_size
        self._lines = self._scan()

    def __next__(self) -> ReadEntry:
        return next(self._lines)

    def __enter__(self) -> EntryStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._lines.close()
        self._file.close()

    def _malformed(self, line: int, exc: Exception) -> None:
        self._malformed_reason(line, _reason(exc))

    def _malformed_reason(self, line: int, reason: str) -> None:
        self.malformed += 1
        if len(self.malformed_lines) < MALFORMED_LINES_KEPT:
            self.malformed_lines.append((line, reason))

    def _parse_long(self, raw: bytes, line: int) -> tuple[Entry, int] | None:
        """A line that may hold a string longer than ``MAX_TEXT_CHARS``, parsed with such strings cut
        (and how many characters were cut); None when it is malformed (counted as such).

        ``json.loads`` then a walk over the result, because pydantic cannot cut strings as it reads
        them; the line's Python objects live only until the cut entry is built from them.
        """
        try:
            value = json.loads(raw)
        except RecursionError:
            self._malformed_reason(line, f"invalid JSON: nested deeper than {MAX_NESTING} levels")
            return None
        except Exception as exc:  # ValueError, UnicodeDecodeError, or anything else: a bad line
            self._malformed_reason(line, f"invalid JSON: {exc}"[:_REASON_MAX_CHARS])
            return None
        try:
            cut = _cut_long_strings(value)
            return parse_entry_object(value), cut
        except Exception as exc:  # _TooDeep, ValidationError, or anything else: a bad line
            self._malformed(line, exc)
            return None

    def _scan(self) -> Iterator[ReadEntry]:
        # Hot loop: state lives in locals and is written back to self only around each yield.
        file = self._file
        read = file.read
        chunk_size = self._chunk_size
        max_len = self._max_line_bytes
        long_len = min(MAX_TEXT_CHARS, max_len)  # longer lines may hold a string to cut
        parse = parse_entry
        mid_line = self._mid_line
        line_no = self.line - mid_line
        base = line_start = self.offset  # absolute offsets of chunk[0] and of the current line
        pending: list[bytes] = []  # pieces of a line that spans chunks
        pending_len = 0
        skipping = False  # inside an oversized line: discard bytes up to its newline
        try:
            file.seek(base)
            while chunk := read(chunk_size):
                i = 0
                while (nl := chunk.find(b"\n", i)) >= 0:
                    line_no += 1
                    mid_line = False
                    end = base + nl + 1
                    if skipping:
                        skipping = False
                        self.oversized += 1
                    else:
                        if pending:
                            pending.append(chunk[i:nl])
                            raw = b"".join(pending)
                            pending.clear()
                            pending_len = 0
                        else:
                            raw = chunk[i:nl]
                        if len(raw) > long_len:
                            if len(raw) > max_len:
                                self.oversized += 1
                            elif (parsed := self._parse_long(raw, line_no)) is not None:
                                raw = b""  # the line's bytes are not kept while the entry is used
                                self.offset = end
                                self.line = line_no
                                yield ReadEntry(parsed[0], line_no, line_start, end, parsed[1])
                        elif raw and not raw.isspace():
                            try:
                                entry = parse(raw)
                            except Exception as exc:  # ValidationError, or anything else: a bad line
                                self._malformed(line_no, exc)
                            else:
                                self.offset = end
                                self.line = line_no
                                yield ReadEntry(entry, line_no, line_start, end)
                    line_start = end
                    i = nl + 1
                rest = len(chunk) - i
                if rest and not skipping:
                    if pending_len + rest > max_len:
                        skipping = True
                        pending.clear()
                        pending_len = 0
                    else:
                        pending.append(chunk[i:] if i else chunk)
                        pending_len += rest
                base += len(chunk)
            tail = b"".join(pending) if pending and not skipping else b""
            if self.settled and _is_json_object(tail):
                # A finished file's last entry without its newline (see the module docstring).
                line_no += 1
                mid_line = True
                parsed = self._parse_long(tail, line_no) if len(tail) > long_len else None
                if parsed is None and len(tail) <= long_len:
                    try:
                        parsed = parse(tail), 0
                    except Exception as exc:  # ValidationError, or anything else: a bad line
                        self._malformed(line_no, exc)
                if parsed is not None:
                    self.offset = base
                    self.line = line_no
                    yield ReadEntry(parsed[0], line_no, line_start, base, parsed[1])
                line_start = base
                line_no -= 1
            self.offset = line_start
            self.line = line_no + mid_line
            self.partial_bytes = base - line_start
            self.size = max(self.size, base)
        finally:
            file.close()


def iter_entries(
    path: str | os.PathLike[str],
    offset: int = 0,
    *,
    line: int | None = None,
    inode: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    chunk_size: int = CHUNK_SIZE,
    settle_seconds: float = SETTLE_SECONDS,
) -> EntryStream:
    """Stream the entries after ``offset`` without holding them all; see :class:`EntryStream`."""
    return EntryStream(
        path,
        offset,
        line=line,
        inode=inode,
        max_line_bytes=max_line_bytes,
        chunk_size=chunk_size,
        settle_seconds=settle_seconds,
    )


def read_from(
    path: str | os.PathLike[str],
    offset: int = 0,
    *,
    line: int | None = None,
    inode: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    chunk_size: int = CHUNK_SIZE,
    settle_seconds: float = SETTLE_SECONDS,
) -> ReadResult:
    """Read every complete entry after ``offset``.

    ``line`` is the number of lines before ``offset`` (as returned by the previous call); when None it
    is counted. An unterminated last line is consumed only when it is one complete JSON object and
    the file was last modified ``settle_seconds`` ago or more (see the module docstring). Pass the
    previous ``inode`` so a replaced file is detected. The result's ``offset``,
    ``line`` and ``inode`` are what the next call should pass back.
    """
    with EntryStream(
        path,
        offset,
        line=line,
        inode=inode,
        max_line_bytes=max_line_bytes,
        chunk_size=chunk_size,
        settle_seconds=settle_seconds,
    ) as stream:
        entries = list(stream)
    return ReadResult(
        path=stream.path,
        entries=entries,
        start_offset=stream.start_offset,
        offset=stream.offset,
        line=stream.line,
        inode=stream.inode,
        size=stream.size,
        malformed=stream.malformed,
        malformed_lines=stream.malformed_lines,
        oversized=stream.oversized,
        partial_bytes=stream.partial_bytes,
        restarted=stream.restarted,
    )


def _must_restart(
    file: BinaryIO, offset: int, size: int, inode: int | None, current_inode: int, mid_line: bool
) -> bool:
    """True when ``offset`` no longer points where the caller's previous read of this file stopped.

    Besides a new inode (the file was replaced) and an offset past the end (it was truncated), a
    byte before ``offset`` that is not a newline means the file was rewritten in place, unless the
    previous read stopped after a finished file's unterminated last entry (``mid_line``).
    """
    if inode is not None and inode != current_inode:
        return True
    if offset > size:
        return True
    if offset == 0:
        return False
    file.seek(offset - 1)
    return file.read(1) != b"\n" and not mid_line


def _after_unterminated_entry(file: BinaryIO, offset: int, max_line_bytes: int) -> bool:
    """True when ``offset`` ends a line without its newline that holds one complete JSON object.

    Only the settle rule of :class:`EntryStream` leaves such an offset behind, so resuming there means
    resuming inside the physical line whose entry was consumed. Anything else (an offset inside a
    line of a file rewritten in place) is not a complete object and makes the caller restart.
    """
    if offset == 0:
        return False
    file.seek(offset - 1)
    if file.read(1) != b"}":
        return False
    start = max(0, offset - max_line_bytes - 1)
    file.seek(start)
    before = file.read(offset - start)
    line_start = before.rfind(b"\n") + 1
    if line_start == 0 and start > 0:
        return False
    return _is_json_object(before[line_start:])


class _TooDeep(ValueError):
    """A line nested deeper than ``MAX_NESTING``: malformed, as the hot path's parser finds it."""

    def __init__(self) -> None:
        super().__init__(f"invalid JSON: nested deeper than {MAX_NESTING} levels")


def _cut_long_strings(value: object) -> int:
    """Cut, in place, every string in the JSON `value` longer than ``MAX_TEXT_CHARS``; the
    characters cut. Iterative: a deeply nested line must not exhaust the stack a second time.
    Raises `_TooDeep` for a value nested deeper than ``MAX_NESTING`` (see the module docstring)."""
    cut = 0
    todo: list[tuple[object, int]] = [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_NESTING:
            raise _TooDeep
        if isinstance(node, dict):
            items: Iterator[tuple[object, object]] = iter(node.items())
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, item in list(items):
            if isinstance(item, str):
                if len(item) > MAX_TEXT_CHARS:
                    # Redacted whole before the cut: a secret the cut would split (a private key's
                    # END line and body in the kept tail, a token kept without its `Bearer`) loses
                    # the context its rule needs, and would be stored as it was.
                    whole = redact(item)
                    kept = cut_text(whole)
                    cut += len(whole) - len(kept)
                    node[key] = kept  # type: ignore[index]
            elif isinstance(item, dict | list):
                todo.append((item, depth + 1))
    return cut


def cut_text(text: str, limit: int = MAX_TEXT_CHARS, tail: int = TEXT_TAIL_CHARS) -> str:
    """`text` cut to about `limit` characters: its head and its last `tail` around a marker that says
    how many were left out. Each cut moves to whitespace when there is some near it (see
    ``_CUT_SEARCH_CHARS``), so a token is never split. `text` itself when it fits."""
    if len(text) <= limit:
        return text
    tail = min(tail, limit // 2)
    head_end = _at_space(text, limit - tail - _MARKER_ROOM, backwards=True)
    tail_start = _at_space(text, len(text) - tail, backwards=False)
    left_out = tail_start - head_end
    return f"{text[:head_end]}\n…[{left_out} chars not stored]…\n{text[tail_start:]}"


# Room the marker takes, so the cut text stays within its limit.
_MARKER_ROOM = 48


def _at_space(text: str, index: int, *, backwards: bool) -> int:
    """`index` moved to just after (backwards) or at (forwards) the nearest whitespace within
    ``_CUT_SEARCH_CHARS``; `index` itself when there is none (a minified blob is cut where it is)."""
    if backwards:
        window = text[max(0, index - _CUT_SEARCH_CHARS) : index]
        found = max(window.rfind(c) for c in " \n\t")
        return index - len(window) + found + 1 if found >= 0 else index
    window = text[index : index + _CUT_SEARCH_CHARS]
    hits = [i for i in (window.find(c) for c in " \n\t") if i >= 0]
    return index + min(hits) if hits else index


def _is_json_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except Exception:  # ValueError, RecursionError (`[[[...`): not an object this reader can take
        return False


def _count_newlines(file: BinaryIO, offset: int, chunk_size: int) -> int:
    file.seek(0)
    count = 0
    remaining = offset
    while remaining > 0:
        chunk = file.read(min(chunk_size, remaining))
        if not chunk:
            break
        count += chunk.count(b"\n")
        remaining -= len(chunk)
    return count


def _reason(exc: Exception) -> str:
    """A short, single-line description of why a line was rejected (the first validation error)."""
    if not isinstance(exc, ValidationError):
        text = str(exc).splitlines()[0] if str(exc) else ""
        return (text or type(exc).__name__)[:_REASON_MAX_CHARS]
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    if not errors:
        return "invalid entry"
    first = errors[0]
    # Union branches show up in the location as "tagged-union[UserEntry,...]"; they are noise here.
    location = ".".join(str(part) for part in first["loc"] if not str(part).startswith("tagged-union["))
    reason = f"{location}: {first['msg']}" if location else first["msg"]
    return reason[:_REASON_MAX_CHARS]
