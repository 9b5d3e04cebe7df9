"""A session's next generation is built in a scratch database, out of sight of every reader.

Searches, recall, open questions and the vector index all read the store's `ideas`, `topic_spans`,
`relations` and `entities` tables. Building a new generation beside the old one in those tables would
show both (or need a generation filter in every one of those readers), so `cairn reindex` builds it
in a scratch database instead. It holds the session's transcript files (cursors back at line 0) and
messages with their ids kept, every entity (so the new generation names things as the store does),
the memory of every session that started before it, so the agent finds, links, answers and supersedes
across sessions as it did when the session was new, and the person's corrections of ideas, so it does
what the store would. The ordinary indexer runs on the scratch store unchanged (same planner, agent,
validator and executor), and `cairn.reindex.swap` moves the finished generation into the store in one
transaction.

Only *earlier* sessions' memory, and none of what later sessions or the session's own old generation
did to it, because a re-index goes oldest first and each session must be rebuilt from what it could
have known. Shown a later session's ideas, a session's new generation depended on that session's
previous generation: it dropped a candidate a later idea already said, related its ideas forward to
ideas said after it, and the later session, rebuilt next, answered the changed memory differently. The
result then depended on the order the store was first indexed in, and two re-indexes of one store did
not make the same memory. Built from the messages and what came before, in the order `reindex` goes,
each generation is a function of the stored messages, so a re-index settles at once, whatever made
the store, and re-indexing one session makes what a full re-index makes for it. What later sessions
said about this one's ideas is not lost: the swap carries it to the new generation.

The scratch store has no vector index: the agent's tools match by FTS5 and LIKE there (the session's
messages are the only ones it holds), while entity names are matched by the owner's embedding function.
It lives under `CAIRN_HOME` (private, 0700) and is removed after each session; one left by a crash is
removed by the next run, after its runs are recorded in the store (`cairn.reindex.swap.recover_runs`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from cairn.config import Settings
from cairn.store.db import Database
from cairn.store.store import Store

SCRATCH_DIR = "reindex-scratch"
SCRATCH_DB = "scratch.db"

# What a session's re-index needs, copied with ids kept. The session's own messages are the input;
# the memory of the sessions before it (ideas, spans, their relations and entity links) is the context
# the agent searches, links to, answers and supersedes. "Before" is the order `reindex` takes sessions
# in (`cairn.reindex.run.select_sessions`): start time, then id. Ideas of no session are context too.
# References to ideas not copied (the session's old generation, later sessions) are cleared with the
# verdict they carry, an answer or a supersession: the new generation decides those again from what
# was said before it (foreign keys are off during the copy).
_SESSION_FILES = "SELECT id FROM src.transcript_files WHERE session_id = :session"
_EARLIER = """
    SELECT s.id FROM src.sessions s, src.sessions this
    WHERE this.id = :session
      AND (coalesce(s.started_at, s.created_at), s.id) < (coalesce(this.started_at, this.created_at), this.id)
