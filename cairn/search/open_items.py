"""`open_items`: what is still open — questions and problems, todos — as the `open_questions` op lists it.

They answer the `open_questions` op (the MCP tool of that name) and are what SessionStart's open
sections, the viewer's board and `cairn questions --open` list: what a person or the coding agent may
want to pick up where work stopped. What counts as open is defined once, in `cairn.store.open_ideas`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cairn.search.item_models import OpenItem, OpenItems
from cairn.search.items import BRIEF_COLUMNS, brief_of
from cairn.search.models import SessionInfo, item_id
from cairn.search.projects import resolve_projects
from cairn.store.db import Database
from cairn.store.open_ideas import OPEN_QUESTION, OPEN_TODO

MAX_OPEN = 200


async def open_items(
    db: Database,
    *,
    project: str | None = None,
    session: str | None = None,
    include_todos: bool = True,
    limit: int = 50,
) -> OpenItems:
    """Unanswered questions and problems (and uncompleted todos), newest first, up to `limit` (1..200)
    of each; superseded ones are left out — they were replaced, not left open — and declined ones.

    `project` is a path or a name; one that matches no project gives an empty answer with a `notice`,
    not every project's items, since the caller asked about one place.
    """
    limit = max(1, min(MAX_OPEN, limit))
    where, params = ["1 = 1"], list[Any]()
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
    questions, question_count = await _open(db, OPEN_QUESTION, filters, params, limit)
    todos: list[OpenItem] = []
    todo_count = 0
    if include_todos:
        todos, todo_count = await _open(db, OPEN_TODO, filters, params, limit)
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
    where = f"{state} AND {filters}"
    count = await db.scalar(f"SELECT count(*) FROM ideas i WHERE {where}", tuple(params))
    rows = await db.fetchall(
        f"""
        SELECT {BRIEF_COLUMNS}, i.importance, i.state, i.span_id, p.path, p.name AS project_name,
               se.started_at, t.name AS topic
        FROM ideas i
        LEFT JOIN sessions se ON se.id = i.session_id
        LEFT JOIN projects p ON p.id = se.project_id
        LEFT JOIN topic_spans t ON t.id = i.span_id
        WHERE {where}
        ORDER BY i.said_at DESC, i.id DESC LIMIT ?
        """,
        (*params, limit),
    )
    items = [
        OpenItem(
            **brief_of(row).model_dump(),
            importance=row["importance"],
            state=row["state"],
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
    return items, int(count or 0)
