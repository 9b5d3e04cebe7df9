"""Read-only listings of what the indexer stored — ideas, questions, todos, topics, entities — for people.

The agent's tools answer the model's questions about one session; these answer a person's: what does
cairn know, across projects, newest first. Every function returns plain dicts ready for a table or JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cairn.store.db import Database
from cairn.store.open_ideas import OPEN, OPEN_QUESTION
from cairn.transcripts.redact import redact

#: `said_at` is when the idea's source message was said; the store falls back to the index time when that
#: message has none, which these listings show as unknown (None) rather than as a time it was said.
_IDEA_COLUMNS = f"""
    i.id, i.intent, i.content, i.confidence, i.importance, i.session_id AS session,
    p.name AS project, f.path AS source_file, i.source_line,
    CASE WHEN i.said_at <> i.created_at THEN i.said_at END AS said_at, i.created_at,
    i.answered_at, i.completed_at, i.declined_at, i.resolution, i.superseded_by, i.usage_count,
    s.name AS topic, i.state, {OPEN} AS is_open
"""
_IDEA_JOINS = """
    FROM ideas i
    LEFT JOIN sessions se ON se.id = i.session_id
    LEFT JOIN projects p ON p.id = se.project_id
    LEFT JOIN transcript_files f ON f.id = i.source_file_id
    LEFT JOIN topic_spans s ON s.id = i.span_id
"""


def _idea_filters(
    intents: tuple[str, ...], session: str | None, project_ids: Sequence[int] | None
) -> tuple[list[str], list[Any]]:
    """The WHERE terms and parameters of a listing's intents, session and projects."""
    where: list[str] = ["1 = 1"]
    params: list[Any] = []
    if intents:
        where.append(f"i.intent IN ({','.join('?' * len(intents))})")
        params.extend(intents)
    if session:
        where.append("i.session_id = ?")
        params.append(session)
    if project_ids is not None:
        where.append(f"se.project_id IN ({','.join('?' * len(project_ids))})")
        params.extend(project_ids)
    return where, params


