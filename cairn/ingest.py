"""Bringing the store up to date with transcript files: read each file's new bytes, normalise, store.

This is the capture half of cairn's pipeline. Each file is read from the byte offset the store holds
for it, and its messages are written in the same transaction that advances that offset, so running it
twice — or after a crash at any point — stores every message exactly once. What the agent's tool calls
imply (files to index, searches to learn from; `cairn.derive`) is written in that transaction too, and
the files it queued are indexed right after. The daemon drives this continuously; `cairn sync` runs it
once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import aiosqlite

from cairn.config import Settings
from cairn.derive import Derived, derive, unmatched_outputs, wanted
from cairn.files.index import DrainReport, drain_requests
from cairn.store.store import Store
from cairn.transcripts import NormaliseOptions, Normaliser, read_from
from cairn.transcripts.reader import SETTLE_SECONDS
from cairn.transcripts.tool_events import tool_events

ProgressCallback = Callable[[Path], None]


@dataclass
class FileSync:
    """What one file contributed to a sync run."""

    path: str
    entries: int = 0
    messages_added: int = 0
    duplicates: int = 0
    malformed: int = 0
    oversized: int = 0
    """Lines longer than `max_line_bytes`, skipped unread."""
    messages_cut: int = 0
    """Messages stored cut to `MAX_TEXT_CHARS` (their text says how much was left out)."""
    chars_cut: int = 0
    noise_messages: int = 0
    """Messages stored as noise (commands, meta lines, hook feedback, compaction instructions): kept
    for the record, never sent to the indexer or shown by search."""
    boilerplate_removed: int = 0
    """``<system-reminder>`` and hook-output blocks cut out of messages before they were stored."""
    context_messages: int = 0
    """Compact summaries and compaction-subagent messages: the indexer's context, never its source."""
    partial_bytes: int = 0
    restarted: bool = False
    files_requested: int = 0
    files_indexed: int = 0
    derive_error: str | None = None
    error: str | None = None


@dataclass
class SyncReport:
    files: list[FileSync] = field(default_factory=list)
    vectors_synced: int = 0

    @property
    def messages_added(self) -> int:
        return sum(f.messages_added for f in self.files)

    @property
    def malformed(self) -> int:
        return sum(f.malformed for f in self.files)

    @property
    def oversized(self) -> int:
        return sum(f.oversized for f in self.files)

    @property
    def messages_cut(self) -> int:
        return sum(f.messages_cut for f in self.files)

    @property
    def errors(self) -> list[FileSync]:
        return [f for f in self.files if f.error]


def normalise_options(settings: Settings) -> NormaliseOptions:
    return NormaliseOptions(
        tool_result_head_chars=settings.tool_result_head_chars,
        tool_result_tail_chars=settings.tool_result_tail_chars,
        tool_input_max_chars=settings.tool_input_max_chars,
        include_thinking=settings.include_thinking,
    )


async def sync_file(
    store: Store, path: Path, settings: Settings, *, settle_seconds: float = SETTLE_SECONDS
) -> FileSync:
    """Read `path` from its stored offset and store what is new. Errors are reported, not raised.

    An unterminated last line is taken once the file has been still for `settle_seconds`
    (`cairn.transcripts.reader`); an eval reading finished files passes 0, else a fresh checkout's
    mtime would decide whether a fixture's last message is stored.
    """
    report = FileSync(path=str(path))
    try:
        cursor = await store.file_cursor(path)
        result = await asyncio.to_thread(
            read_from,
            path,
            cursor.offset if cursor else 0,
            line=cursor.line if cursor else 0,
            inode=cursor.inode if cursor else None,
            max_line_bytes=settings.max_line_bytes,
            settle_seconds=settle_seconds,
        )
        normaliser = Normaliser(normalise_options(settings))
        if unresolved := normaliser.unresolved_tool_ids(result.entries):
            normaliser.remember(await store.tool_calls(path, unresolved))
        messages = normaliser.normalise(result.entries)
        events = list(tool_events(result.entries)) if wanted(settings) else []
        derived = Derived()

        async def also(conn: aiosqlite.Connection, file_id: int) -> None:
            nonlocal derived
            names = {i: known[0] for i in unmatched_outputs(events) if (known := normaliser.tool_for(i))}
            derived = await derive(conn, file_id, events, settings, names)

        stored = await store.ingest(path, result, messages, also=also if events else None)
        drained = await drain_requests(store.db, settings) if settings.files_index else DrainReport()
    except OSError as exc:
        report.error = f"{type(exc).__name__}: {exc}"
        return report
    report.files_requested = derived.files_requested
    report.files_indexed = drained.indexed
    report.derive_error = derived.error
    report.entries = len(result.entries)
    report.messages_added = stored.messages_added
    report.duplicates = stored.messages_skipped_duplicate
    report.malformed = result.malformed
    report.oversized = result.oversized
    report.messages_cut = sum(1 for m in messages if m.chars_cut)
    report.chars_cut = sum(m.chars_cut for m in messages)
    report.noise_messages = sum(1 for m in messages if m.is_noise)
    report.boilerplate_removed = sum(m.boilerplate_removed for m in messages)
    report.context_messages = sum(1 for m in messages if m.is_context and not m.is_noise)
    report.partial_bytes = result.partial_bytes
    report.restarted = result.restarted
    return report


async def sync_paths(
    store: Store,
    paths: Iterable[Path],
    settings: Settings,
    *,
    vectors: bool = True,
    on_file: ProgressCallback | None = None,
    settle_seconds: float = SETTLE_SECONDS,
) -> SyncReport:
    """Sync every file in `paths`, then (unless `vectors` is False) embed what the outbox holds.
    `settle_seconds` as for `sync_file`."""
    report = SyncReport()
    for path in paths:
        report.files.append(await sync_file(store, path, settings, settle_seconds=settle_seconds))
        if on_file:
            on_file(path)
    if vectors:
        report.vectors_synced = await store.sync_vectors()
    return report
