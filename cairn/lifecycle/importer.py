"""`cairn import`: read an export (`cairn.lifecycle.export`) into a store, merging by natural keys.

Each record's row is matched to the row the store already has with the same natural key
(`cairn.lifecycle.tables`); only rows it lacks are inserted, with their references rewritten to the
target store's ids. Importing the same file twice therefore changes nothing, and importing into a
store that already holds some of it adds only the rest. Everything is written in one transaction, so
a bad file or a crash leaves the store as it was; a line that is not a valid record is counted and
skipped, never fatal: one that is not JSON, nests too deep, holds an integer SQLite cannot store, or is
longer than `MAX_LINE_CHARS` (read no further than that). The vector triggers queue every inserted row
in the outbox in that transaction, and the vectors are computed after the commit (`Store.sync_vectors`),
not copied.

The person's corrections of ideas (`idea_corrections`) come before the ideas, so an idea the target
store or the export says the person forgot as wrong (`cairn.store.corrections`) is not inserted
(`forgotten_skipped`), nor the rows that hang on it; the other corrections are applied to the ideas
as they go in by the store's trigger, as everywhere. A correction is held back until the messages are
in, since it must name a line whose message the file brought, and it goes in `hash_only`: it applies
to the words it names, never to another idea a later capture of that line might make.

An import adds; it never changes what the store held (`cairn.lifecycle.import_rules`): a row that
would hang on a project, session, transcript or idea that was there before, name a row the file did
not bring, or hold a time that is not one is refused, counted with its line and reason (`refused`).
The transcript rows it adds get cursors that cover only the messages it brought
(`cairn.lifecycle.import_cursors`), so `sync` still reads whatever else the transcript holds.

An export is outside input like a transcript (an old cairn's, or a crafted one), so every text value
passes through the same redaction capture applies before it is stored (`cairn.transcripts.redact`);
a file that is not a regular file (a FIFO would block the daemon's event loop) is refused unread.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

import aiosqlite

from cairn.errors import Refusal
from cairn.lifecycle import import_cursors
from cairn.lifecycle.import_rules import Ownership, Refused, check_values, holds_nothing
from cairn.lifecycle.tables import BY_NAME, FORMAT, FORMAT_VERSION, STATE_FORMAT_VERSION, Table
from cairn.store.corrections import forgotten_at
from cairn.store.db import Database
from cairn.store.legacy_states import with_state
from cairn.store.origins import fill_origins
from cairn.transcripts.redact import redact_with_count

#: The longest line an import reads: far above any row cairn exports (a message's text is at most 256 K
#: characters), far below what would exhaust memory. A longer line is counted and skipped unread.
MAX_LINE_CHARS = 16 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


class ImportFormatError(Refusal):
    """The file is not a cairn export this cairn can read (no header, unknown format, newer version)."""


@dataclass
class ImportReport:
    """What an import did: rows added and already present, per table, and the lines it skipped."""

    added: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    bad_lines: int = 0
    bad_examples: list[str] = field(default_factory=list)
    vectors: int = 0  #: vectors the index gained (not the rows queued: many rows get none)
    vectors_queued: int = 0  #: vector changes still waiting in the outbox after the import
    redacted: int = 0
    forgotten_skipped: int = 0  #: ideas left out: the person forgot an idea there as wrong
    refused: dict[str, int] = field(default_factory=dict)  #: valid records refused, per table
    refused_examples: list[str] = field(default_factory=list)

    def bad(self, number: int, why: str) -> None:
        self.bad_lines += 1
        if len(self.bad_examples) < 5:
            self.bad_examples.append(f"line {number}: {why}")

    def refuse(self, number: int, table: str, why: str) -> None:
        self.refused[table] = self.refused.get(table, 0) + 1
        if len(self.refused_examples) < 5:
            self.refused_examples.append(f"line {number}: {table} row refused: {why}")

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "already_present": self.present,
            "total_added": sum(self.added.values()),
            "bad_lines": self.bad_lines,
            "bad_examples": self.bad_examples,
            "vectors_written": self.vectors,
            "vectors_queued": self.vectors_queued,
            "secrets_redacted": self.redacted,
            "forgotten_skipped": self.forgotten_skipped,
            "refused": self.refused,
            "total_refused": sum(self.refused.values()),
            "refused_examples": self.refused_examples,
        }


def open_export(path: str) -> TextIO:
    """`path` opened for reading as text, if it is a regular file; else `ImportFormatError`. Opened
    without blocking first, so a FIFO or a device is refused rather than waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ImportFormatError(f"{path} is not a regular file: give an export file, or - for stdin")
        os.set_blocking(fd, True)
        return os.fdopen(fd, encoding="utf-8", errors="replace")
    except BaseException:
        os.close(fd)
        raise


