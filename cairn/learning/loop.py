"""The search feedback loop, run on each incremental read of a transcript inside capture's transaction.

Capture (`cairn.ingest.sync_file`) hands every read's tool events to `learn` through `Store.ingest`'s
`also` hook, so sessions and associations are stored exactly when the messages that produced them are:
a crash loses both or neither, and a replay finds both already there. `learn` loads the sessions the
previous read of the file left open, runs the pure `SearchLearner` over the new events, stores what
changed, and turns each resolved session into associations (`record_association`), which queue their
files for indexing.

Most reads hold no search call and the file has no open session: that costs one indexed lookup. A
failure inside the loop is rolled back to a savepoint and logged — learning is worth less than the
messages it rides with, so it must never stop them being captured.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import aiosqlite

from cairn.config import Settings
from cairn.learning.associations import record_association
from cairn.learning.learner import LearnerConfig, SearchLearner, SearchSession, SessionKey
from cairn.learning.sessions import known_keys, open_sessions, save_sessions
from cairn.transcripts.tool_events import ToolEvent, ToolUse

log = logging.getLogger("cairn.learning")


@dataclass(frozen=True)
class _Project:
    id: int
    path: str


async def learn(
    conn: aiosqlite.Connection, file_id: int, events: Sequence[ToolEvent], settings: Settings
) -> str | None:
    """Advance the learning sessions of transcript file `file_id` by `events`, in the caller's transaction.

    Returns why learning failed (and was rolled back), or None. The lasting figures are the stored rows
    (`cairn.learning.stats`), not a report of one read.
    """
    if not settings.learn_from_search:
        return None
    config = LearnerConfig.from_settings(settings)
    searches = [e for e in events if isinstance(e, ToolUse) and e.name in config.tools]
    resumed = await open_sessions(conn, file_id)
    if not searches and not resumed:
        return None
    await conn.execute("SAVEPOINT learn")
    try:
        await _learn(conn, file_id, events, config, searches, resumed)
    except Exception as exc:  # capture must go on: see the module docstring
        await conn.execute("ROLLBACK TO learn")
        await conn.execute("RELEASE learn")
        log.exception("learning from transcript file %s failed; its messages are still captured", file_id)
        return f"{type(exc).__name__}: {exc}"
    await conn.execute("RELEASE learn")
    return None


async def _learn(
    conn: aiosqlite.Connection,
    file_id: int,
    events: Sequence[ToolEvent],
    config: LearnerConfig,
    searches: list[ToolUse],
    resumed: list[SearchSession],
) -> None:
    default_session = await _file_session(conn, file_id)
    keys: set[SessionKey] = {(e.session_id or default_session or "", e.id) for e in searches}
    seen = await known_keys(conn, keys - {s.key for s in resumed})
    learner = SearchLearner(config, open_sessions=resumed, seen=seen, default_session_id=default_session)
    learner.feed(events)
    changed = learner.changed
    projects = await _projects(conn, default_session, {s.session_id for s in changed})
    await save_sessions(
        conn,
        changed,
        file_id=file_id,
        projects={sid: p.id for sid, p in projects.items() if p is not None},
    )
    for session in learner.resolved:
        await _associate(conn, session, projects.get(session.session_id))


async def _associate(conn: aiosqlite.Connection, session: SearchSession, project: _Project | None) -> None:
    """One association per file the resolved session read (each rejected alone if it cannot be one);
    none when the session's project is unknown."""
    if project is None:
        return
    for path in session.reads:
        await record_association(
            conn,
            project_id=project.id,
            project_dir=project.path,
            query=session.query,
            file_path=path,
            source="learned",
            grep_patterns=session.greps,
            original_score=session.best_score,
            learned_at=session.ended_at or session.started_at,
        )


async def _file_session(conn: aiosqlite.Connection, file_id: int) -> str | None:
    async with conn.execute("SELECT session_id FROM transcript_files WHERE id = ?", (file_id,)) as cursor:
        row = await cursor.fetchone()
    return None if row is None or row[0] is None else str(row[0])


async def _projects(
    conn: aiosqlite.Connection, file_session: str | None, session_ids: set[str]
) -> dict[str, _Project | None]:
    """Each session's project (its row in `sessions`), else the project of the file's own session; its
    directory is the checkout the session ran in (a worktree's files are read there, not in the root).

    Only sessions that named their working directory count: without a cwd the store files a session
    under the transcripts' own folder, and its "project files" would be other sessions' transcripts.
    """
    if not session_ids:
        return {}
    async with conn.execute(
        """
        SELECT s.id AS session_id, p.id AS project_id, coalesce(pp.checkout, p.path) AS path
        FROM sessions AS s JOIN projects AS p ON p.id = s.project_id
        LEFT JOIN project_paths AS pp ON pp.path = s.cwd AND pp.project_id = p.id
        WHERE s.id IN (SELECT value FROM json_each(?)) AND s.cwd IS NOT NULL
        """,
        (json.dumps(sorted(session_ids | ({file_session} if file_session else set()))),),
    ) as cursor:
        rows = await cursor.fetchall()
    found = {str(row["session_id"]): _Project(int(row["project_id"]), str(row["path"])) for row in rows}
    fallback = found.get(file_session) if file_session else None
    return {sid: found.get(sid, fallback) for sid in session_ids}