"""
_COPIES = (
    "INSERT INTO main.projects SELECT * FROM src.projects",
    "INSERT INTO main.sessions SELECT * FROM src.sessions",
    "INSERT INTO main.transcript_files SELECT * FROM src.transcript_files",
    f"INSERT INTO main.messages SELECT * FROM src.messages WHERE file_id IN ({_SESSION_FILES})",
    "INSERT INTO main.entities SELECT * FROM src.entities",
    "INSERT INTO main.entity_aliases SELECT * FROM src.entity_aliases",
    f"""
    INSERT INTO main.topic_spans SELECT * FROM src.topic_spans
    WHERE session_id IN ({_EARLIER}) AND (file_id IS NULL OR file_id NOT IN ({_SESSION_FILES}))
    """,
    f"""
    INSERT INTO main.ideas SELECT * FROM src.ideas
    WHERE (session_id IS NULL OR session_id IN ({_EARLIER}))
      AND (source_file_id IS NULL OR source_file_id NOT IN ({_SESSION_FILES}))
    """,
    """
    UPDATE main.ideas SET superseded_by = NULL, valid_until = NULL
    WHERE superseded_by NOT IN (SELECT id FROM main.ideas)
    """,
    """
    UPDATE main.ideas SET answered_by = NULL, answered_at = NULL, resolved_line = NULL, resolution = NULL
    WHERE answered_by NOT IN (SELECT id FROM main.ideas)
    """,
    "UPDATE main.ideas SET span_id = NULL WHERE span_id NOT IN (SELECT id FROM main.topic_spans)",
    "UPDATE main.topic_spans SET parent_id = NULL WHERE parent_id NOT IN (SELECT id FROM main.topic_spans)",
    """
    INSERT INTO main.relations SELECT * FROM src.relations
    WHERE from_idea_id IN (SELECT id FROM main.ideas) AND to_idea_id IN (SELECT id FROM main.ideas)
    """,
    """
    INSERT INTO main.idea_entities SELECT * FROM src.idea_entities
    WHERE idea_id IN (SELECT id FROM main.ideas)
    """,
    # The person's corrections, so the executor there leaves out what they forgot as wrong and the
    # trigger applies the rest. Copied after the ideas: the copies already carry them.
    "INSERT INTO main.idea_corrections SELECT * FROM src.idea_corrections",
    # The session is indexed again from its first line; its skipped lines are decided again.
    "UPDATE main.transcript_files SET indexed_line = 0 WHERE session_id = :session",
    # Nothing here is ever embedded.
    "DELETE FROM main.vector_outbox",
)


@dataclass(frozen=True)
class Scratch:
    """A scratch database for one session; rows with ids above the floors are the new generation's."""

    db: Database
    session_id: str
    idea_floor: int
    span_floor: int
    relation_floor: int

    async def close(self) -> None:
        await self.db.close()


class ScratchStore(Store):
    """A store over a scratch database: no lock (its owner holds the real one) and no vectors."""

    def __init__(self, settings: Settings, db: Database) -> None:
        super().__init__(settings, None, db, None)

    @property
    def vectors_or_none(self) -> None:
        return None

    async def sync_vectors(self, progress: object = None) -> int:
        """Nothing to embed: the scratch generation is embedded in the store once it is swapped in."""
        return 0


def scratch_dir(settings: Settings) -> Path:
    return settings.home / SCRATCH_DIR


def clear_scratch(settings: Settings) -> None:
    """Remove a scratch database left by an earlier run (the caller owns the store, so none is in use)."""
    shutil.rmtree(scratch_dir(settings), ignore_errors=True)


async def build_scratch(main: Database, settings: Settings, session_id: str) -> Scratch:
    """A fresh scratch database holding what re-indexing `session_id` needs; close it when done.

    The copy reads the store through an attached connection, so it sees exactly what is committed.
    """
    clear_scratch(settings)
    directory = scratch_dir(settings)
    directory.mkdir(mode=0o700, parents=True)
    db = await Database.open(directory / SCRATCH_DB, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    try:
        await db.conn.execute("ATTACH DATABASE ? AS src", (str(main.path),))
        await db.conn.execute("PRAGMA foreign_keys = OFF")
        try:
            # Deferred: IMMEDIATE would take the store's write lock too (it locks every attached database).
            await db.conn.execute("BEGIN")
            for sql in _COPIES:
                await db.conn.execute(sql, {"session": session_id})
            await db.conn.execute("COMMIT")
        finally:
            if db.conn.in_transaction:
                await db.conn.execute("ROLLBACK")
            await db.conn.execute("PRAGMA foreign_keys = ON")
            await db.conn.execute("DETACH DATABASE src")
        floors = [
            int(await db.scalar(f"SELECT coalesce(max(id), 0) FROM {table}"))
            for table in ("ideas", "topic_spans", "relations")
        ]
    except BaseException:
        await db.close()
        raise
    return Scratch(db, session_id, *floors)
