"""Finding Claude Code session transcripts on disk, and telling them apart from other JSONL files.

Claude Code keeps one file per session under `~/.claude/projects/<project>/<session>.jsonl` and the
transcripts of a session's subagents under `<project>/<session>/subagents/agent-*.jsonl`. Other JSONL
files can sit beside them (hook logs, exports): cairn must not index those, so a file counts as a
transcript only when its first lines look like Claude Code entries.

A line that cannot be parsed is never an error here, whatever the parser raises (a line of 2,000 `[`
raises RecursionError, not ValueError): one bad line among a file's first ones must not stop
discovery of that file or of every other one.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

_SNIFF_BYTES = 64 * 1024
_SNIFF_LINES = 5


def is_transcript(path: Path) -> bool:
    """True when one of the file's first lines parses as a Claude Code entry.

    An empty file (a session that has just started) counts: it will fill in.
    """
    return not_a_transcript(path) is None


def not_a_transcript(path: Path) -> str | None:
    """Why the file at `path` is not a transcript cairn can read, in a few words; None when it is one.

    The reason is what `cairn sync` prints for a path it skips, so a person can tell a typo from a
    permission problem from a file that is simply something else.
    """
    try:
        # Non-blocking: a FIFO named by mistake must not hang the sniff.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "it does not exist (a broken symlink?)" if path.is_symlink() else "it does not exist"
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "it is not a regular file"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if not head.strip():
        return None
    # Imported here: the entry models take a while to build, and `is_subagent_file` (opening the
    # store) needs none of them.
    from cairn.transcripts.entries import KNOWN_ENTRY_TYPES

    lines = head.split(b"\n")
    if len(lines) == 1 and len(head) == _SNIFF_BYTES:
        # One line longer than the sniff window: judge it by the type tag Claude Code writes in it.
        if any(f'"type":"{t}"'.encode() in head for t in KNOWN_ENTRY_TYPES):
            return None
        if b"\x00" in head or not _utf8_prefix(head):
            return "it holds binary data, not JSON lines"
        return "its first line is not a Claude Code entry"
    parsed = 0
    for raw in lines[:_SNIFF_LINES]:
        try:
            value = json.loads(raw)
        except Exception:  # not JSON, whatever it raises: `[` * 2000 raises RecursionError
            continue
        parsed += 1
        if isinstance(value, dict) and value.get("type") in KNOWN_ENTRY_TYPES:
            return None
    # Judged only now: a transcript with a garbage line among its first ones is still a transcript.
    if b"\x00" in head or not _utf8_prefix(head):
        return "it holds binary data, not JSON lines"
    if not parsed:
        return f"none of its first {_SNIFF_LINES} lines is JSON"
    return f"none of its first {_SNIFF_LINES} lines is a Claude Code entry (some other JSONL file)"


def _utf8_prefix(head: bytes) -> bool:
    """True when `head` is UTF-8, allowing a character cut off by the sniff window at its end."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def is_subagent_file(path: Path) -> bool:
    return path.parent.name == "subagents" and path.name.startswith("agent-")


def is_compaction_file(path: Path) -> bool:
    """A compaction subagent's transcript (`subagents/agent-acompact-*.jsonl`): the instructions to
    summarise the session and the summary, a retelling rather than conversation (see
    :func:`cairn.transcripts.normalise.is_context`)."""
    return is_subagent_file(path) and path.name.startswith("agent-acompact")


def session_id_for(path: Path) -> str:
    """The session a transcript file belongs to, from Claude Code's file layout.

    `<session>.jsonl` → `<session>`; `<session>/subagents/agent-*.jsonl` → the parent `<session>`, so a
    subagent's work is indexed as part of the session that started it.
    """
    if is_subagent_file(path):
        return path.parent.parent.name
    return path.stem


@dataclass(frozen=True)
class Skipped:
    """A path `scan_transcripts` passed over, and why, in words a person can act on."""

    path: Path
    reason: str


@dataclass
class TranscriptScan:
    """What a set of roots holds: the transcripts to read and every path left out, with its reason."""

    files: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def scan_transcripts(roots: Iterable[Path]) -> TranscriptScan:
    """Every transcript file under the given files or directories, sorted, each once, and what was skipped.

    A directory contributes its `*.jsonl` files, recursively; one without any is itself skipped, so a
    wrong directory is not silently "0 files". Each non-transcript file named or found is skipped with
    the reason `not_a_transcript` gives.
    """
    scan = TranscriptScan()
    seen: set[Path] = set()
    for root in roots:
        root = root.expanduser()
        if root.is_dir():
            try:
                next(os.scandir(root), None)
            except OSError as exc:
                scan.skipped.append(Skipped(root, f"the directory cannot be read: {exc.strerror or exc}"))
                continue
            candidates = sorted(root.rglob("*.jsonl"))
            if not candidates:
                scan.skipped.append(Skipped(root, "the directory holds no .jsonl files"))
        else:
            candidates = [root]
        for path in candidates:
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            reason = "it is a directory" if path.is_dir() else not_a_transcript(path)
            if reason is None:
                scan.files.append(resolved)
            else:
                scan.skipped.append(Skipped(path, reason))
    return scan


def find_transcripts(roots: Iterable[Path]) -> Iterator[Path]:
    """Every transcript file under the given files or directories, sorted, each once."""
    yield from scan_transcripts(roots).files
