"""A session's next generation is built in a scratch database, out of sight of every reader.

Searches, recall, open questions and the vector index all read the store's `ideas`, `topic_spans`,
`relations` and `entities` tables. Building a new generation beside the old one in those tables would
show both (or need a generation filter in every one of those readers), so `cairn reindex` builds it
in a scratch database instead: a copy of the session's rows the indexer needs — its project, session,
transcript files (cursors back at line 0) and messages, with their ids kept, plus every entity so the
new generation names things as the rest of the store does. The ordinary indexer then runs on the
scratch store unchanged (same planner, agent, validator and executor), and `cairn.reindex.swap` moves
the finished generation into the store in one transaction.

The scratch store has no vector index: the agent's tools match by FTS5 and LIKE there (its messages
are the only ones it holds), while entity names are still matched by the owner's embedding function.
It lives under `CAIRN_HOME` (private, 0700) and is removed after each session; one left by a crash is
removed by the next run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cairn.config import Settings
from cairn.store.db import Database
from cairn.store.store import Store

SCRATCH_DIR = "reindex-scratch"

# What a session's re-index needs, copied with ids kept (`file_ids` is the session's files).
_COPIES = (
    "INSERT INTO main.projects SELECT * FROM src.projects",
    "INSERT INTO main.sessions SELECT * FROM src.sessions WHERE id = :session",
    "INSERT INTO main.transcript_files SELECT * FROM src.transcript_files WHERE session_id = :session",
    """
    INSERT INTO main.messages SELECT * FROM src.messages
    WHERE file_id IN (SELECT id FROM main.transcript_files)
    """,
    "INSERT INTO main.entities SELECT * FROM src.entities",
    "INSERT INTO main.entity_aliases SELECT * FROM src.entity_aliases",
    # Indexed again from the first line; skipped lines are decided again by the new run.
    "UPDATE main.transcript_files SET indexed_line = 0",
    # Nothing here is ever embedded.
    "DELETE FROM main.vector_outbox",
)


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


async def build_scratch(main: Database, settings: Settings, session_id: str) -> Database:
    """A fresh scratch database holding what re-indexing `session_id` needs; close it when done.

    The copy reads the store through an attached connection after the store's last commit, so it sees
    exactly the committed messages.
    """
    clear_scratch(settings)
    directory = scratch_dir(settings)
    directory.mkdir(mode=0o700, parents=True)
    db = await Database.open(directory / "scratch.db", busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    try:
        await db.conn.execute("ATTACH DATABASE ? AS src", (str(main.path),))
        try:
            await db.conn.execute("BEGIN IMMEDIATE")
            for sql in _COPIES:
                await db.conn.execute(sql, {"session": session_id})
            await db.conn.execute("COMMIT")
        finally:
            if db.conn.in_transaction:
                await db.conn.execute("ROLLBACK")
            await db.conn.execute("DETACH DATABASE src")
    except BaseException:
        await db.close()
        raise
    return db
