"""`Store`: the one handle on a cairn store — lock, SQLite database and (lazily) the Chroma index.

Opening a store takes its lock, so only one process at a time writes it (Chroma loses vectors
otherwise, and offsets are exactly-once only with one writer). The CLI opens one for a command; the
daemon keeps one open and answers everyone else.

`ingest` is the capture half of the exactly-once invariant: the messages read from a transcript and
the file's new byte offset are written in one transaction, so a crash either keeps both or neither,
and replaying a read that was already applied changes nothing (messages are unique by
`(file, line, content hash)`). A message longer than one passage is stored with its passages
(`cairn.transcripts.passages`) in that transaction too, and only when the message itself is new.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import aiosqlite
from pydantic import BaseModel, Field

from cairn.config import Settings
from cairn.dates import iso_utc as iso_utc
from cairn.store import outbox
from cairn.store.db import Database, DatabaseError
from cairn.store.failures import StoreReadOnlyError, disk_full, unsafe_home, unwritable_reason
from cairn.store.hashing import idea_hash as idea_hash
from cairn.store.injections import stats as recall_stats
from cairn.store.lock import StoreLock, StoreLockedError
from cairn.store.projects import project_for_claude_dir, project_for_cwd
from cairn.store.vector_worker import MEMORY_VECTOR_KINDS, VectorWorker, WorkerProgress
from cairn.transcripts.discover import is_subagent_file, session_id_for

if TYPE_CHECKING:
    from cairn.store.cpus import EmbeddingMode
    from cairn.store.vectors import VectorIndex
    from cairn.transcripts import Message
    from cairn.transcripts import passages as passage_split
    from cairn.transcripts.normalise import ToolCall
    from cairn.transcripts.reader import ReadResult

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

#: Messages that get passages: those search finds (noise, commands and meta lines are never shown).
PASSAGE_KINDS = ("text", "tool_result", "compact_summary")


@dataclass(frozen=True)
class FileCursor:
    """Where reading a transcript resumes: pass these back to `read_from`."""

    offset: int
    line: int
    inode: int | None


IngestHook = Callable[[aiosqlite.Connection, int], Awaitable[None]]
"""Extra writes for `Store.ingest` to make in its transaction: called with the connection and file id."""


@dataclass(frozen=True)
class IngestStats:
    messages_added: int
    messages_skipped_duplicate: int
    sessions_touched: int
    passages_added: int = 0


class StoreStats(BaseModel):
    """What a store holds, for `cairn stats` (JSON-able with `model_dump(mode="json")`)."""

    schema_version: int
    db_path: str
    db_size_bytes: int
    projects: int
    sessions: int
    transcript_files: int
    messages: int
    messages_by_role: dict[str, int]
    message_passages: int = Field(
        default=0, description="Passages of messages longer than one, searched with their message."
    )
    first_message_at: str | None
    last_message_at: str | None
    ideas: int
    ideas_by_intent: dict[str, int]
    relations: int
    topic_spans: int
    entities: int
    queue_by_status: dict[str, int]
    index_runs: int
    pending_vectors: int
    vectors: dict[str, int] | None
    vectors_error: str | None = None
    recall_injections: int = Field(default=0, description="Ideas injected into coding-agent sessions.")
    recall_hits: int = Field(default=0, description="Injections the agent then expanded with `show`.")
    recall_hit_rate: float | None = Field(default=None, description="hits / injections; None before any.")
    file_documents: int = Field(default=0, description="Project files in the on-demand file index.")
    file_chunks: int = Field(default=0, description="Their chunks, searched by search_content.")
    file_requests_by_status: dict[str, int] = Field(
        default_factory=dict, description="Files the agent touched, by indexing status (skipped: refused)."
    )
    learning_sessions_by_status: dict[str, int] = Field(
        default_factory=dict, description="Searches the feedback loop saw, by learning session status."
    )
    search_associations: int = Field(
        default=0, description="Associations of a query with a file, learned or proposed by the indexer."
    )


def message_hash(role: str, kind: str, text: str) -> str:
    """Identity of a message's content, part of its unique key `(file, line, content_hash)`.

    One JSONL line can yield more than one message (text and tool results), and a rewritten file
    can hold different content at a line already stored; the hash tells these apart while making a
    re-read of the same bytes a no-op.
    """
    digest = hashlib.blake2b(f"{role}\x1f{kind}\x1f{text}".encode(), digest_size=16)
    return digest.hexdigest()


class Store:
    """A locked, open store. Use `await Store.open(settings)` (or `async with await Store.open(...)`)."""

    def __init__(
        self,
        settings: Settings,
        lock: StoreLock | None,
        db: Database,
        vectors: VectorIndex | None,
        *,
        embedding_mode: EmbeddingMode = "steady",
    ) -> None:
        self.settings = settings
        self.db = db
        self._lock = lock
        self._vectors = vectors
        #: What the vector index, made at first use, embeds for (`cairn.store.cpus`).
        self.embedding_mode: EmbeddingMode = embedding_mode
        self._closed = False
        #: Who holds the store while this one reads it (`open(busy_ok=True)`): a backfill, say.
        self.writer: str | None = None
        #: Why searches of this store leave the vector index unloaded though it could be loaded, if
        #: they do: a search without the daemon answers from keywords rather than wait seconds for
        #: Chroma and the embedding model (`cairn search`, `cairn.cli.search`).
        self.vectors_deferred: str | None = None
        #: The worker embedding the outbox in the background (`vectors_alongside`), if one runs.
        self._vector_worker: VectorWorker | None = None

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        vectors: VectorIndex | None = None,
        read_only_ok: bool = False,
        busy_ok: bool = False,
        embedding_mode: EmbeddingMode = "steady",
    ) -> Store:
        """Take the store's lock and open its database, creating `settings.home` (mode 0700) if needed.

        A `vectors` index passed in is owned by the store from then on: `close()` closes it. Else one is
        made at first use, its embedding model run for `embedding_mode` (`cairn.store.cpus`): "bulk" for
        a command the user waits on (every CPU), "steady" for the daemon and whatever else runs beside
        the user's work (a few threads).
        A home that cannot be written (a read-only file system, permissions) raises
        `StoreReadOnlyError` — or, with `read_only_ok`, opens the store for reading: no lock (none can
        be taken; SQLite's own locking protects the reads), a read-only database, and no vectors
        (`read_only` says why). With `busy_ok` too, a store another process owns (a backfill writing
        it) opens the same way: SQLite's WAL lets a reader see every committed row while the owner
        writes, so a search answers by keyword at once instead of waiting for the job to end.
        Otherwise raises `StoreLockedError` when another process owns the store,
        `DatabaseError` when the database cannot be used, `SchemaTooNewError` when a newer cairn wrote it.
        """
        reason = unwritable_reason(settings.home)
        lock: StoreLock | None = None
        writer: str | None = None
        if reason is None:
            try:
                settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
                if (unsafe := unsafe_home(settings.home)) is not None:
                    raise unsafe
                lock = StoreLock(settings.lock_path)
                lock.acquire()
            except StoreLockedError as exc:
                if not (busy_ok and read_only_ok):
                    raise
                reason, lock, writer = f"{exc.holder} is writing it", None, exc.holder
            except PermissionError as exc:  # e.g. a lock file another user owns
                reason, lock = exc.strerror or "permission denied", None
            except OSError as exc:
                if exc.errno != errno.EROFS:
                    raise
                reason, lock = exc.strerror or "read-only file system", None
        if reason is not None:
            if not read_only_ok:
                raise StoreReadOnlyError(settings.home, reason)
            db = await Database.open_read_only(
                settings.db_path, reason=reason, busy_timeout_ms=settings.sqlite_busy_timeout_ms
            )
            store = cls(settings, None, db, vectors, embedding_mode=embedding_mode)
            store.writer = writer
            return store
        assert lock is not None
        try:
            db = await Database.open(settings.db_path, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
        except DatabaseError:
            # A full disk: SQLite cannot make its -shm file, so not even a read gets through a normal
            # open. Readers still can, read-only — holding the lock, so nobody writes meanwhile.
            if not (read_only_ok and disk_full(settings.home) and settings.db_path.is_file()):
                lock.release()
                raise
            try:
                db = await Database.open_read_only(
                    settings.db_path,
                    reason="the disk is full",
                    busy_timeout_ms=settings.sqlite_busy_timeout_ms,
                )
            except BaseException:
                lock.release()
                raise
        except BaseException:
            lock.release()
            raise
        return cls(settings, lock, db, vectors, embedding_mode=embedding_mode)

    @property
    def read_only(self) -> str | None:
        """Why this store was opened for reading only (`open(read_only_ok=True)`), else None."""
        return self.db.read_only

    @property
    def vectors(self) -> VectorIndex:
        """The Chroma index, created at first use: commands that never touch vectors skip loading it.

        A read-only store has none: embedded Chroma writes to its directory as it opens, so it cannot
        open on a read-only medium; `VectorStoreError` says so (and `vectors_or_none` is None).
        """
        if self.read_only is not None:
            from cairn.store.vectors import VectorStoreError

            raise VectorStoreError(
                f"the vector index is not opened on a read-only store ({self.read_only}): "
                "Chroma writes to its directory when it opens"
            )
        if self._vectors is None:
            from cairn.store.vectors import VectorIndex

            self._vectors = VectorIndex(self.settings, mode=self.embedding_mode)
        return self._vectors

    @property
    def vectors_or_none(self) -> VectorIndex | None:
        """`vectors` for searches, which match keywords only without it: None on a read-only store, and
        on one whose searches defer it (`vectors_deferred`)."""
        return None if self.read_only is not None or self.vectors_deferred is not None else self.vectors

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._vectors is not None:
                await asyncio.to_thread(self._vectors.close)
        finally:
            try:
                await self.db.close()
            finally:
                if self._lock is not None:
                    self._lock.release()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # Capture

    async def file_cursor(self, path: str | os.PathLike[str]) -> FileCursor | None:
        row = await self.db.fetchone(
            "SELECT byte_offset, line, inode FROM transcript_files WHERE path = ?", (_file_key(path),)
        )
        return None if row is None else FileCursor(row["byte_offset"], row["line"], row["inode"])

    async def tool_calls(self, path: str | os.PathLike[str], ids: Iterable[str]) -> list[ToolCall]:
        """Tool calls with the given ids stored from `path`, so a later read can label their results."""
        wanted = list(ids)
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        rows = await self.db.fetchall(
            f"""
            SELECT call.value AS call FROM messages m
            JOIN transcript_files f ON f.id = m.file_id, json_each(m.tool_calls) AS call
            WHERE f.path = ? AND json_extract(call.value, '$.id') IN ({marks})
            """,
            (_file_key(path), *wanted),
        )
        from cairn.transcripts.normalise import ToolCall

        return [ToolCall.model_validate_json(row["call"]) for row in rows]

    async def ingest(
        self,
        path: str | os.PathLike[str],
        result: ReadResult,
        messages: Sequence[Message],
        *,
        also: IngestHook | None = None,
    ) -> IngestStats:
        """Store what one `read_from` call returned and advance the file's cursor, atomically.

        Upserts the projects and sessions the messages belong to and the file's row, inserts the
        messages that are not stored yet, and sets the cursor to the result's — all in one
        transaction. The cursor never moves backwards except when the reader restarted the file
        (truncated or replaced): re-applying an older read just finds its messages already stored.
        `also(conn, file_id)` runs inside that transaction, after the messages: whatever else is
        derived from the same bytes (file index requests, learning sessions) is then stored exactly
        when they are.
        """
        file_path = Path(_file_key(path))
        cut = _passages(messages, self.settings) if self.settings.passages else {}
        async with self.db.write() as conn:
            file_session = await self._file_session(conn, file_path, messages)
            sessions = _group_sessions(messages, file_session)
            projects = await self._upsert_projects(conn, file_path, sessions)
            await self._upsert_sessions(conn, sessions, projects)
            file_id, cursor = await self._upsert_file(conn, file_path, file_session, messages)
            if result.restarted and cursor is not None:
                await self._start_generation(conn, file_id)
            newer_than = await _max_message_id(conn)
            added = await self._insert_messages(conn, file_id, messages, file_session)
            passages = await _insert_passages(conn, file_id, messages, cut, newer_than) if added else 0
            if added:
                await _unqueue_unembedded(conn, newer_than, self.settings, passages=bool(passages))
            await self._refresh_sessions(conn, list(sessions))
            if also is not None:
                await also(conn, file_id)
            await self._advance_cursor(conn, file_id, cursor, result)
        return IngestStats(
            messages_added=added,
            messages_skipped_duplicate=len(messages) - added,
            sessions_touched=len(sessions),
            passages_added=passages,
        )

    async def _file_session(
        self, conn: aiosqlite.Connection, path: Path, messages: Sequence[Message]
    ) -> str | None:
        """The session a file belongs to: its messages say, else what was stored for it before."""
        for message in messages:
            if message.session_id:
                return message.session_id
        async with conn.execute(
            "SELECT session_id FROM transcript_files WHERE path = ?", (str(path),)
        ) as cur:
            row = await cur.fetchone()
        if row is not None and row["session_id"]:
            return row["session_id"]
        # Messages that name no session (e.g. a file of summaries): Claude Code's file layout says.
        return session_id_for(path) if messages else None

    async def _upsert_projects(
        self, conn: aiosqlite.Connection, path: Path, sessions: dict[str, _SessionInfo]
    ) -> dict[str, int]:
        """Project ids by session: the repository of the session's cwd, else the project its Claude Code
        directory belongs to (`cairn.store.projects`; a known cwd costs one indexed lookup)."""
        directory = _project_dir(path)
        ids: dict[str, int] = {}
        for session_id, info in sessions.items():
            if info.cwd:
                ids[session_id] = await project_for_cwd(conn, info.cwd, directory.name)
            else:
                ids[session_id] = await project_for_claude_dir(conn, directory)
        return ids

    async def _upsert_sessions(
        self, conn: aiosqlite.Connection, sessions: dict[str, _SessionInfo], projects: dict[str, int]
    ) -> None:
        # A session first seen without a cwd got the fallback project; the first cwd corrects that.
        await conn.executemany(
            f"""
            INSERT INTO sessions (id, project_id, cwd, git_branch) VALUES (?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET
                project_id = CASE WHEN sessions.cwd IS NULL AND excluded.cwd IS NOT NULL
                                  THEN excluded.project_id
                                  ELSE coalesce(sessions.project_id, excluded.project_id) END,
                cwd = coalesce(sessions.cwd, excluded.cwd),
                git_branch = coalesce(excluded.git_branch, sessions.git_branch),
                updated_at = {_NOW}
            """,
            [(sid, projects[sid], info.cwd, info.git_branch) for sid, info in sessions.items()],
        )

    async def _upsert_file(
        self, conn: aiosqlite.Connection, path: Path, session_id: str | None, messages: Sequence[Message]
    ) -> tuple[int, FileCursor | None]:
        """The file's id and its cursor before this ingest (None for a file seen the first time)."""
        subagent = is_subagent_file(path)
        agent_id = next((m.agent_id for m in messages if m.agent_id), None)
        if subagent and agent_id is None:
            agent_id = path.stem.removeprefix("agent-")
        async with conn.execute(
            "SELECT id, byte_offset, line, inode FROM transcript_files WHERE path = ?", (str(path),)
        ) as cur:
            row = await cur.fetchone()
        if row is not None:
            await conn.execute(
                f"""
                UPDATE transcript_files SET
                    session_id = coalesce(session_id, ?),
                    agent_id = coalesce(agent_id, ?),
                    updated_at = {_NOW}
                WHERE id = ?
                """,
                (session_id, agent_id, row["id"]),
            )
            return row["id"], FileCursor(row["byte_offset"], row["line"], row["inode"])
        async with conn.execute(
            "INSERT INTO transcript_files (path, session_id, is_subagent, agent_id) VALUES (?, ?, ?, ?) "
            "RETURNING id",
            (str(path), session_id, int(subagent), agent_id),
        ) as cur:
            inserted = await cur.fetchone()
        assert inserted is not None
        return inserted["id"], None

    async def _insert_messages(
        self, conn: aiosqlite.Connection, file_id: int, messages: Sequence[Message], file_session: str | None
    ) -> int:
        """Insert the messages not stored yet; returns how many were new."""
        if not messages:
            return 0
        cursor = await conn.executemany(
            """
            INSERT INTO messages (
                session_id, file_id, line, end_line, byte_start, byte_end, uuid, message_id, role, kind,
                text, content_hash, timestamp, cwd, git_branch, is_sidechain, agent_id, is_noise,
                is_compact_summary, tool_calls, tool_results, origin, tool, tool_arg, failed
            ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (file_id, line, content_hash) DO NOTHING
            """,
            [_message_row(m, file_id, file_session) for m in messages],
        )
        added = cursor.rowcount
        await cursor.close()
        return added

    async def _refresh_sessions(self, conn: aiosqlite.Connection, session_ids: list[str]) -> None:
        """Recount each touched session from its stored messages, so a replay cannot double-count."""
        if not session_ids:
            return
        await conn.execute(
            f"""
            UPDATE sessions SET
                message_count = (SELECT count(*) FROM messages WHERE session_id = sessions.id),
                started_at = (SELECT min(timestamp) FROM messages WHERE session_id = sessions.id),
                last_at = (SELECT max(timestamp) FROM messages WHERE session_id = sessions.id),
                updated_at = {_NOW}
            WHERE id IN (SELECT value FROM json_each(?))
            """,
            (json.dumps(session_ids),),
        )

    async def _start_generation(self, conn: aiosqlite.Connection, file_id: int) -> None:
        """A truncated or replaced file starts over: index its new content from line 0.

        The messages stored from the old content stay (their ideas were indexed and remain true of
        what was said), but the indexer must not see them again: only messages inserted after this
        point — the new generation — are planned. A new message identical to an old one at the same
        line is deduplicated away and, rightly, not indexed twice.
        """
        await conn.execute(
            """
            UPDATE transcript_files
            SET indexed_line = 0, generation_start_id = (SELECT coalesce(max(id), 0) FROM messages)
            WHERE id = ?
            """,
            (file_id,),
        )

    async def _advance_cursor(
        self, conn: aiosqlite.Connection, file_id: int, before: FileCursor | None, result: ReadResult
    ) -> None:
        if before is not None and not result.restarted and result.offset < before.offset:
            return  # an older read replayed: its messages are deduplicated, the cursor stays ahead
        await conn.execute(
            f"""
            UPDATE transcript_files SET byte_offset = ?, line = ?, inode = ?, size = ?, updated_at = {_NOW}
            WHERE id = ?
            """,
            (result.offset, result.line, result.inode, result.size, file_id),
        )

    # Vectors

    async def sync_vectors(self, progress: outbox.Progress | None = None) -> int:
        """Write every pending vector change to Chroma; returns how many were applied.

        While a background worker runs (`vectors_alongside`), the bulk of the queue — messages and
        passages — is the worker's: this drains only the rest (the ideas, spans and entities an
        indexing run just wrote, so the next run's searches find them, as without a worker) and
        wakes the worker. The two drains never share a kind, so no text is embedded twice.
        """
        if self._vector_worker is not None:
            self._vector_worker.wake()
            return await self.drain_vectors(progress, kinds=MEMORY_VECTOR_KINDS)
        return await self.drain_vectors(progress)

    async def drain_vectors(
        self, progress: outbox.Progress | None = None, kinds: Collection[str] | None = None
    ) -> int:
        """Drain the vector outbox (of `kinds` only, when given) now, whoever else may be draining."""
        sources = outbox.sources_for(self.settings.passage_vectors, self.settings.message_vectors)
        return await outbox.drain(self.db, self.vectors, progress=progress, sources=sources, kinds=kinds)

    @asynccontextmanager
    async def vectors_alongside(
        self, progress: WorkerProgress | None = None, should_stop: Callable[[], bool] = lambda: False
    ) -> AsyncIterator[VectorWorker]:
        """Embed the outbox in the background while the body writes to it (`cairn.store.vector_worker`).

        On a normal exit the rest of the queue is embedded before this returns (unless `should_stop`
        says to stop), and an error the worker met is raised; if the body raises, the worker stops
        where it is and the outbox keeps what it did not reach.
        """
        if self._vector_worker is not None:
            raise RuntimeError("a vector worker already runs for this store")
        worker = VectorWorker(self, progress, should_stop)
        self._vector_worker = worker
        worker.start()
        try:
            yield worker
        except BaseException:
            self._vector_worker = None
            await worker.cancel()
            raise
        self._vector_worker = None
        await worker.finish()

    async def reindex_vectors(self, progress: outbox.Progress | None = None) -> int:
        """Rebuild all Chroma collections from SQLite; returns how many vectors were written.

        Messages stored before passages existed (or while `passages` was off) get theirs first, cut
        from their stored text, so the rebuilt passage vectors cover them too.
        """
        if self.settings.passages:
            await self.add_missing_passages()
        sources = outbox.sources_for(self.settings.passage_vectors, self.settings.message_vectors)
        return await outbox.rebuild(self.db, self.vectors, progress=progress, sources=sources)

    async def add_missing_passages(self, batch: int = 500) -> int:
        """Cut passages for stored messages that have none, from their stored text; returns how
        many were added. A tool result stored clipped yields passages of its clipped text only."""
        added, after = 0, 0
        kinds = ", ".join(f"'{kind}'" for kind in PASSAGE_KINDS)
        while True:
            rows = await self.db.fetchall(
                f"""
                SELECT m.id, m.text FROM messages AS m
                WHERE m.id > ? AND m.is_noise = 0 AND m.kind IN ({kinds}) AND length(m.text) > ?
                  AND NOT EXISTS (SELECT 1 FROM message_passages AS p WHERE p.message_id = m.id)
                ORDER BY m.id LIMIT ?
                """,
                (after, self.settings.passage_tokens, batch),
            )
            if not rows:
                return added
            after = rows[-1]["id"]
            from cairn.transcripts import passages as passage_split

            cut = [
                (row["id"], passage)
                for row in rows
                for passage in passage_split.split(row["text"], self.settings.passage_tokens)
            ]
            async with self.db.write() as conn:
                cursor = await conn.executemany(
                    """
                    INSERT INTO message_passages (message_id, seq, char_start, char_end, text)
                    SELECT id, ?, ?, ?, ? FROM messages WHERE id = ?
                    ON CONFLICT (message_id, seq) DO NOTHING
                    """,
                    [(p.seq, p.start, p.end, p.text, message_id) for message_id, p in cut],
                )
                added += max(0, cursor.rowcount)
                await cursor.close()

    # Statistics

    async def stats(self) -> StoreStats:
        db = self.db
        counts = await db.fetchone(
            """
            SELECT
                (SELECT count(*) FROM projects) AS projects,
                (SELECT count(*) FROM sessions) AS sessions,
                (SELECT count(*) FROM transcript_files) AS transcript_files,
                (SELECT count(*) FROM messages) AS messages,
                (SELECT count(*) FROM message_passages) AS message_passages,
                (SELECT min(timestamp) FROM messages) AS first_message_at,
                (SELECT max(timestamp) FROM messages) AS last_message_at,
                (SELECT count(*) FROM ideas) AS ideas,
                (SELECT count(*) FROM relations) AS relations,
                (SELECT count(*) FROM topic_spans) AS topic_spans,
                (SELECT count(*) FROM entities) AS entities,
                (SELECT count(*) FROM index_runs) AS index_runs,
                (SELECT count(*) FROM vector_outbox) AS pending_vectors,
                (SELECT count(*) FROM file_documents) AS file_documents,
                (SELECT count(*) FROM file_chunks) AS file_chunks,
                (SELECT count(*) FROM search_associations) AS search_associations
            """
        )
        assert counts is not None
        vectors, vectors_error = await self._vector_counts()
        recall = await recall_stats(db)
        return StoreStats(
            recall_injections=recall["injections"],
            recall_hits=recall["hits"],
            recall_hit_rate=recall["hit_rate"],
            schema_version=db.schema_version,
            db_path=str(db.path),
            db_size_bytes=_db_size(db.path),
            messages_by_role=await self._grouped("messages", "role"),
            ideas_by_intent=await self._grouped("ideas", "intent"),
            queue_by_status=await self._grouped("work_queue", "status"),
            file_requests_by_status=await self._grouped("file_requests", "status"),
            learning_sessions_by_status=await self._grouped("learning_sessions", "status"),
            vectors=vectors,
            vectors_error=vectors_error,
            **{key: counts[key] for key in counts.keys()},  # noqa: SIM118 - sqlite3.Row
        )

    async def _grouped(self, table: str, column: str) -> dict[str, int]:
        rows = await self.db.fetchall(
            f"SELECT {column} AS k, count(*) AS n FROM {table} GROUP BY {column} ORDER BY {column}"
        )
        return {row["k"]: row["n"] for row in rows}

    async def _vector_counts(self) -> tuple[dict[str, int] | None, str | None]:
        """Vectors per collection; a Chroma that cannot be read is reported, not raised."""
        from cairn.store.vectors import VECTOR_KINDS, VectorStoreError

        def count_all() -> dict[str, int]:
            index = self.vectors  # a read-only store has none: reported like any unreadable Chroma
            return {kind: index.count(kind) for kind in VECTOR_KINDS}

        try:
            return await asyncio.to_thread(count_all), None
        except VectorStoreError as exc:
            return None, str(exc)


@dataclass
class _SessionInfo:
    cwd: str | None = None
    git_branch: str | None = None


def _group_sessions(messages: Sequence[Message], file_session: str | None) -> dict[str, _SessionInfo]:
    """Per session in the batch: its first cwd and its latest git branch."""
    sessions: dict[str, _SessionInfo] = {}
    for message in messages:
        session_id = message.session_id or file_session
        if session_id is None:
            continue
        info = sessions.setdefault(session_id, _SessionInfo())
        if info.cwd is None and message.cwd:
            info.cwd = message.cwd
        if message.git_branch:
            info.git_branch = message.git_branch
    return sessions


def _passages(messages: Sequence[Message], settings: Settings) -> dict[int, list[passage_split.Passage]]:
    """The passages of each message (by position) that is long enough to have any."""
    from cairn.transcripts import passages as passage_split

    cut: dict[int, list[passage_split.Passage]] = {}
    for index, message in enumerate(messages):
        if message.is_noise or message.kind not in PASSAGE_KINDS:
            continue
        if found := passage_split.split(message.searchable_text, settings.passage_tokens):
            cut[index] = found
    return cut


async def _max_message_id(conn: aiosqlite.Connection) -> int:
    async with conn.execute("SELECT coalesce(max(id), 0) FROM messages") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _insert_passages(
    conn: aiosqlite.Connection,
    file_id: int,
    messages: Sequence[Message],
    cut: dict[int, list[passage_split.Passage]],
    newer_than: int,
) -> int:
    """Store the passages of the messages this transaction inserted (ids above `newer_than`:
    AUTOINCREMENT ids only grow), so a replayed message, already stored, gets none again."""
    rows = []
    for index, found in cut.items():
        message = messages[index]
        key = (file_id, message.line, message_hash(message.role, message.kind, message.text), newer_than)
        rows.extend((p.seq, p.start, p.end, p.text, *key) for p in found)
    if not rows:
        return 0
    cursor = await conn.executemany(
        """
        INSERT INTO message_passages (message_id, seq, char_start, char_end, text)
        SELECT m.id, ?, ?, ?, ? FROM messages AS m
        WHERE m.file_id = ? AND m.line = ? AND m.content_hash = ? AND m.id > ?
        ON CONFLICT (message_id, seq) DO NOTHING
        """,
        rows,
    )
    added = cursor.rowcount
    await cursor.close()
    return added


async def _unqueue_unembedded(
    conn: aiosqlite.Connection, newer_than: int, settings: Settings, *, passages: bool
) -> None:
    """Take the new messages and passages that get no vector (`message_vectors`,
    `passage_vectors`) off the outbox their insert triggers queued them on: they never had one to
    delete, and most of them (tool output) are such, so a drain would otherwise ask Chroma to delete
    thousands of vectors that do not exist."""
    await conn.execute(
        f"""
        DELETE FROM vector_outbox WHERE kind = 'messages' AND item_id IN (
            SELECT t.id FROM messages AS t
            WHERE t.id > ? AND NOT ({outbox.MESSAGE_VECTORS[settings.message_vectors]}))
        """,
        (newer_than,),
    )
    if passages:
        await conn.execute(
            f"""
            DELETE FROM vector_outbox WHERE kind = 'passages' AND item_id IN (
                SELECT t.id FROM message_passages AS t JOIN messages AS m ON m.id = t.message_id
                WHERE t.message_id > ? AND NOT ({outbox.PASSAGE_VECTORS[settings.passage_vectors]}))
            """,
            (newer_than,),
        )


def _message_row(message: Message, file_id: int, file_session: str | None) -> tuple[Any, ...]:
    origin, tool, argument, failed = message.origin_columns()
    return (
        message.session_id or file_session,
        file_id,
        message.line,
        message.end_line,
        message.byte_start,
        message.byte_end,
        message.uuid,
        message.message_id,
        message.role,
        message.kind,
        message.text,
        message_hash(message.role, message.kind, message.text),
        iso_utc(message.timestamp) if message.timestamp else None,
        message.cwd,
        message.git_branch or None,
        int(message.is_sidechain),
        message.agent_id,
        int(message.is_noise),
        int(message.is_compact_summary),
        _json_list(message.tool_calls),
        _json_list(message.tool_results),
        origin,
        tool,
        argument,
        int(failed),
    )


def _json_list(items: Sequence[Any]) -> str:
    return json.dumps(
        [item.model_dump(mode="json") if isinstance(item, BaseModel) else item for item in items],
        ensure_ascii=False,
        default=str,
    )


def _file_key(path: str | os.PathLike[str]) -> str:
    """How a transcript is identified in the store: its absolute, symlink-free path."""
    return str(Path(path).expanduser().resolve())


def _project_dir(path: Path) -> Path:
    """The Claude Code project directory a transcript sits in (`<project>/<session>/subagents/…` too)."""
    return path.parent.parent.parent if is_subagent_file(path) else path.parent


def _db_size(path: Path) -> int:
    """Bytes on disk, the write-ahead log included (it can hold much until a checkpoint)."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
