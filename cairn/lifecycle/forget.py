"""Forgetting a project, sessions or ideas: every row, full-text entry and vector that holds them.

The rows go in one SQLite transaction; the vector triggers queue a delete for each item with a vector
in the outbox in that same transaction (invariant 1), and the outbox is drained right after. A process
killed after the commit leaves the deletions queued: the next vector sync (the daemon's loop, any
`sync`/`index`, or `cairn forget` again) finishes them, so nothing stays half-forgotten.

"Nothing left" is meant literally: the transaction runs with `PRAGMA secure_delete` (freed pages and
deleted cells are zeroed), merges each full-text index into one segment (FTS5 otherwise keeps deleted
terms in old segments until a merge), and the WAL is checkpointed and truncated after the commit.
Chroma's own SQLite file gets the same treatment once its deletions are applied (`compact_chroma`).

The transcript files' cursor rows are kept: the transcripts themselves are Claude Code's, and a later
sync reads only what is appended after the forget instead of capturing the forgotten lines again.

An idea forgotten by itself was wrong, while its messages stay: a re-index would make it again from
them. So each leaves a `forgotten` correction (`cairn.store.corrections`: its place and content hash,
no text) that the executor, the re-index swap and import honour by not storing an idea there again
(`tombstones` counts them). Forgetting sessions or a project takes their corrections with them.

Indexing runs are kept too (their counts and costs are the store's history), but not what they quote:
a rejected result item (`index_runs.rejected_items`) carries the model's text about a session, and an
error can quote it. Items that name a forgotten session or point at a forgotten idea are dropped, and
an error that names a forgotten session is cleared (`_scrub_runs`).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite

from cairn.errors import Refusal
from cairn.lifecycle.hnsw_scrub import scrub_segments
from cairn.store.corrections import record

if TYPE_CHECKING:
    from cairn.store.store import Store

#: The full-text tables, merged after a forget so no deleted term survives in an old segment.
FTS_TABLES = ("messages_fts", "message_passages_fts", "ideas_fts", "spans_fts", "file_chunks_fts")

#: What `forget` counts, in the order it reports them.
KINDS = (
    "projects",
    "sessions",
    "messages",
    "passages",
    "ideas",
    "relations",
    "entity_links",
    "entities",
    "spans",
    "recall_injections",
    "learning_sessions",
    "reindex_sessions",
    "skipped_lines",
    "file_documents",
    "file_chunks",
    "file_requests",
    "associations",
    "corrections",
)

_IN = "IN (SELECT value FROM json_each(?))"


class ForgetError(Refusal):
    """What to forget was named wrongly (no such project, session or idea; nothing selected)."""


@dataclass(frozen=True)
class Selection:
    """What the user asked to forget; exactly one of project, sessions or ideas is set."""

    project: str | None = None
    sessions: tuple[str, ...] = ()
    ideas: tuple[int, ...] = ()
    before: str | None = None

    def check(self) -> None:
        named = sum(bool(x) for x in (self.project, self.sessions, self.ideas))
        if named != 1:
            raise ForgetError("name exactly one of --project, --session or --idea")


@dataclass
class ForgetReport:
    """What was (or, with `dry_run`, would be) deleted, per kind, and whether vectors were synced."""

    counts: dict[str, int]
    dry_run: bool
    projects: list[str] = field(default_factory=list)
    vectors_deleted: int = 0
    vectors_pending: int = 0
    tombstones: int = 0  #: forgotten ideas recorded so that a re-index does not make them again

    def as_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "projects": self.projects,
            "counts": self.counts,
            "total": sum(self.counts.values()),
            "tombstones": self.tombstones,
            "vectors_deleted": self.vectors_deleted,
            "vectors_pending": self.vectors_pending,
        }


@dataclass
class _Plan:
    """The ids a selection covers, read inside the deleting transaction."""

    project_ids: list[int]
    whole_projects: bool
    session_ids: list[str]
    file_ids: list[int]
    idea_ids: list[int]
    entity_ids: list[int] = field(default_factory=list)


async def forget(store: Store, selection: Selection, *, dry_run: bool = False) -> ForgetReport:
    """Delete what `selection` names (or only count it), then finish its vector deletions and scrub."""
    selection.check()
    from cairn.search.projects import resolve_projects

    projects: list[tuple[int, str]] = []
    if selection.project:
        projects = await resolve_projects(store.db, selection.project)
        if not projects:
            raise ForgetError(
                f"no stored project matches {selection.project!r}; `cairn projects` lists what is stored"
            )
    async with store.db.write() as conn:
        plan = await _plan(conn, selection, [pid for pid, _ in projects])
        counts = await _count(conn, plan)
        wrong = await _placed(conn, plan.idea_ids) if selection.ideas else []
        if not dry_run:
            await conn.execute("PRAGMA secure_delete = ON")
            deleted = await _delete(conn, plan)
            if deleted != counts:
                raise RuntimeError(f"forget deleted {deleted} but planned {counts}; rolled back")
            for idea in wrong:
                await record(conn, idea, state="forgotten")
            await _scrub_runs(conn, plan)
            for table in FTS_TABLES:
                await conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    report = ForgetReport(
        counts=counts, dry_run=dry_run, projects=[path for _, path in projects], tombstones=len(wrong)
    )
    if not dry_run:
        await finish(store, report)
    return report


async def finish(store: Store, report: ForgetReport | None = None) -> None:
    """Apply queued vector deletions, then leave no copy of deleted text in the files on disk.

    Safe to run any time (it is what completes a forget that was killed after its commit).
    """
    from cairn.store import outbox

    if store.settings.chroma_url is None or store.vectors_or_none is not None:
        try:
            written = await store.sync_vectors()
        except Exception:  # vectors unreachable: the outbox keeps the deletions for the next sync
            written = 0
        if report is not None:
            report.vectors_deleted = written
    if report is not None:
        report.vectors_pending = await outbox.pending(store.db)
    await checkpoint(store.db.conn)
    if store.settings.chroma_url is None and report is not None and report.vectors_pending == 0:
        await asyncio.to_thread(compact_chroma, store.settings.chroma_dir)


async def checkpoint(conn: aiosqlite.Connection) -> None:
    """Copy the WAL into the database and truncate it, so deleted rows' old pages leave the WAL file."""
    await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def compact_chroma(chroma_dir: Path) -> None:
    """Scrub Chroma's SQLite file after its deletions: its log, full-text index, free pages and WAL.

    Chroma keeps each write, document included, in its log (`embeddings_queue`) until its vector
    segment catches up, which for a small collection can be never; a deleted record's earlier writes
    stay there. Their metadata can never be read again (a later delete of the same id wins), so it is
    cleared. Deleting also leaves text in freed pages and old FTS segments. A separate connection does
    this while the client stays open: SQLite's locking serialises it with Chroma's own writes. The HNSW
    segment files get their unused slots zeroed (`hnsw_scrub`): Chroma fills them from uninitialised memory.
    """
    path = chroma_dir / "chroma.sqlite3"
    if not path.is_file():
        return
    scrub_segments(chroma_dir)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "embeddings_queue" in tables:
            conn.execute(_SCRUB_CHROMA_LOG)
        if "embedding_fulltext_search" in tables:
            conn.execute(
                "INSERT INTO embedding_fulltext_search (embedding_fulltext_search) VALUES ('optimize')"
            )
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


