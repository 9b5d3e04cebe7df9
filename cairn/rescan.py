"""`cairn redact --rescan`: apply today's redaction rules to what older rules let through.

Redaction runs before anything is stored, so a rule added later (password flags, URL passwords
holding an `@`) protects new text only: the secrets stored before stay in the messages, their
passages, the ideas and topics the indexer wrote from them, the file chunks, the learning tables, the
git branch names and working directories of sessions and messages, the projects' paths and names and
every path `project_paths` records, the paths of file requests and search associations, and in the
FTS indexes and Chroma vectors (documents and metadata) derived from those. The rescan walks every
column that holds transcript-derived text or a path, re-redacts it, and writes back only what changed.

It writes nothing but those base rows. The FTS5 tables are external-content tables kept in step by
`AFTER UPDATE` triggers, and the vector outbox is filled by triggers on the same columns (migrations
1-9), so an updated row also leaves its old FTS terms and gets re-embedded; the job ends by draining
the outbox, so Chroma's documents no longer hold the secrets when it returns. (Entity aliases are the
one exception: their trigger fires on insert and delete only, so an alias change queues its entity
explicitly.)

Like `cairn forget`, it leaves no copy of an old value in the files on disk: its writes zero the cells
they free, the full-text indexes are merged and the WAL truncated at the end, and Chroma's log, free
pages and unused HNSW slots are scrubbed once the changed vectors are written (its log kept a vector's
old metadata, a project's path among it, for as long as it kept the write).

Rows are scanned in id order, `batch` at a time, each batch one write transaction. After each commit
the position (table, last id) is saved in `CAIRN_HOME/redact-rescan.json`; a killed or interrupted
rescan continues from there. Saving after the commit can only ever repeat a batch, and redaction is
idempotent, so a repeated batch changes nothing. The file also records a fingerprint of the rules: if
they changed since, the rescan starts over, since rows already passed may hold what the new rules
catch. A finished rescan removes the file, so the next one scans everything again.

Keys derived from the text follow it: a message's and an idea's `content_hash` (so a re-read of the
same transcript line is still recognised as stored), an association's `query_key`. Where the new
value collides with another row's unique key (two rows that differed only in the secret), the row
keeps its old hash, an entity gets its id appended, a duplicate alias or association is folded into
the one that exists, and so is a project into the project already at its redacted path (as capture
under today's rules would have filed both), a `project_paths` row into the one that exists.

A project's path is in the metadata of every vector of its sessions, files and associations, and no
trigger watches it: a project whose path changes queues them all (their embeddings are reused). An
indexed file whose own path held a secret is dropped with its chunks: today's file index never reads
such a file (`cairn.files.requests`), and its name is in its keywords. A project path that held a
secret names no directory any more; the file index refuses its files as `secret`
(`cairn.files.policy.redacted_dir`). Where each transcript is (`transcript_files.path`, and the
daemon's queue of them) is left as it is: capture reads the file there.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite

from cairn.config import Settings
from cairn.lifecycle.forget import FTS_TABLES, checkpoint, compact_chroma
from cairn.store import outbox
from cairn.store.projects import merge_project, requeue_vectors
from cairn.store.store import Store, idea_hash, message_hash
from cairn.transcripts.redact import redact

Emit = Callable[[dict[str, Any]], None]
ShouldStop = Callable[[], bool]

MARKER_NAME = "redact-rescan.json"
BATCH = 500


@dataclass(frozen=True)
class _Table:
    """One table's text columns: `text` are plain text, `json` are JSON whose strings are redacted."""

    name: str
    text: tuple[str, ...] = ()
    json: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    """Other columns the table's special handling reads (role and kind for a message's hash...)."""
    key: str = "id"
    """The integer column rows are walked and updated by (`rowid` where the id is text)."""

    @property
    def columns(self) -> tuple[str, ...]:
        return self.text + self.json