def bounded_lines(handle: TextIO, limit: int = MAX_LINE_CHARS) -> Iterator[str | None]:
    """The lines of `handle`, none read past `limit` characters: a longer line is read on to its end in
    chunks, kept nowhere, and yielded as None."""
    while line := handle.readline(limit + 1):
        if len(line) <= limit or line.endswith("\n"):
            yield line
            continue
        while (rest := handle.readline(_SKIP_CHUNK)) and not rest.endswith("\n"):
            pass
        yield None


def check_header(line: str | None) -> dict[str, Any]:
    """The parsed header line, or `ImportFormatError` saying why this file cannot be imported."""
    try:  # a byte order mark (an editor's save as "UTF-8 with BOM") is no part of the header
        head = json.loads((line or "").removeprefix("\ufeff"))
    except (json.JSONDecodeError, RecursionError):
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ImportFormatError("not a cairn export: the first line is not a cairn-export header")
    version = head.get("version")
    # JSON's true is Python's 1 to isinstance(…, int): a version is a whole number, never a boolean.
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ImportFormatError(
            f"not a cairn export: its header's version {json.dumps(version)[:40]} is not a format version "
            "(a whole number from 1); give a file `cairn export` wrote"
        )
    if version > FORMAT_VERSION:
        raise ImportFormatError(
            f"this export is format version {version!r} (written by cairn {head.get('cairn')}); this cairn "
            f"reads versions 1 to {FORMAT_VERSION}: upgrade cairn to import it"
        )
    return head


#: Tables whose rows a correction's check needs in first: a correction names a line of a message.
_BEFORE_CORRECTIONS = frozenset(
    {
        "projects",
        "sessions",
        "transcript_files",
        "idea_corrections",
        "messages",
        "message_passages",
        "topic_spans",
    }
)


