"""Read-only lookups of single items: one item in full (`show`), the ideas around it (`timeline`), and
what is still open (`open_items`).

Search hands out short previews and ids; these are how a person or the coding agent follows an id up —
`cairn show 123`, `cairn timeline s12`, the MCP `show`/`timeline`/`open_questions` tools. Nothing here
writes: looking at an item is not a use of it, so `usage_count` stays as search left it.

Every kind of item comes back as the same `ItemDetail` with the fields that do not apply left empty,
so JSON consumers read one shape instead of switching on three.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from cairn.search.errors import ItemNotFoundError
from cairn.search.filters import SPAN_FILE, SPAN_SAID_AT
from cairn.search.models import Kind, SessionInfo, SourceLocation, item_id, parse_item_id, preview
from cairn.search.projects import resolve_projects
from cairn.store.db import Database

# A span lists at most this many of its ideas (in line order); `idea_count` says how many it holds.
MAX_SPAN_IDEAS = 50
# Sub-spans listed under a span.
MAX_CHILDREN = 50
# Ideas extracted from one message; a message rarely yields more than a handful.
MAX_MESSAGE_IDEAS = 50
# Relations listed per direction: a hub idea can be related to hundreds of others.
MAX_RELATIONS = 100
# Ideas a superseding idea lists as the ones it replaced.
MAX_SUPERSEDES = 50
MAX_TIMELINE_SIDE = 50
MAX_OPEN = 200


class IdeaBrief(BaseModel):
    """An idea in one line: enough to decide whether to `show` it."""

    id: str
    intent: str
    preview: str = Field(description="The content on one line, at most 200 characters.")
    said_at: str | None = None
    superseded: bool = False
    session_id: str | None = None


class ItemBrief(BaseModel):
    """Any item in one line — the anchor of a timeline, which may be an idea, a span or a message."""

    id: str
    kind: Kind
    intent: str | None = Field(default=None, description="Idea intent; a message's role; None for spans.")
    title: str | None = Field(default=None, description="A span's name.")
    preview: str
    said_at: str | None = None
    superseded: bool = False
    session_id: str | None = None


class RelationLink(BaseModel):
    """One relation of an idea. `outgoing`: this idea `type`s the other (it supersedes/answers/builds on
    it); `incoming`: the other idea `type`s this one."""

    type: str
    direction: Literal["outgoing", "incoming"]
    idea: IdeaBrief


class EntityRef(BaseModel):
    id: int
    name: str
    type: str


class SpanBrief(BaseModel):
    id: str
    name: str
    start_line: int
    end_line: int | None = None
    ideas: int = Field(default=0, description="How many ideas the span holds.")


class ItemDetail(BaseModel):
    """One idea, topic span or message in full. Fields that do not apply to the kind are None or empty."""

    id: str
    kind: Kind
    intent: str | None = Field(default=None, description="Idea intent; a message's role; None for spans.")
    title: str | None = Field(default=None, description="A span's name.")
    content: str = Field(description="An idea's content, a span's summary (its name if none), a message.")
    said_at: str | None = Field(default=None, description="When it was said in the conversation.")
    created_at: str | None = Field(default=None, description="When cairn stored it.")
    session: SessionInfo | None = Field(
        default=None, description="Its session; `topic` is the enclosing span (a span's parent)."
    )
    source: SourceLocation = Field(default_factory=SourceLocation)
    end_line: int | None = Field(default=None, description="Last line of a span or a multi-line message.")
    # Ideas
    importance: float | None = None
    confidence: float | None = None
    usage_count: int | None = None
    superseded: bool = False
    superseded_by: IdeaBrief | None = None
    supersedes: list[IdeaBrief] = Field(default_factory=list)
    answered_by: IdeaBrief | None = None
    answers: list[IdeaBrief] = Field(default_factory=list, description="Questions/problems this answers.")
    resolution: str | None = None
    answered_at: str | None = None
    completed_at: str | None = None
    relations: list[RelationLink] = Field(default_factory=list)
    entities: list[EntityRef] = Field(default_factory=list)
    # Spans (their ideas) and messages (the ideas extracted from them)
    ideas: list[IdeaBrief] = Field(default_factory=list)
    idea_count: int | None = Field(default=None, description="Ideas a span holds (`ideas` may be capped).")
    children: list[SpanBrief] = Field(default_factory=list, description="A span's sub-spans.")
    depth: int | None = None


class SessionSummary(BaseModel):
    id: str
    project: str | None = None
    project_name: str | None = None
    started_at: str | None = None
    last_at: str | None = None
    topics: int = Field(default=0, description="Topic spans in the session.")
    first_topic: str | None = None


class Timeline(BaseModel):
    """Ideas said just before and just after an anchor, each list oldest first."""

    anchor: ItemBrief
    before: list[IdeaBrief]
    after: list[IdeaBrief]
    scope: Literal["project", "session", "all"] = Field(
        description="Where the ideas come from: the anchor's project, its session (no project), or all."
    )
    project: str | None = None
    project_name: str | None = None
    sessions: dict[str, SessionSummary] = Field(default_factory=dict)


class OpenItem(IdeaBrief):
    session: SessionInfo | None = None
    importance: float | None = None


class OpenItems(BaseModel):
    """Unanswered questions and problems, uncompleted todos — newest first, superseded ones left out."""

    questions: list[OpenItem] = Field(default_factory=list)
    todos: list[OpenItem] = Field(default_factory=list)
    question_count: int = Field(default=0, description="All open questions/problems (`questions` is capped).")
    todo_count: int = 0
    notice: str | None = None


# ---------------------------------------------------------------------------------------------------
# show


async def show(db: Database, item: str | int) -> ItemDetail:
    """The item `item` names, in full; `BadItemIdError` for a malformed id, `ItemNotFoundError` if absent."""
    kind, row_id = parse_item_id(item)
    if kind == "idea":
        return await _show_idea(db, row_id)
    if kind == "span":
        return await _show_span(db, row_id)
    return await _show_message(db, row_id)


def _not_found(kind: Kind, row_id: int) -> ItemNotFoundError:
    label = {"idea": f"idea #{row_id}", "span": f"topic span s{row_id}", "message": f"message m{row_id}"}
    return ItemNotFoundError(
        f"no {label[kind]} in the store (it may have been deleted, or the id mistyped); "
        "search again for a current id"
    )


_BRIEF_COLUMNS = "i.id, i.intent, i.content, i.said_at, i.superseded_by, i.session_id"


def _brief(row: sqlite3.Row) -> IdeaBrief:
    return IdeaBrief(
        id=item_id("idea", int(row["id"])),
        intent=str(row["intent"]),
        preview=preview(str(row["content"])),
        said_at=row["said_at"],
        superseded=row["superseded_by"] is not None,
        session_id=row["session_id"],
    )


async def _briefs(db: Database, where: str, params: Sequence[Any], order: str, limit: int) -> list[IdeaBrief]:
    rows = await db.fetchall(
        f"SELECT {_BRIEF_COLUMNS} FROM ideas i WHERE {where} ORDER BY {order} LIMIT ?", (*params, limit)
    )
    return [_brief(row) for row in rows]


async def _idea_brief(db: Database, idea: int | None) -> IdeaBrief | None:
    if idea is None:
        return None
    found = await _briefs(db, "i.id = ?", (idea,), "i.id", 1)
    return found[0] if found else None


async def _session_info(db: Database, session: str | None, topic: int | None) -> SessionInfo | None:
    """The session `session` with `topic` (a span id) as the topic the item falls in."""
    if session is None:
        return None
    row = await db.fetchone(
        """
        SELECT se.id, p.path, p.name, se.started_at, (SELECT name FROM topic_spans WHERE id = ?) AS topic
        FROM sessions se LEFT JOIN projects p ON p.id = se.project_id
        WHERE se.id = ?
        """,
        (topic, session),
    )
    if row is None:
        # A session id with no sessions row (written before its session was recorded) is still a name.
        return SessionInfo(id=session)
    return SessionInfo(
        id=str(row["id"]),
        project=row["path"],
        project_name=row["name"],
        started_at=row["started_at"],
        topic=row["topic"],
        topic_id=None if row["topic"] is None or topic is None else item_id("span", topic),
    )


async def _show_idea(db: Database, idea: int) -> ItemDetail:
    row = await db.fetchone(
        """
        SELECT i.*, f.path AS file FROM ideas i
        LEFT JOIN transcript_files f ON f.id = i.source_file_id
        WHERE i.id = ?
        """,
        (idea,),
    )
    if row is None:
        raise _not_found("idea", idea)
    relations = [
        RelationLink(type=str(link["relation_type"]), direction="outgoing", idea=_brief(link))
        for link in await db.fetchall(
            f"""
            SELECT r.relation_type, {_BRIEF_COLUMNS} FROM relations r JOIN ideas i ON i.id = r.to_idea_id
            WHERE r.from_idea_id = ? ORDER BY r.id LIMIT ?
            """,
            (idea, MAX_RELATIONS),
        )
    ]
    relations += [
        RelationLink(type=str(link["relation_type"]), direction="incoming", idea=_brief(link))
        for link in await db.fetchall(
            f"""
            SELECT r.relation_type, {_BRIEF_COLUMNS} FROM relations r JOIN ideas i ON i.id = r.from_idea_id
            WHERE r.to_idea_id = ? ORDER BY r.id LIMIT ?
            """,
            (idea, MAX_RELATIONS),
        )
    ]
    entities = await db.fetchall(
        """
        SELECT e.id, e.canonical_name, e.type FROM idea_entities ie JOIN entities e ON e.id = ie.entity_id
        WHERE ie.idea_id = ? ORDER BY e.canonical_name COLLATE NOCASE, e.id
        """,
        (idea,),
    )
    return ItemDetail(
        id=item_id("idea", idea),
        kind="idea",
        intent=row["intent"],
        content=row["content"],
        said_at=row["said_at"],
        created_at=row["created_at"],
        session=await _session_info(db, row["session_id"], row["span_id"]),
        source=SourceLocation(file=row["file"], line=row["source_line"]),
        importance=row["importance"],
        confidence=row["confidence"],
        usage_count=row["usage_count"],
        superseded=row["superseded_by"] is not None,
        superseded_by=await _idea_brief(db, row["superseded_by"]),
        supersedes=await _briefs(db, "i.superseded_by = ?", (idea,), "i.said_at, i.id", MAX_SUPERSEDES),
        answered_by=await _idea_brief(db, row["answered_by"]),
        answers=await _briefs(db, "i.answered_by = ?", (idea,), "i.said_at, i.id", MAX_SUPERSEDES),
        resolution=row["resolution"],
        answered_at=row["answered_at"],
        completed_at=row["completed_at"],
        relations=relations,
        entities=[EntityRef(id=e["id"], name=e["canonical_name"], type=e["type"]) for e in entities],
    )


async def _show_span(db: Database, span: int) -> ItemDetail:
    row = await db.fetchone(
        f"""
        SELECT t.*, {SPAN_SAID_AT} AS said_at,
               (SELECT path FROM transcript_files WHERE id = {SPAN_FILE}) AS file,
               (SELECT count(*) FROM ideas WHERE span_id = t.id) AS idea_count
        FROM topic_spans t WHERE t.id = ?
        """,
        (span,),
    )
    if row is None:
        raise _not_found("span", span)
    children = await db.fetchall(
        """
        SELECT t.id, t.name, t.start_line, t.end_line, (SELECT count(*) FROM ideas WHERE span_id = t.id) AS n
        FROM topic_spans t WHERE t.parent_id = ? AND t.id <> ? ORDER BY t.start_line, t.id LIMIT ?
        """,
        (span, span, MAX_CHILDREN),
    )
    summary = str(row["summary"]).strip()
    return ItemDetail(
        id=item_id("span", span),
        kind="span",
        title=row["name"],
        content=summary or row["name"],
        said_at=row["said_at"],
        created_at=row["created_at"],
        session=await _session_info(db, row["session_id"], row["parent_id"]),
        source=SourceLocation(file=row["file"], line=row["start_line"]),
        end_line=row["end_line"],
        ideas=await _briefs(
            db, "i.span_id = ?", (span,), "i.source_line IS NULL, i.source_line, i.id", MAX_SPAN_IDEAS
        ),
        idea_count=row["idea_count"],
        children=[
            SpanBrief(
                id=item_id("span", c["id"]),
                name=c["name"],
                start_line=c["start_line"],
                end_line=c["end_line"],
                ideas=c["n"],
            )
            for c in children
        ],
        depth=row["depth"],
    )


async def _show_message(db: Database, message: int) -> ItemDetail:
    row = await db.fetchone(
        """
        SELECT m.id, m.session_id, m.file_id, m.line, m.end_line, m.role, m.text, m.timestamp, m.created_at,
               f.path AS file
        FROM messages m LEFT JOIN transcript_files f ON f.id = m.file_id WHERE m.id = ?
        """,
        (message,),
    )
    if row is None:
        raise _not_found("message", message)
    line = int(row["line"])
    topic = await db.scalar(
        """
        SELECT id FROM topic_spans
        WHERE session_id = ? AND start_line <= ? AND (end_line IS NULL OR end_line >= ?)
        ORDER BY depth DESC, start_line DESC, id DESC LIMIT 1
        """,
        (row["session_id"], line, line),
    )
    ideas = await _briefs(
        db,
        "i.source_file_id = ? AND i.source_line BETWEEN ? AND ?",
        (row["file_id"], line, row["end_line"]),
        "i.source_line, i.id",
        MAX_MESSAGE_IDEAS,
    )
    return ItemDetail(
        id=item_id("message", message),
        kind="message",
        intent=row["role"],
        content=row["text"],
        said_at=row["timestamp"],
        created_at=row["created_at"],
        session=await _session_info(db, row["session_id"], topic),
        source=SourceLocation(file=row["file"], line=line),
        end_line=row["end_line"] if row["end_line"] != line else None,
        ideas=ideas,
    )


# ---------------------------------------------------------------------------------------------------
# timeline


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
    earlier = await _briefs(
        db,
        f"{where} AND i.said_at <= ? AND (i.said_at < ? OR i.id < ?)",
        (*params, time, time, tie),
        "i.said_at DESC, i.id DESC",
        before,
    )
    later = await _briefs(
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
    if kind == "idea":
        row = await db.fetchone(
            "SELECT id, intent, content, coalesce(said_at, created_at) AS said_at, superseded_by, session_id "
            "FROM ideas WHERE id = ?",
            (row_id,),
        )
        if row is None:
            raise _not_found(kind, row_id)
        idea = _brief(row)
        return ItemBrief(kind="idea", **idea.model_dump()), str(row["said_at"]), row_id
    if kind == "span":
        row = await db.fetchone(
            f"SELECT t.name, t.summary, t.session_id, {SPAN_SAID_AT} AS said_at FROM topic_spans t "
            "WHERE t.id = ?",
            (row_id,),
        )
        if row is None:
            raise _not_found(kind, row_id)
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
        "SELECT role, text, coalesce(timestamp, created_at) AS said_at, session_id "
        "FROM messages WHERE id = ?",
        (row_id,),
    )
    if row is None:
        raise _not_found(kind, row_id)
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


# ---------------------------------------------------------------------------------------------------
# open items

_OPEN_QUESTION = "i.intent IN ('question', 'problem') AND i.answered_at IS NULL"
_OPEN_TODO = "i.intent = 'todo' AND i.completed_at IS NULL"


async def open_items(
    db: Database,
    *,
    project: str | None = None,
    session: str | None = None,
    include_todos: bool = True,
    limit: int = 50,
) -> OpenItems:
    """Unanswered questions and problems (and uncompleted todos), newest first, up to `limit` (1..200)
    of each; superseded ones are left out — they were replaced, not left open.

    `project` is a path or a name; one that matches no project gives an empty answer with a `notice`,
    not every project's items, since the caller asked about one place.
    """
    limit = max(1, min(MAX_OPEN, limit))
    where, params = ["i.superseded_by IS NULL"], list[Any]()
    if project is not None:
        matched = await resolve_projects(db, project)
        if not matched:
            return OpenItems(
                notice=f"no project matches {project[:200]!r}; give a project path or name as listed "
                "by `cairn projects`, or leave it out for all projects"
            )
        marks = ",".join("?" * len(matched))
        where.append(f"i.session_id IN (SELECT id FROM sessions WHERE project_id IN ({marks}))")
        params.extend(project_id for project_id, _ in matched)
    if session is not None:
        where.append("i.session_id = ?")
        params.append(session)
    filters = " AND ".join(where)
    questions, question_count = await _open(db, _OPEN_QUESTION, filters, params, limit)
    todos: list[OpenItem] = []
    todo_count = 0
    if include_todos:
        todos, todo_count = await _open(db, _OPEN_TODO, filters, params, limit)
    notice = None
    if session is not None and not await db.scalar("SELECT 1 FROM sessions WHERE id = ?", (session,)):
        notice = f"no session {session[:200]!r} is stored; pass a session id as search results show it"
    return OpenItems(
        questions=questions,
        todos=todos,
        question_count=question_count,
        todo_count=todo_count,
        notice=notice,
    )


async def _open(
    db: Database, state: str, filters: str, params: Sequence[Any], limit: int
) -> tuple[list[OpenItem], int]:
    rows = await db.fetchall(
        f"""
        SELECT {_BRIEF_COLUMNS}, i.importance, i.span_id, p.path, p.name AS project_name, se.started_at,
               t.name AS topic
        FROM ideas i
        LEFT JOIN sessions se ON se.id = i.session_id
        LEFT JOIN projects p ON p.id = se.project_id
        LEFT JOIN topic_spans t ON t.id = i.span_id
        WHERE {state} AND {filters}
        ORDER BY i.said_at DESC, i.id DESC LIMIT ?
        """,
        (*params, limit),
    )
    items = [
        OpenItem(
            **_brief(row).model_dump(),
            importance=row["importance"],
            session=None
            if row["session_id"] is None
            else SessionInfo(
                id=row["session_id"],
                project=row["path"],
                project_name=row["project_name"],
                started_at=row["started_at"],
                topic=row["topic"],
                topic_id=None if row["topic"] is None else item_id("span", row["span_id"]),
            ),
        )
        for row in rows
    ]
    count = len(items)
    if count == limit:
        count = int(await db.scalar(f"SELECT count(*) FROM ideas i WHERE {state} AND {filters}", params) or 0)
    return items, count