TABLES: tuple[_Table, ...] = (
    _Table("messages", text=("text", "git_branch", "cwd"), json=("tool_calls",), extra=("role", "kind")),
    _Table("message_passages", text=("text",), extra=("message_id",)),
    _Table("ideas", text=("content", "resolution")),
    _Table("topic_spans", text=("name", "summary")),
    _Table("entities", text=("canonical_name",)),
    _Table("entity_aliases", text=("alias",), extra=("entity_id",)),
    _Table("file_chunks", text=("content",), extra=("document_id",)),
    _Table("file_documents", text=("rel_path",)),
    _Table(
        "search_associations",
        text=("query", "reason", "file_path", "rel_path"),
        json=("grep_patterns",),
        extra=("query_key",),
    ),
    _Table("learning_sessions", text=("query", "error"), json=("reads", "greps")),
    _Table("index_runs", text=("error",), json=("rejected_items",)),
    _Table("file_requests", text=("path",)),
    _Table("sessions", text=("git_branch", "cwd"), key="rowid"),
    _Table("projects", text=("path", "name")),
)

#: `project_paths` has a text key (no rowid to walk by): its rows, one per cwd and Claude Code
#: directory, are rescanned after the tables above in one transaction.
PROJECT_PATHS = "project_paths"


@dataclass
class TableCount:
    scanned: int = 0
    changed: int = 0


@dataclass
class RescanReport:
    """What a rescan did: rows scanned and changed per table (this run only), vectors re-embedded."""

    tables: dict[str, TableCount] = field(default_factory=dict)
    resumed: bool = False
    finished: bool = False
    vectors_synced: int = 0
    vectors_error: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scanned"] = sum(count.scanned for count in self.tables.values())
        data["changed"] = sum(count.changed for count in self.tables.values())
        return data


def rules_fingerprint() -> str:
    """Identifies the redaction rules: the source of the modules that hold them."""
    digest = hashlib.sha256()
    for name in ("cairn.transcripts.redact", "cairn.transcripts.redact_linear"):
        module = importlib.import_module(name)  # (the package exports a function named `redact`)
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def _marker_path(settings: Settings) -> Path:
    return settings.home / MARKER_NAME


def _load_marker(settings: Settings, fingerprint: str) -> dict[str, int] | None:
    """Where an unfinished rescan under the same rules stopped: table -> last id done."""
    try:
        data = json.loads(_marker_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("rules") != fingerprint
        or not isinstance(data.get("done"), dict)
    ):
        return None
    return {str(k): int(v) for k, v in data["done"].items() if isinstance(v, int)}


def _save_marker(settings: Settings, fingerprint: str, done: dict[str, int]) -> None:
    """Written to a temporary file and renamed over the old one: a kill leaves the old or the new."""
    path = _marker_path(settings)
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"rules": fingerprint, "done": done}, handle)
    os.replace(temporary, path)


