"""Learning sessions in the store: what survives between two incremental reads of a transcript.

A search, its result, the reads after it and the user message that ends the turn may arrive in
different reads of a growing file, so the sessions still open when a read ends are stored
(`learning_sessions`, status pending/active) and loaded back by the next read of the same file.

The same rows make the loop idempotent. A search is identified by its tool_use id, unique to one API
call: once its row is settled — dismissed, resolved or timed out — it is never redone, whether the file
is read again after a rewrite, a copy of it turns up at another path, or a resumed session carries the
call over under a new session id. The learner is told which searches the store
already has (`known_keys`), and the upsert refuses to touch a settled row as a second line of defence.

Everything here runs on the caller's connection, inside capture's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

import aiosqlite

from cairn.dates import iso_utc
from cairn.learning.learner import SearchSession, SessionKey
from cairn.store.json_columns import json_strings
from cairn.transcripts.redact import redact

_COLUMNS = (
    "session_id, tool_use_id, tool_name, query, best_score, result_count, status, reads, greps, error, "
    "started_at, ended_at"
)

_UPSERT = """
INSERT INTO learning_sessions (
    session_id, tool_use_id, file_id, project_id, tool_name, query, best_score, result_count, status,
    reads, greps, error, started_at, ended_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tool_use_id) DO UPDATE SET
    project_id = coalesce(excluded.project_id, project_id),
    best_score = excluded.best_score,
    result_count = excluded.result_count,
    status = excluded.status,
    reads = excluded.reads,
    greps = excluded.greps,
    error = excluded.error,
    ended_at = excluded.ended_at
WHERE learning_sessions.status IN ('pending', 'active') AND learning_sessions.file_id IS excluded.file_id
"""


async def open_sessions(conn: aiosqlite.Connection, file_id: int) -> list[SearchSession]:
    """The sessions of transcript file `file_id` still waiting for a result, reads or their turn's end."""
    async with conn.execute(
        f"SELECT {_COLUMNS} FROM learning_sessions "
        "WHERE file_id = ? AND status IN ('pending', 'active') ORDER BY id",
        (file_id,),
    ) as cursor:
        rows = await cursor.fetchall()
    return [_session(row) for row in rows]


async def known_keys(conn: aiosqlite.Connection, keys: Collection[SessionKey]) -> set[SessionKey]:
    """Which of `keys` the store already has a session for (in any file, in any state, under any
    session id: a resumed or forked session carries earlier tool calls over under a new one)."""
    if not keys:
        return set()
    async with conn.execute(
        """
        SELECT tool_use_id FROM learning_sessions
        WHERE tool_use_id IN (SELECT value FROM json_each(?))
        """,
        (json.dumps(sorted({key[1] for key in keys})),),
    ) as cursor:
        known = {str(row[0]) for row in await cursor.fetchall()}
    return {key for key in keys if key[1] in known}


async def save_sessions(
    conn: aiosqlite.Connection,
    sessions: Iterable[SearchSession],
    *,
    file_id: int,
    projects: Mapping[str, int | None],
) -> int:
    """Insert new sessions and update open ones; a settled row is left as it is. Returns rows written.

    The query, the paths read, the patterns and any error text came from the transcript: they are
    redacted before they are stored (a read below a directory whose name holds a token is a path
    holding that token).
    """
    rows = [
        (
            s.session_id,
            s.tool_use_id,
            file_id,
            projects.get(s.session_id),
            s.tool_name,
            redact(s.query),
            s.best_score,
            s.result_count,
            s.status,
            json.dumps(_redacted(s.reads), ensure_ascii=False),
            json.dumps(_redacted(s.greps), ensure_ascii=False),
            None if s.error is None else redact(s.error),
            _time(s.started_at) or "",
            _time(s.ended_at),
        )
        for s in sessions
    ]
    if not rows:
        return 0
    before = conn.total_changes
    await conn.executemany(_UPSERT, rows)
    return conn.total_changes - before


def _redacted(items: list[str]) -> list[str]:
    """Each item redacted, once: two paths that differed only in a secret are one stored path."""
    return list(dict.fromkeys(redact(item) for item in items))


def _session(row: aiosqlite.Row) -> SearchSession:
    return SearchSession(
        session_id=row["session_id"],
        tool_use_id=row["tool_use_id"],
        tool_name=row["tool_name"],
        query=row["query"],
        started_at=_parse(row["started_at"]),
        status=row["status"],
        best_score=row["best_score"],
        result_count=row["result_count"],
        reads=json_strings(row["reads"]),
        greps=json_strings(row["greps"]),
        error=row["error"],
        ended_at=_parse(row["ended_at"]),
    )


def _time(value: datetime | None) -> str | None:
    return None if value is None else iso_utc(value)


def _parse(value: str | None) -> datetime | None:
    """A stored time; empty (a search whose transcript line had no timestamp) reads as unknown."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
