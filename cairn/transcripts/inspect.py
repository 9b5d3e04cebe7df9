"""What is in a set of transcript files: the data behind ``cairn inspect``.

Files are streamed (entries are counted and normalised as they are read, never all held at once),
so inspecting a multi-gigabyte session is bounded in memory. The report is a pydantic model so the
CLI can print it with rich or dump it with ``--json``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from cairn.transcripts.entries import AssistantEntry, BaseEntry, ToolUseBlock, UnknownEntry
from cairn.transcripts.normalise import Normaliser
from cairn.transcripts.reader import MAX_LINE_BYTES, ReadEntry, iter_entries

__all__ = ["FileReport", "InspectReport", "SessionReport", "Totals", "inspect_files"]


class SessionReport(BaseModel):
    """One session id as seen in the inspected files; cwd and branch are the first non-empty values."""

    session_id: str
    cwd: str | None = None
    git_branch: str | None = None
    entries: int = 0
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None

    def merge(self, other: SessionReport) -> None:
        self.cwd = self.cwd or other.cwd
        self.git_branch = self.git_branch or other.git_branch
        self.entries += other.entries
        self.first_timestamp = _earliest(self.first_timestamp, other.first_timestamp)
        self.last_timestamp = _latest(self.last_timestamp, other.last_timestamp)


class Totals(BaseModel):
    """Counts over one file or, in ``InspectReport.total``, over all of them (sessions merged by id)."""

    entries: int = 0
    lines: int = 0
    bytes: int = 0
    entries_by_type: dict[str, int] = Field(default_factory=dict)
    messages_by_role: dict[str, int] = Field(default_factory=dict)
    noise_messages: int = 0
    tool_calls_by_name: dict[str, int] = Field(default_factory=dict)
    malformed_lines: int = 0
    oversized_lines: int = 0
    partial_bytes: int = 0
    """Bytes of a half-written last line, left unread."""
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    sessions: list[SessionReport] = Field(default_factory=list)


class FileReport(Totals):
    """Counts for one file. ``messages_by_role`` counts normalised messages (what would be indexed)."""

    path: str
    malformed_samples: list[tuple[int, str]] = Field(default_factory=list)
    """(line, reason) of the first malformed lines, bounded like ``ReadResult.malformed_lines``."""


class InspectReport(BaseModel):
    files: list[FileReport]
    total: Totals


def inspect_files(
    paths: Iterable[str | os.PathLike[str]], *, max_line_bytes: int = MAX_LINE_BYTES
) -> InspectReport:
    """Read every file whole and report what it holds. A missing file raises ``TranscriptNotFound``."""
    files = [_inspect_file(Path(path), max_line_bytes) for path in paths]
    return InspectReport(files=files, total=_total(files))


def _inspect_file(path: Path, max_line_bytes: int) -> FileReport:
    entries_by_type: Counter[str] = Counter()
    tool_calls: Counter[str] = Counter()
    sessions: dict[str, SessionReport] = {}
    first: datetime | None = None
    last: datetime | None = None
    count = 0

    def observed(stream: Iterable[ReadEntry]) -> Iterator[ReadEntry]:
        # Counts entries on their way into the normaliser, so the file is read once.
        nonlocal first, last, count
        for read in stream:
            count += 1
            entry = read.entry
            entries_by_type[_type_name(entry)] += 1
            if isinstance(entry, AssistantEntry) and not isinstance(entry.message.content, str):
                for block in entry.message.content:
                    if isinstance(block, ToolUseBlock):
                        tool_calls[block.name] += 1
            if isinstance(entry, BaseEntry):
                stamp = entry.timestamp
                first, last = _earliest(first, stamp), _latest(last, stamp)
                if entry.session_id:
                    _observe_session(sessions, entry)
            yield read

    roles: Counter[str] = Counter()
    noise = 0
    with iter_entries(path, max_line_bytes=max_line_bytes) as stream:
        for message in Normaliser().iter_messages(observed(stream)):
            roles[message.role] += 1
            noise += message.is_noise
    return FileReport(
        path=str(path),
        entries=count,
        lines=stream.line,
        bytes=stream.size,
        entries_by_type=dict(entries_by_type),
        messages_by_role=dict(roles),
        noise_messages=noise,
        tool_calls_by_name=dict(tool_calls),
        malformed_lines=stream.malformed,
        malformed_samples=stream.malformed_lines,
        oversized_lines=stream.oversized,
        partial_bytes=stream.partial_bytes,
        first_timestamp=first,
        last_timestamp=last,
        sessions=list(sessions.values()),
    )


def _total(files: list[FileReport]) -> Totals:
    total = Totals()
    sessions: dict[str, SessionReport] = {}
    by_type: Counter[str] = Counter()
    by_role: Counter[str] = Counter()
    by_tool: Counter[str] = Counter()
    for report in files:
        for name in (
            "entries",
            "lines",
            "bytes",
            "noise_messages",
            "malformed_lines",
            "oversized_lines",
            "partial_bytes",
        ):
            setattr(total, name, getattr(total, name) + getattr(report, name))
        by_type.update(report.entries_by_type)
        by_role.update(report.messages_by_role)
        by_tool.update(report.tool_calls_by_name)
        total.first_timestamp = _earliest(total.first_timestamp, report.first_timestamp)
        total.last_timestamp = _latest(total.last_timestamp, report.last_timestamp)
        for session in report.sessions:
            if session.session_id in sessions:
                sessions[session.session_id].merge(session)
            else:
                sessions[session.session_id] = session.model_copy()
    total.entries_by_type = dict(by_type)
    total.messages_by_role = dict(by_role)
    total.tool_calls_by_name = dict(by_tool)
    total.sessions = list(sessions.values())
    return total


def _observe_session(sessions: dict[str, SessionReport], entry: BaseEntry) -> None:
    assert entry.session_id is not None
    session = sessions.get(entry.session_id)
    if session is None:
        session = sessions[entry.session_id] = SessionReport(session_id=entry.session_id)
    session.entries += 1
    session.cwd = session.cwd or entry.cwd or None
    session.git_branch = session.git_branch or entry.git_branch or None
    session.first_timestamp = _earliest(session.first_timestamp, entry.timestamp)
    session.last_timestamp = _latest(session.last_timestamp, entry.timestamp)


def _type_name(entry: object) -> str:
    if isinstance(entry, UnknownEntry):
        return entry.type if isinstance(entry.type, str) else "<none>"
    return str(getattr(entry, "type", "<none>"))


def _aware(stamp: datetime) -> datetime:
    """Claude Code writes UTC (``...Z``); a timestamp without a zone is taken as UTC so it compares."""
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return min(_aware(a), _aware(b))


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return max(_aware(a), _aware(b))