def _redact_json(raw: str) -> str:
    """Every string in a JSON document redacted (keys too: a dict keyed by a command is possible)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return redact(raw)
    return json.dumps(_walk(value), ensure_ascii=False)


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_walk(item) for item in value]
    if isinstance(value, dict):
        return {_walk(key): _walk(item) for key, item in value.items()}
    return value


def _changes(table: _Table, rows: list[sqlite3.Row]) -> list[tuple[sqlite3.Row, dict[str, str]]]:
    """The rows whose text the current rules change, each with its new column values."""
    found = []
    for row in rows:
        new: dict[str, str] = {}
        for column in table.text:
            old = row[column]
            if isinstance(old, str) and old:
                redacted = redact(old)
                if redacted != old:
                    new[column] = redacted
        for column in table.json:
            old = row[column]
            if isinstance(old, str) and old:
                redacted = _redact_json(old)
                if redacted != old and json.loads(redacted) != json.loads(old):
                    new[column] = redacted
        if new:
            found.append((row, new))
    return found


async def _update(
    conn: aiosqlite.Connection, table: str, row_id: int, values: dict[str, Any], key: str = "id"
) -> None:
    assignments = ", ".join(f"{column} = ?" for column in values)
    await conn.execute(f"UPDATE {table} SET {assignments} WHERE {key} = ?", (*values.values(), row_id))


async def _update_or(
    conn: aiosqlite.Connection,
    table: str,
    row_id: int,
    values: dict[str, Any],
    fallback: dict[str, Any] | None,
) -> bool:
    """Update; on a unique-key collision roll back to a savepoint and apply `fallback` (if any) instead.

    True when `values` went in as asked."""
    await conn.execute("SAVEPOINT rescan_row")
    try:
        await _update(conn, table, row_id, values)
    except sqlite3.IntegrityError:
        await conn.execute("ROLLBACK TO rescan_row")
        await conn.execute("RELEASE rescan_row")
        if fallback is not None:
            await _update(conn, table, row_id, fallback)
        return False
    await conn.execute("RELEASE rescan_row")
    return True


async def _apply(conn: aiosqlite.Connection, table: _Table, row: sqlite3.Row, new: dict[str, str]) -> None:
    """Write one row's redacted values, with the keys derived from them."""
    row_id = int(row["id"])
    name = table.name
    if name == "messages" and "text" in new:
        wanted = {**new, "content_hash": message_hash(row["role"], row["kind"], new["text"])}
        await _update_or(conn, name, row_id, wanted, new)
    elif name == "ideas" and "content" in new:
        await _update_or(conn, name, row_id, {**new, "content_hash": idea_hash(new["content"])}, new)
    elif name == "message_passages":
        await _shift_passages(conn, row, new["text"])
    elif name == "entities":
        renamed = f"{new['canonical_name']} #{row_id}"
        await _update_or(conn, name, row_id, new, {"canonical_name": renamed})
    elif name == "entity_aliases":
        if not await _update_or(conn, name, row_id, new, None):
            await conn.execute(
                "DELETE FROM entity_aliases WHERE id = ?", (row_id,)
            )  # the redacted one exists
        await outbox.enqueue(conn, "entities", [int(row["entity_id"])])  # no trigger sees an alias update
    elif name == "file_requests":
        # A request for the redacted path exists already: this one is its duplicate.
        if not await _update_or(conn, name, row_id, new, None):
            await conn.execute("DELETE FROM file_requests WHERE id = ?", (row_id,))
    elif name == "search_associations" and ("query" in new or "file_path" in new):
        wanted = dict(new)
        key = row["query_key"]
        if "query" in new:
            key = wanted["query_key"] = " ".join(new["query"].lower().split())  # associations.query_key
        if not await _update_or(conn, name, row_id, wanted, None):
            await conn.execute(
                """
                UPDATE search_associations SET hits = hits + ?, times_learned = times_learned + ?
                WHERE query_key = ? AND file_path = ?
                """,
                (row["hits"], row["times_learned"], key, new.get("file_path", row["file_path"])),
            )
            await conn.execute("DELETE FROM search_associations WHERE id = ?", (row_id,))
    elif name == "file_documents":
        # Today's index never reads a file whose path holds a secret; chunks and vectors go with it.
        await conn.execute("DELETE FROM file_documents WHERE id = ?", (row_id,))
    elif name == "projects" and "path" in new:
        await _move_project(conn, row_id, new)
    else:
        await _update(conn, name, row_id, new, table.key)


async def _move_project(conn: aiosqlite.Connection, project_id: int, new: dict[str, str]) -> None:
    """A project at its redacted path: folded into the project already there, else moved, and every
    vector naming its old path queued again."""
    async with conn.execute(
        "SELECT id FROM projects WHERE path = ? AND id != ?", (new["path"], project_id)
    ) as cursor:
        there = await cursor.fetchone()
    if there is not None:
        await merge_project(conn, project_id, int(there[0]))
        return
    await _update(conn, "projects", project_id, new)
    await requeue_vectors(conn, project_id)