async def list_ideas(
    db: Database,
    *,
    intents: tuple[str, ...] = (),
    session: str | None = None,
    project_ids: Sequence[int] | None = None,
    open_only: bool = False,
    include_superseded: bool = False,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Ideas newest first, each with its `state` and whether it `is_open` (`cairn.store.open_ideas`).
    `open_only` keeps the open ones; `project_ids` are what `cairn.search.projects.resolve_projects`
    found for the user's `--project`."""
    where, params = _idea_filters(intents, session, project_ids)
    if open_only:
        where.append(OPEN)
    if not include_superseded:
        where.append("i.superseded_by IS NULL")
    rows = await db.fetchall(
        f"SELECT {_IDEA_COLUMNS} {_IDEA_JOINS} WHERE {' AND '.join(where)} "
        "ORDER BY i.created_at DESC, i.id DESC LIMIT ?",
        (*params, limit),
    )
    # The transcript's real path stays in the store (capture reads it); listings show it redacted.
    return [
        {**dict(row), "source_file": _redacted(row["source_file"]), "is_open": bool(row["is_open"])}
        for row in rows
    ]


async def count_ideas(
    db: Database,
    *,
    intents: tuple[str, ...] = (),
    session: str | None = None,
    project_ids: Sequence[int] | None = None,
) -> dict[str, int]:
    """How many ideas of a listing's filters are stored, and how many are open, answered, completed,
    declined or superseded: what an empty listing says instead of "nothing stored" (`cairn questions
    --open` with five answered questions stored). An idea may be none of these: settled in its session
    without a link (`cairn.store.open_ideas`, rule 2)."""
    where, params = _idea_filters(intents, session, project_ids)
    row = await db.fetchone(
        f"""SELECT count(*) AS stored, coalesce(sum({OPEN}), 0) AS open,
                   coalesce(sum(i.answered_at IS NOT NULL), 0) AS answered,
                   coalesce(sum(i.completed_at IS NOT NULL), 0) AS completed,
                   coalesce(sum(i.declined_at IS NOT NULL), 0) AS declined,
                   coalesce(sum(i.superseded_by IS NOT NULL), 0) AS superseded
            {_IDEA_JOINS} WHERE {" AND ".join(where)}""",
        tuple(params),
    )
    return {key: int(value) for key, value in dict(row).items()} if row is not None else {}


def _redacted(path: str | None) -> str | None:
    return None if path is None else redact(path)


async def list_projects(db: Database, *, limit: int = 100) -> list[dict[str, Any]]:
    """Projects, most recently active first, with their sessions, ideas and open questions, and what
    each covers: `worktrees` (checkouts other than the root), `paths` (each session cwd with its
    checkout and session count) and `claude_dirs` — every one of them a value `--project` accepts."""
    rows = await db.fetchall(
        f"""
        SELECT p.id, p.name, p.path, p.found_by,
               count(DISTINCT s.id) AS sessions,
               (SELECT count(*) FROM ideas i JOIN sessions s2 ON s2.id = i.session_id
                WHERE s2.project_id = p.id) AS ideas,
               (SELECT count(*) FROM ideas i JOIN sessions s2 ON s2.id = i.session_id
                WHERE s2.project_id = p.id AND {OPEN_QUESTION}) AS open_questions,
               max(s.last_at) AS last_active
        FROM projects p LEFT JOIN sessions s ON s.project_id = p.id
        GROUP BY p.id
        ORDER BY last_active IS NULL, last_active DESC, p.name
        LIMIT ?
        """,
        (limit,),
    )
    projects = [dict(row) for row in rows]
    if not projects:
        return projects
    by_id = {project["id"]: project for project in projects}
    for project in projects:
        project.update(worktrees=[], paths=[], claude_dirs=[])
    marks = ",".join("?" * len(by_id))
    covered = await db.fetchall(
        f"""
        SELECT pp.project_id, pp.path, pp.kind, pp.checkout,
               (SELECT count(*) FROM sessions s WHERE s.project_id = pp.project_id AND s.cwd = pp.path)
                   AS sessions
        FROM project_paths pp WHERE pp.project_id IN ({marks}) ORDER BY pp.path
        """,
        tuple(by_id),
    )
    for row in covered:
        project = by_id[row["project_id"]]
        if row["kind"] == "claude_dir":
            project["claude_dirs"].append(row["path"])
            continue
        entry = {"path": row["path"], "checkout": row["checkout"], "sessions": row["sessions"]}
        project["paths"].append(entry)
        checkout = row["checkout"]
        if checkout and checkout != project["path"] and checkout not in project["worktrees"]:
            project["worktrees"].append(checkout)
    return projects


async def list_topics(db: Database, *, session: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Topic spans, per session in line order, with how many ideas each holds."""
    rows = await db.fetchall(
        """
        SELECT t.id, t.session_id AS session, p.name AS project, t.name, t.summary, t.start_line,
               t.end_line, t.depth, t.parent_id,
               (SELECT count(*) FROM ideas i WHERE i.span_id = t.id) AS ideas
        FROM topic_spans t
        LEFT JOIN sessions se ON se.id = t.session_id
        LEFT JOIN projects p ON p.id = se.project_id
        WHERE (? IS NULL OR t.session_id = ?)
        ORDER BY se.started_at DESC, t.session_id, t.start_line
        LIMIT ?
        """,
        (session, session, limit),
    )
    return [dict(row) for row in rows]


async def list_entities(db: Database, *, type: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Entities by how many ideas mention them, with their aliases."""
    rows = await db.fetchall(
        """
        SELECT e.id, e.canonical_name AS name, e.type,
               (SELECT group_concat(a.alias, ', ') FROM entity_aliases a WHERE a.entity_id = e.id) AS aliases,
               (SELECT count(*) FROM idea_entities ie WHERE ie.entity_id = e.id) AS ideas
        FROM entities e
        WHERE (? IS NULL OR e.type = ?)
        ORDER BY ideas DESC, e.canonical_name COLLATE NOCASE
        LIMIT ?
        """,
        (type, type, limit),
    )
    return [dict(row) for row in rows]