#: Chroma's log operations are ADD 0, UPDATE 1, UPSERT 2, DELETE 3 (`chromadb.types.Operation`).
_SCRUB_CHROMA_LOG = """
    UPDATE embeddings_queue SET metadata = NULL
    WHERE operation <> 3 AND metadata IS NOT NULL AND EXISTS (
        SELECT 1 FROM embeddings_queue AS later
        WHERE later.topic = embeddings_queue.topic AND later.id = embeddings_queue.id
          AND later.operation = 3 AND later.seq_id > embeddings_queue.seq_id)
"""


async def _placed(conn: aiosqlite.Connection, idea_ids: list[int]) -> list[dict[str, Any]]:
    """The ideas among `idea_ids` that have a place (file and line) a correction can be kept by."""
    async with conn.execute(
        f"""SELECT source_file_id, source_line, content_hash, intent FROM ideas
            WHERE id {_IN} AND source_file_id IS NOT NULL AND source_line IS NOT NULL""",
        (json.dumps(idea_ids),),
    ) as cursor:
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]


async def _ids(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    async with conn.execute(sql, params) as cursor:
        return [row[0] for row in await cursor.fetchall()]


async def _plan(conn: aiosqlite.Connection, selection: Selection, project_ids: list[int]) -> _Plan:
    before = selection.before
    session_ids: list[str] = []
    idea_ids: list[int] = []
    if project_ids:
        sql = f"SELECT id FROM sessions WHERE project_id {_IN}"
        params: tuple[Any, ...] = (json.dumps(project_ids),)
        if before:
            sql += " AND coalesce(last_at, created_at) < ?"
            params += (before,)
        session_ids = await _ids(conn, sql, params)
    elif selection.sessions:
        session_ids = await _ids(
            conn, f"SELECT id FROM sessions WHERE id {_IN}", (json.dumps(list(selection.sessions)),)
        )
        missing = sorted(set(selection.sessions) - set(session_ids))
        if missing:
            raise ForgetError(
                f"no stored session {', '.join(missing)}; search results (--json) show session ids"
            )
        if before:
            session_ids = await _ids(
                conn,
                f"SELECT id FROM sessions WHERE id {_IN} AND coalesce(last_at, created_at) < ?",
                (json.dumps(session_ids), before),
            )
    if selection.ideas:
        found = await _ids(conn, f"SELECT id FROM ideas WHERE id {_IN}", (json.dumps(list(selection.ideas)),))
        missing_ideas = sorted(set(selection.ideas) - set(found))
        if missing_ideas:
            raise ForgetError(f"no stored idea {', '.join(map(str, missing_ideas))}")
        sql = f"SELECT id FROM ideas WHERE id {_IN}"
        params = (json.dumps(found),)
        if before:
            sql += " AND coalesce(said_at, created_at) < ?"
            params += (before,)
        idea_ids = await _ids(conn, sql, params)
    sessions_json = json.dumps(session_ids)
    file_ids = await _ids(conn, f"SELECT id FROM transcript_files WHERE session_id {_IN}", (sessions_json,))
    if session_ids:
        idea_ids = await _ids(
            conn,
            f"SELECT id FROM ideas WHERE session_id {_IN} OR source_file_id {_IN}",
            (sessions_json, json.dumps(file_ids)),
        )
    ideas_json = json.dumps(idea_ids)
    # Entities only the forgotten ideas mention: their names are that memory's words too.
    entity_ids = await _ids(
        conn,
        f"""SELECT DISTINCT entity_id FROM idea_entities WHERE idea_id {_IN}
            AND entity_id NOT IN (SELECT entity_id FROM idea_entities WHERE idea_id NOT {_IN})""",
        (ideas_json, ideas_json),
    )
    return _Plan(project_ids, bool(project_ids) and not before, session_ids, file_ids, idea_ids, entity_ids)


def _where(plan: _Plan) -> dict[str, tuple[str, tuple[Any, ...]]]:
    """Each kind's rows as `(FROM … WHERE …, params)`, in the order they are deleted (children first)."""
    s, f, i = json.dumps(plan.session_ids), json.dumps(plan.file_ids), json.dumps(plan.idea_ids)
    e = json.dumps(plan.entity_ids)
    p = json.dumps(plan.project_ids if plan.whole_projects else [])
    messages = f"(session_id {_IN} OR file_id {_IN})"
    return {
        "recall_injections": (f"recall_injections WHERE idea_id {_IN} OR session_id {_IN}", (i, s)),
        "relations": (f"relations WHERE from_idea_id {_IN} OR to_idea_id {_IN}", (i, i)),
        "entity_links": (f"idea_entities WHERE idea_id {_IN}", (i,)),
        "entities": (f"entities WHERE id {_IN}", (e,)),
        "ideas": (f"ideas WHERE id {_IN}", (i,)),
        "passages": (
            f"message_passages WHERE message_id IN (SELECT id FROM messages WHERE {messages})",
            (s, f),
        ),
        "messages": (f"messages WHERE {messages}", (s, f)),
        "spans": (f"topic_spans WHERE session_id {_IN}", (s,)),
        "learning_sessions": (
            f"learning_sessions WHERE session_id {_IN} OR file_id {_IN} OR project_id {_IN}",
            (s, f, p),
        ),
        "reindex_sessions": (f"reindex_sessions WHERE session_id {_IN}", (s,)),
        "skipped_lines": (f"skipped_lines WHERE file_id {_IN}", (f,)),
        "file_chunks": (
            f"file_chunks WHERE document_id IN (SELECT id FROM file_documents WHERE project_id {_IN})",
            (p,),
        ),
        "file_documents": (f"file_documents WHERE project_id {_IN}", (p,)),
        "file_requests": (f"file_requests WHERE project_id {_IN}", (p,)),
        "associations": (f"search_associations WHERE project_id {_IN}", (p,)),
        "corrections": (f"idea_corrections WHERE source_file_id {_IN}", (f,)),
        "sessions": (f"sessions WHERE id {_IN}", (s,)),
        "projects": (f"projects WHERE id {_IN}", (p,)),
    }


async def _count(conn: aiosqlite.Connection, plan: _Plan) -> dict[str, int]:
    where = _where(plan)
    counts: dict[str, int] = {}
    for kind in KINDS:
        sql, params = where[kind]
        async with conn.execute(f"SELECT count(*) FROM {sql}", params) as cursor:
            row = await cursor.fetchone()
        counts[kind] = int(row[0]) if row else 0
    return counts


async def _delete(conn: aiosqlite.Connection, plan: _Plan) -> dict[str, int]:
    """Delete in dependency order; ideas that point at a forgotten idea lose the pointer, not themselves."""
    i = json.dumps(plan.idea_ids)
    await conn.execute(
        f"UPDATE ideas SET answered_by = NULL WHERE answered_by {_IN} AND id NOT {_IN}", (i, i)
    )
    await conn.execute(
        f"UPDATE ideas SET superseded_by = NULL WHERE superseded_by {_IN} AND id NOT {_IN}", (i, i)
    )
    deleted: dict[str, int] = {}
    for kind, (sql, params) in _where(plan).items():
        cursor = await conn.execute(f"DELETE FROM {sql}", params)
        deleted[kind] = cursor.rowcount
        await cursor.close()
    return {kind: deleted[kind] for kind in KINDS}


async def _scrub_runs(conn: aiosqlite.Connection, plan: _Plan) -> None:
    """Drop from `index_runs` the rejected items that name a forgotten session (anywhere in the item:
    a session id is a UUID, so its text is unambiguous) or point at a forgotten idea (`*_idea_id`),
    and clear errors that name a forgotten session. The rest of each run stays."""
    sessions = set(plan.session_ids)
    ideas = set(plan.idea_ids)
    if not sessions and not ideas:
        return
    async with conn.execute(
        "SELECT id, rejected_items, error FROM index_runs WHERE rejected_items <> '[]' OR error IS NOT NULL"
    ) as cursor:
        runs = list(await cursor.fetchall())

    def names_forgotten(text: str) -> bool:
        return any(session in text for session in sessions)

    def points_at_forgotten(entry: Any) -> bool:
        item = entry.get("item") if isinstance(entry, dict) else None
        if not isinstance(item, dict):
            return False
        return any(key.endswith("idea_id") and value in ideas for key, value in item.items())

    for run_id, rejected_json, error in runs:
        try:
            rejected = json.loads(rejected_json)
        except ValueError:
            rejected = []
        entries = rejected if isinstance(rejected, list) else []
        kept = [
            entry
            for entry in entries
            if not names_forgotten(json.dumps(entry, ensure_ascii=False)) and not points_at_forgotten(entry)
        ]
        cleared = None if error is not None and names_forgotten(error) else error
        if kept != rejected or cleared != error:
            await conn.execute(
                "UPDATE index_runs SET rejected_items = ?, error = ? WHERE id = ?",
                (json.dumps(kept, ensure_ascii=False), cleared, run_id),
            )
