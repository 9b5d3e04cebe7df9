"""The topic tools: a session's current and past spans, similar topics anywhere, the project/topic tree."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Mapping, Sequence

from pydantic_ai import RunContext

from cairn.store.db import Database
from cairn.tools.budget import metered
from cairn.tools.common import clamp, missing_session
from cairn.tools.deps import ToolDeps
from cairn.tools.matching import MIN_SIMILARITY, fts_match, fuse, semantic, similar_ids
from cairn.tools.results import (
    Notice,
    ProjectNode,
    SessionNode,
    SpanInfo,
    SpanList,
    SpanNode,
    TopicHierarchy,
    preview,
)

# Spans listed for one session, newest first; older ones are left out.
MAX_SESSION_SPANS = 50
# The hierarchy without a session: this many most recently active sessions that have spans...
MAX_HIERARCHY_SESSIONS = 15
# ...and, per session, its latest spans.
MAX_HIERARCHY_SPANS = 40

_SPAN_SELECT = """
    SELECT t.id, t.session_id, t.name, substr(t.summary, 1, 400) AS summary, t.start_line, t.end_line,
           t.depth, t.parent_id, (SELECT count(*) FROM ideas WHERE span_id = t.id) AS ideas
    FROM topic_spans t
"""


@metered
async def get_current_span(ctx: RunContext[ToolDeps], session: str) -> SpanInfo | Notice:
    """Show the topic span a session is in now: the open span (no end line) that started last.

    Use it before deciding whether the new messages continue this topic (update its name or summary
    with a topic_update) or shift to a new one (a topic_change from this span's id). Returns its id,
    name, summary, line range, depth, parent and how many ideas it holds.

    Args:
        session: The session id, as the batch gives it.
    """
    db = ctx.deps.db
    if notice := await missing_session(db, session):
        return notice
    row = await db.fetchone(
        _SPAN_SELECT + " WHERE t.session_id = ? AND t.end_line IS NULL ORDER BY t.start_line DESC, t.id DESC",
        (session,),
    )
    if row is not None:
        return _span_info(row)
    last = await db.fetchone(
        _SPAN_SELECT + " WHERE t.session_id = ? ORDER BY t.start_line DESC, t.id DESC", (session,)
    )
    if last is None:
        return Notice(notice=f"session {session!r} has no topic spans yet")
    return Notice(
        notice=f"session {session!r} has no open topic span; its latest span is {last['id']} "
        f"{last['name']!r} (lines {last['start_line']}-{last['end_line']})"
    )


@metered
async def list_session_spans(ctx: RunContext[ToolDeps], session: str) -> SpanList | Notice:
    """List a session's topic spans, newest first, with names, summaries and line ranges.

    Use it to see how a session's conversation has moved between topics, e.g. to tell a return to
    an earlier topic from a new one.

    Args:
        session: The session id, as the batch gives it.
    """
    db = ctx.deps.db
    if notice := await missing_session(db, session):
        return notice
    rows = await db.fetchall(
        _SPAN_SELECT + " WHERE t.session_id = ? ORDER BY t.start_line DESC, t.id DESC LIMIT ?",
        (session, MAX_SESSION_SPANS),
    )
    return SpanList(spans=[_span_info(row) for row in rows])


@metered
async def find_similar_topics(
    ctx: RunContext[ToolDeps], topic_name: str, limit: int = 5
) -> SpanList | Notice:
    """Find topic spans in any session whose name or summary is like the given topic, best first.

    Use it to link a discussion to earlier ones on the same subject, in this or other sessions and
    projects. `similarity` (0-1) is given for semantic matches.

    Args:
        topic_name: A topic name or a short description of the topic.
        limit: How many spans to return, 1-25.
    """
    deps = ctx.deps
    if not topic_name.strip():
        return Notice(notice="empty topic name: say which topic to look for")
    n = clamp(limit, 5)
    rankings: list[list[int]] = []
    match = fts_match(topic_name)
    if match is not None:
        rows = await deps.db.fetchall(
            """
            SELECT rowid AS id FROM spans_fts WHERE spans_fts MATCH ?
            ORDER BY bm25(spans_fts, 2.0, 1.0) LIMIT ?
            """,
            (match, 2 * n),
        )
        rankings.append([row["id"] for row in rows])
    similar = similar_ids(await semantic(deps, "spans", topic_name, 2 * n), MIN_SIMILARITY)
    rankings.append(list(similar))
    spans = await _spans_by_id(deps.db, fuse(rankings), similar)
    return SpanList(spans=spans[:n])


@metered
async def get_topic_hierarchy(
    ctx: RunContext[ToolDeps], session: str | None = None
) -> TopicHierarchy | Notice:
    """Show the project → session → topic tree: each span with its sub-topics (by parent).

    Without a session: the most recently active sessions that have topics, grouped by project.
    With one: just that session under its project. Use it to understand how a session's topics
    nest before placing a new one, or what other sessions of a project were about.

    Args:
        session: Only this session id.
    """
    db = ctx.deps.db
    if session is not None:
        if notice := await missing_session(db, session):
            return notice
        sessions = await db.fetchall(
            "SELECT id, project_id, started_at, last_at, git_branch FROM sessions WHERE id = ?", (session,)
        )
    else:
        sessions = await db.fetchall(
            """
            SELECT s.id, s.project_id, s.started_at, s.last_at, s.git_branch FROM sessions s
            WHERE EXISTS (SELECT 1 FROM topic_spans t WHERE t.session_id = s.id)
            ORDER BY coalesce(s.last_at, s.updated_at) DESC LIMIT ?
            """,
            (MAX_HIERARCHY_SESSIONS,),
        )
    session_ids = json.dumps([row["id"] for row in sessions])
    spans = await db.fetchall(
        """
        SELECT id, session_id, parent_id, name, start_line, end_line FROM (
            SELECT t.*, row_number() OVER (
                PARTITION BY t.session_id ORDER BY t.start_line DESC, t.id DESC) AS recency
            FROM topic_spans t WHERE t.session_id IN (SELECT value FROM json_each(?))
        ) WHERE recency <= ? ORDER BY session_id, start_line, id
        """,
        (session_ids, MAX_HIERARCHY_SPANS),
    )
    projects = await db.fetchall(
        """
        SELECT id, name, path FROM projects
        WHERE id IN (SELECT project_id FROM sessions WHERE id IN (SELECT value FROM json_each(?)))
        """,
        (session_ids,),
    )
    return TopicHierarchy(projects=_tree(sessions, spans, {row["id"]: row for row in projects}))


def _span_info(row: sqlite3.Row, similarity: float | None = None) -> SpanInfo:
    return SpanInfo(
        id=row["id"],
        session=row["session_id"],
        name=preview(row["name"], 120),
        summary=preview(row["summary"]) or None,
        start_line=row["start_line"],
        end_line=row["end_line"],
        open=row["end_line"] is None,
        depth=row["depth"],
        parent_id=row["parent_id"],
        ideas=row["ideas"],
        similarity=similarity,
    )


async def _spans_by_id(db: Database, ids: Sequence[int], similarity: Mapping[int, float]) -> list[SpanInfo]:
    """Spans `ids` that still exist, in that order (vectors may outlive their rows for a moment)."""
    if not ids:
        return []
    rows = await db.fetchall(
        _SPAN_SELECT + " WHERE t.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
    )
    by_id = {row["id"]: row for row in rows}
    return [_span_info(by_id[i], similarity.get(i)) for i in ids if i in by_id]


def _tree(
    sessions: Sequence[sqlite3.Row], spans: Sequence[sqlite3.Row], projects: Mapping[int, sqlite3.Row]
) -> list[ProjectNode]:
    """Sessions (in their order) grouped under their projects, projects in order of first session."""
    spans_of: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for span in spans:
        spans_of[span["session_id"]].append(span)
    nodes: dict[int | None, ProjectNode] = {}
    for session in sessions:
        project_id = session["project_id"]
        if project_id not in nodes:
            project = projects.get(project_id)
            nodes[project_id] = ProjectNode(
                name=project["name"] if project else "(no project)",
                path=project["path"] if project else None,
                sessions=[],
            )
        nodes[project_id].sessions.append(
            SessionNode(
                id=session["id"],
                started_at=session["started_at"],
                last_at=session["last_at"],
                branch=session["git_branch"],
                spans=_forest(spans_of[session["id"]]),
            )
        )
    return list(nodes.values())


def _forest(rows: Sequence[sqlite3.Row]) -> list[SpanNode]:
    """One session's spans as trees by `parent_id`, in start order.

    A span whose parent is not among `rows` is a root. The executor should never make a parent
    cycle, but if the data holds one, its spans are still listed (from the first of them) and
    every span appears once, so a bad row cannot hide spans or recurse forever.
    """
    ids = {row["id"] for row in rows}
    children: dict[int, list[sqlite3.Row]] = defaultdict(list)
    for row in rows:
        if row["parent_id"] in ids and row["parent_id"] != row["id"]:
            children[row["parent_id"]].append(row)
    placed: set[int] = set()

    def build(row: sqlite3.Row) -> SpanNode:
        placed.add(row["id"])
        kids = [build(kid) for kid in children[row["id"]] if kid["id"] not in placed]
        return SpanNode(
            id=row["id"],
            name=preview(row["name"], 120),
            start_line=row["start_line"],
            end_line=row["end_line"],
            children=kids or None,
        )

    roots = [build(row) for row in rows if row["parent_id"] not in ids or row["parent_id"] == row["id"]]
    roots.extend(build(row) for row in rows if row["id"] not in placed)
    return roots