class _Importer:
    def __init__(self, conn: aiosqlite.Connection, report: ImportReport, *, states_in_text: bool) -> None:
        self.conn = conn
        self.report = report
        # An older export keeps deferred/given-up in the ideas' words: read as migration 13 reads them.
        self.states_in_text = states_in_text
        self.now = datetime.now(UTC)
        self.owned = Ownership()
        self.columns: dict[str, set[str]] = {}
        self.late: list[tuple[str, Any, str, str, Any]] = []
        # Exported ids of the ideas left out as forgotten: rows that reference one are left out too.
        self.dropped: set[Any] = set()
        self.claims: dict[int, import_cursors.FileClaim] = {}
        self.held: list[tuple[int, dict[str, Any]]] = []  # corrections waiting for their messages

    async def table_columns(self, name: str) -> set[str]:
        if name not in self.columns:
            async with self.conn.execute(f"PRAGMA table_info({name})") as cursor:
                self.columns[name] = {str(row[1]) for row in await cursor.fetchall()}
        return self.columns[name]

    def redacted(self, row: dict[str, Any]) -> dict[str, Any]:
        """`row` with every text value redacted as capture redacts what it stores."""
        clean = {}
        for column, value in row.items():
            if isinstance(value, str):
                value, count = redact_with_count(value)
                self.report.redacted += count
            clean[column] = value
        return clean

    async def record(self, number: int, table: Table, row: dict[str, Any]) -> None:
        """Import one record, or count it: a bad line, or a refused row."""
        if table.name == "idea_corrections":
            self.held.append((number, row))
            return
        if table.name not in _BEFORE_CORRECTIONS:
            await self.release()
        await self._guarded(number, table, row)

    async def release(self) -> None:
        """Import the corrections held back, now that the messages they name are in."""
        held, self.held = self.held, []
        for number, row in held:
            await self._guarded(number, BY_NAME["idea_corrections"], row)

    async def _guarded(self, number: int, table: Table, row: dict[str, Any]) -> None:
        try:
            await self.add(table, row)
        except Refused as exc:
            self.report.refuse(number, table.name, str(exc))
        except (ValueError, sqlite3.Error, OverflowError) as exc:
            self.report.bad(number, str(exc)[:200])
        except RecursionError:
            self.report.bad(number, "nested too deep")

    async def add(self, table: Table, row: dict[str, Any]) -> None:
        known = await self.table_columns(table.name)
        if not set(row) <= known or not set(table.key_columns) <= set(row):
            raise ValueError(f"columns do not match table {table.name}")
        check_values(row, self.now)
        row = self.redacted(row)
        if table.name == "ideas" and self.states_in_text:
            row = with_state(row)
        source_id = row.get("id")
        values = {k: v for k, v in row.items() if k != "id" or "id" in table.key_columns}
        if any(target == "ideas" and values.get(c) in self.dropped for c, target in table.refs.items()):
            return
        for column, target in table.refs.items():
            if values.get(column) is not None:
                values[column] = self.owned.resolve(table.name, column, target, values[column])
        late = {c: values.pop(c) for c in table.late_refs if values.get(c) is not None}
        key = [values.get(c) for c in table.key_columns]
        conditions = " AND ".join(table.key)
        select = "id" if table.has_id else "1"
        async with self.conn.execute(f"SELECT {select} FROM {table.name} WHERE {conditions}", key) as cursor:
            found = await cursor.fetchone()
        if found is not None:
            local = found[0]
            self.report.present[table.name] = self.report.present.get(table.name, 0) + 1
            if table.name == "transcript_files" and await holds_nothing(self.conn, local):
                self.owned.open_files.add(local)
            if table.has_id:
                self.owned.note(table.name, source_id, local, inserted=False)
            return
        if table.name == "ideas" and await forgotten_at(
            self.conn,
            values.get("source_file_id"),
            values.get("source_line"),
            str(values.get("content_hash")),
            str(values.get("intent")),
        ):
            self.dropped.add(source_id)
            self.report.forgotten_skipped += 1
            return
        self.owned.check_new(table.name, values, table.refs)
        if table.name == "idea_corrections":
            await self._check_line(values)
            values["hash_only"] = 1
        names = list(values)
        cursor = await self.conn.execute(
            f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [values[n] for n in names],
        )
        local = values.get("id", cursor.lastrowid)
        await cursor.close()
        self.report.added[table.name] = self.report.added.get(table.name, 0) + 1
        for column, value in late.items():
            self.late.append((table.name, local, column, table.late_refs[column], value))
        self.owned.note(table.name, source_id if table.has_id else None, local, inserted=True)
        if table.name == "transcript_files":
            self.claims[int(local)] = import_cursors.FileClaim(
                row.get("indexed_line"), row.get("generation_start_id")
            )
        elif table.name == "messages" and (claim := self.claims.get(int(values["file_id"]))) is not None:
            claim.messages.append((source_id, int(local)))

    async def _check_line(self, values: dict[str, Any]) -> None:
        """Refuse a correction of a line the file brought no message at: it would wait there for
        whatever a later capture of the transcript finds."""
        async with self.conn.execute(
            "SELECT 1 FROM messages WHERE file_id = ? AND line <= ? AND end_line >= ? LIMIT 1",
            (values.get("source_file_id"), values.get("source_line"), values.get("source_line")),
        ) as cursor:
            if await cursor.fetchone() is None:
                raise Refused(f"line {values.get('source_line')} has no message the file brought")

    async def finish(self) -> None:
        """Set the self references (an idea answered by a later idea) now that every row has its id, to
        rows this import added only; then the added transcripts' cursors."""
        await self.release()
        for name, local, column, target, source in self.late:
            mapped = self.owned.mapped.get(target, {}).get(source)
            if mapped is not None and self.owned.was_added(target, mapped):
                await self.conn.execute(f"UPDATE {name} SET {column} = ? WHERE id = ?", (mapped, local))
        await import_cursors.settle(self.conn, self.claims)
        # An export written before messages had an origin brings them without one.
        await fill_origins(self.conn)


async def import_lines(db: Database, lines: Iterable[str | None]) -> ImportReport:
    """Import an export's lines (the first must be the header; None stands for a line too long to read,
    as `bounded_lines` gives them) in one transaction."""
    iterator = iter(lines)
    head = check_header(next(iterator, ""))
    report = ImportReport()
    async with db.write() as conn:
        importer = _Importer(conn, report, states_in_text=head["version"] < STATE_FORMAT_VERSION)
        for number, line in enumerate(iterator, start=2):
            if line is None:
                report.bad(number, f"longer than {MAX_LINE_CHARS:,} characters")
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:  # JSONDecodeError is a ValueError
                report.bad(number, str(exc)[:200])
                continue
            except RecursionError:
                report.bad(number, "nested too deep")
                continue
            table = BY_NAME.get(record.get("type")) if isinstance(record, dict) else None
            row = record.get("row") if table is not None else None
            if table is None or not isinstance(row, dict):
                report.bad(number, "not an export record")
                continue
            await importer.record(number, table, row)
        await importer.finish()
    return report