async def _project_paths(conn: aiosqlite.Connection) -> TableCount:
    """Redact every `project_paths` row: its path (folded into the row already at the redacted path)
    and its checkout."""
    async with conn.execute("SELECT path, checkout FROM project_paths ORDER BY path") as cursor:
        rows = [(str(r[0]), r[1]) for r in await cursor.fetchall()]
    count = TableCount(scanned=len(rows))
    for path, checkout in rows:
        clean = redact(path)
        clean_checkout = redact(checkout) if isinstance(checkout, str) and checkout else checkout
        if clean == path and clean_checkout == checkout:
            continue
        count.changed += 1
        async with conn.execute("SELECT 1 FROM project_paths WHERE path = ?", (clean,)) as cursor:
            taken = clean != path and await cursor.fetchone() is not None
        if taken:
            await conn.execute("DELETE FROM project_paths WHERE path = ?", (path,))
        else:
            await conn.execute(
                "UPDATE project_paths SET path = ?, checkout = ? WHERE path = ?",
                (clean, clean_checkout, path),
            )
    return count


async def _shift_passages(conn: aiosqlite.Connection, row: sqlite3.Row, text: str) -> None:
    """A passage's new text, and its message's later passages moved by the change in length, so the
    character ranges still tile the message's (now redacted) whole text."""
    delta = len(text) - len(row["text"])
    await conn.execute(
        "UPDATE message_passages SET text = ?, char_end = char_start + ? WHERE id = ?",
        (text, len(text), row["id"]),
    )
    if delta:
        await conn.execute(
            """
            UPDATE message_passages SET char_start = char_start + ?, char_end = char_end + ?
            WHERE message_id = ? AND seq > (SELECT seq FROM message_passages WHERE id = ?)
            """,
            (delta, delta, row["message_id"], row["id"]),
        )


async def rescan(
    store: Store,
    settings: Settings,
    *,
    batch: int = BATCH,
    emit: Emit | None = None,
    should_stop: ShouldStop | None = None,
) -> RescanReport:
    """Re-redact every stored text column, resuming an unfinished rescan; see the module docstring."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    db = store.db
    fingerprint = rules_fingerprint()
    saved = _load_marker(settings, fingerprint)
    done: dict[str, int] = dict(saved or {})
    report = RescanReport(resumed=saved is not None)
    for table in TABLES:
        count = report.tables.setdefault(table.name, TableCount())
        after = done.get(table.name, 0)
        key = table.key
        total = int(await db.scalar(f"SELECT count(*) FROM {table.name} WHERE {key} > ?", (after,)) or 0)
        if emit:
            emit({"step": table.name, "completed": 0, "total": total})
        extra = {"search_associations": ("hits", "times_learned")}.get(table.name, ())
        select = ", ".join((f"{key} AS id", *table.columns, *table.extra, *extra))
        while True:
            if should_stop and should_stop():
                return report
            rows = await db.fetchall(
                f"SELECT {select} FROM {table.name} WHERE {key} > ? ORDER BY {key} LIMIT ?", (after, batch)
            )
            if not rows:
                break
            changed = await asyncio.to_thread(_changes, table, rows)
            if changed:
                async with db.write() as conn:
                    await conn.execute("PRAGMA secure_delete = ON")  # the old values' cells are zeroed
                    for row, new in changed:
                        await _apply(conn, table, row, new)
                    if table.name == "file_chunks":
                        await _refresh_keywords(conn, {int(row["document_id"]) for row, _new in changed})
            after = int(rows[-1]["id"])
            done[table.name] = after
            await asyncio.to_thread(_save_marker, settings, fingerprint, done)
            count.scanned += len(rows)
            count.changed += len(changed)
            if emit:
                emit({"step": table.name, "completed": count.scanned, "total": total})
    if PROJECT_PATHS not in done:
        if should_stop and should_stop():
            return report
        if emit:
            total = int(await db.scalar(f"SELECT count(*) FROM {PROJECT_PATHS}") or 0)
            emit({"step": PROJECT_PATHS, "completed": 0, "total": total})
        async with db.write() as conn:
            await conn.execute("PRAGMA secure_delete = ON")
            report.tables[PROJECT_PATHS] = await _project_paths(conn)
        done[PROJECT_PATHS] = 1
        await asyncio.to_thread(_save_marker, settings, fingerprint, done)
        if emit:
            scanned = report.tables[PROJECT_PATHS].scanned
            emit({"step": PROJECT_PATHS, "completed": scanned, "total": scanned})
    report.finished = True
    try:
        report.vectors_synced = await store.sync_vectors()
    except Exception as exc:  # Chroma unavailable: the outbox keeps the work for the next drain
        report.vectors_error = f"{type(exc).__name__}: {exc}"
    await _leave_no_copies(store, settings, vectors_done=report.vectors_error is None)
    _marker_path(settings).unlink(missing_ok=True)
    return report


#: Chroma's log (`embeddings_queue`) keeps every write's metadata until its vector segment catches up,
#: which for a small collection can be never. An add or upsert that a later add, upsert (cairn writes
#: whole metadata) or delete of the same id replaced can never be read again: its metadata — a project's
#: old path — is cleared.
_SUPERSEDED_METADATA = """
    UPDATE embeddings_queue SET metadata = NULL
    WHERE operation <> 3 AND metadata IS NOT NULL AND EXISTS (
        SELECT 1 FROM embeddings_queue AS later
        WHERE later.topic = embeddings_queue.topic AND later.id = embeddings_queue.id
          AND later.seq_id > embeddings_queue.seq_id AND later.operation IN (0, 2, 3))
