"""`timeline`: the ideas said just before and just after an item, for the context it was said in.

An anchor (idea, span or message) is placed in time, and its neighbours come from the place a person
remembers working in — the anchor's project, across its sessions — so a decision is seen next to what
led to it and what followed. Reading a big project's neighbours cheaply needs a query plan chosen per
project, which is why this is more than a sort.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, Literal

from cairn.search.errors import SearchError
from cairn.search.filters import SPAN_SAID_AT, TABLES
from cairn.search.item_models import ItemBrief, SessionSummary, Timeline
from cairn.search.items import brief_of, briefs, not_found
from cairn.search.models import item_id, parse_item_id, preview
from cairn.store.db import Database

MAX_TIMELINE_SIDE = 50


async def timeline(db: Database, anchor: str | int, *, before: int = 5, after: int = 5) -> Timeline:
    """The `before` ideas said just before `anchor` and the `after` ideas said at or after it (0..50 each).

    The ideas come from the anchor's project — a project is what a person remembers working on, across
    sessions — or from its session when that has no project (from everywhere when the anchor has no
    session at all). Ideas said at the very same time are
    ordered by id; an idea anchor sits between the ideas with lower and higher ids, while a span or
    message anchor comes before everything said at its own time (what it led to).
    """
    before = max(0, min(MAX_TIMELINE_SIDE, before))
    after = max(0, min(MAX_TIMELINE_SIDE, after))
    brief, time, tie = await _anchor(db, anchor)
    scope: Literal["project", "session", "all"] = "all"
    project: sqlite3.Row | None = None
    where, params = "1 = 1", list[Any]()
    if brief.session_id is not None:
        project = await db.fetchone(
            "SELECT p.id, p.path, p.name FROM sessions se JOIN projects p ON p.id = se.project_id "
            "WHERE se.id = ?",
            (brief.session_id,),
        )
        if project is not None:
            scope = "project"
            where = await _project_filter(db, int(project["id"]))
            params = [project["id"]]
        else:
            scope = "session"
            where, params = "i.session_id = ?", [brief.session_id]
    # `said_at <= ?` alone is the range the said_at index serves; the OR only settles ties.
    earlier = await briefs(
        db,
        f"{where} AND i.said_at <= ? AND (i.said_at < ? OR i.id < ?)",
        (*params, time, time, tie),
        "i.said_at DESC, i.id DESC",
        before,
    )
    later = await briefs(
        db,
        f"{where} AND i.said_at >= ? AND (i.said_at > ? OR i.id > ?)",
        (*params, time, time, tie),
        "i.said_at, i.id",
        after,
    )
    earlier.reverse()
    sessions = [brief.session_id, *(idea.session_id for idea in [*earlier, *later])]
    return Timeline(
        anchor=brief,
        before=earlier,
        after=later,
        scope=scope,
        project=None if project is None else project["path"],
        project_name=None if project is None else project["name"],
        sessions=await _session_summaries(db, sessions),
    )


# A project with at least this share of the sessions is walked along the said_at index (about 1/share
# rows read per idea returned); a smaller one is read whole through its sessions and sorted.
_BIG_PROJECT_SHARE = 0.05


async def _project_filter(db: Database, project: int) -> str:
    """The WHERE clause for ideas of `project`, steering SQLite to the cheaper of two plans.

    Without statistics SQLite always takes the session index: it reads and sorts every idea of the
    project, slow for the one project that holds most of a store. Walking the said_at index instead
    stops after `before`/`after` matches, but for a small project it would step over everyone else's
    ideas first. The project's share of the sessions tells which case this is; the unary `+` keeps
    SQLite off the session index.
    """
    row = await db.fetchone(
        "SELECT count(*) AS total, coalesce(sum(project_id = ?), 0) AS mine FROM sessions", (project,)
    )
    big = row is not None and row["mine"] >= _BIG_PROJECT_SHARE * row["total"]
    column = "+i.session_id" if big else "i.session_id"
    return f"{column} IN (SELECT id FROM sessions WHERE project_id = ?)"


async def _anchor(db: Database, anchor: str | int) -> tuple[ItemBrief, str, int]:
    """The anchor's brief, its time, and its id among ideas said at that time (0: before all of them)."""
    kind, row_id = parse_item_id(anchor)
    if kind == "chunk":
        raise SearchError(
            f"c{row_id} is a part of a project file, which has no place in the conversation's timeline; "
            "`show` it, or give the id of an idea, topic span or message"
        )
    if kind == "idea":
        row = await db.fetchone(
            "SELECT id, intent, content, coalesce(said_at, created_at) AS said_at, superseded_by, session_id "
            "FROM ideas WHERE id = ?",
            (row_id,),
        )
        if row is None:
            raise not_found(kind, row_id)
        idea = brief_of(row)
        return ItemBrief(kind="idea", **idea.model_dump()), str(row["said_at"]), row_id
    if kind == "span":
        row = await db.fetchone(
            f"SELECT t.name, t.summary, t.session_id, {SPAN_SAID_AT} AS said_at FROM topic_spans t "
            "WHERE t.id = ?",
            (row_id,),
        )
        if row is None:
            raise not_found(kind, row_id)
        brief = ItemBrief(
            id=item_id(kind, row_id),
            kind=kind,
            title=row["name"],
            preview=preview(str(row["summary"]).strip() or str(row["name"])),
            said_at=row["said_at"],
            session_id=row["session_id"],
        )
        return brief, str(row["said_at"]), 0
    row = await db.fetchone(
        f"SELECT t.role, t.text, {TABLES['message'].said_at} AS said_at, t.session_id "
        "FROM messages AS t WHERE t.id = ?",
        (row_id,),
    )
    if row is None:
        raise not_found(kind, row_id)
    brief = ItemBrief(
        id=item_id(kind, row_id),
        kind=kind,
        intent=row["role"],
        preview=preview(str(row["text"])),
        said_at=row["said_at"],
        session_id=row["session_id"],
    )
    return brief, str(row["said_at"]), 0


async def _session_summaries(db: Database, sessions: Iterable[str | None]) -> dict[str, SessionSummary]:
    wanted = list(dict.fromkeys(s for s in sessions if s is not None))
    if not wanted:
        return {}
    rows = await db.fetchall(
        f"""
        SELECT se.id, p.path, p.name, se.started_at, se.last_at,
               (SELECT count(*) FROM topic_spans WHERE session_id = se.id) AS topics,
               (SELECT name FROM topic_spans WHERE session_id = se.id
                ORDER BY start_line, id LIMIT 1) AS first_topic
        FROM sessions se LEFT JOIN projects p ON p.id = se.project_id
        WHERE se.id IN ({",".join("?" * len(wanted))})
        """,
        wanted,
    )
    found = {
        str(row["id"]): SessionSummary(
            id=str(row["id"]),
            project=row["path"],
            project_name=row["name"],
            started_at=row["started_at"],
            last_at=row["last_at"],
            topics=row["topics"],
            first_topic=row["first_topic"],
        )
        for row in rows
    }
    return {session: found.get(session, SessionSummary(id=session)) for session in wanted}