"""


async def _leave_no_copies(store: Store, settings: Settings, *, vectors_done: bool) -> None:
    """Leave no copy of the old values in the files on disk, as `cairn forget` does: SQLite's freed
    cells zeroed (`secure_delete`, set for every batch), the full-text indexes merged into one segment
    (FTS5 keeps a replaced row's terms in old segments until a merge), the WAL truncated; then
    Chroma's log, free pages and unused HNSW slots (`cairn.lifecycle.forget.compact_chroma`), once
    every changed vector is written."""
    async with store.db.write() as conn:
        for table in FTS_TABLES:
            await conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    await checkpoint(store.db.conn)
    if settings.chroma_url is None and vectors_done and await outbox.pending(store.db) == 0:
        await asyncio.to_thread(_compact_chroma, settings.chroma_dir)


def _compact_chroma(chroma_dir: Path) -> None:
    path = chroma_dir / "chroma.sqlite3"
    if not path.is_file():
        return
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "embeddings_queue" in tables:
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute(_SUPERSEDED_METADATA)
    finally:
        conn.close()
    compact_chroma(chroma_dir)


async def _refresh_keywords(conn: aiosqlite.Connection, documents: set[int]) -> None:
    """Drop the keywords of `documents` that their (redacted) chunks no longer contain: a keyword is a
    word of the file, so one that vanished with redaction was part of a secret."""
    for document_id in sorted(documents):
        async with conn.execute(
            """
            SELECT d.rel_path, d.keywords, group_concat(c.content, char(10)) AS text
            FROM file_documents AS d JOIN file_chunks AS c ON c.document_id = d.id
            WHERE d.id = ? GROUP BY d.id
            """,
            (document_id,),
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            continue
        try:
            keywords = json.loads(row[1])
        except ValueError:
            continue
        if not isinstance(keywords, list):
            continue
        haystack = f"{row[0]}\n{row[2] or ''}".lower()
        kept = [word for word in keywords if isinstance(word, str) and word.lower() in haystack]
        if kept != keywords:
            await conn.execute(
                "UPDATE file_documents SET keywords = ? WHERE id = ?", (json.dumps(kept), document_id)
            )


async def redact_rescan_job(
    store: Store,
    settings: Settings,
    *,
    batch: int = BATCH,
    emit: Emit | None = None,
    should_stop: ShouldStop | None = None,
) -> dict[str, Any]:
    """The long op behind `cairn redact --rescan`, run by the daemon or directly (see `cairn.daemon.jobs`)."""
    report = await rescan(store, settings, batch=batch, emit=emit, should_stop=should_stop)
    return report.as_json()
