"""`open_items`: what is still open — unanswered questions and problems, uncompleted todos.

They answer the `open_questions` op (the MCP tool of that name) and SessionStart's open sections: what a
person or the coding agent may want to pick up where work stopped. Superseded ideas are left out because
they were replaced, not left open. And an unanswered idea is open only if its session left it open
(`still_open`): raised after the session's last prompt from the person — the state the session ended in
— or put off explicitly ("not in this branch", "as a follow-up", "log an issue"; the offline indexer
marks a question whose reply put it off and a plan the person deferred so). Anything raised earlier
was followed by more work: the person replied, the agent went on, and it was answered, done, declined
or dropped in the turns after, whether or not the indexer saw where. A failed tool call is a step of
the work, never an open item — unless it failed on every retry and never passed, which the offline
indexer marks "(failed 4 times, never passed)": that stays open, wherever in the session it failed.
What the person says overrides these rules both ways (`cairn.lifecycle.correct`): an idea they
declined is not open, and one they reopened is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cairn.search.item_models import OpenItem, OpenItems
from cairn.search.items import BRIEF_COLUMNS, brief_of
from cairn.search.models import SessionInfo, item_id
from cairn.search.projects import resolve_projects
from cairn.store.db import Database

MAX_OPEN = 200
# Unanswered ideas read for the `still_open` rule to choose from, at most.
POOL = 5000

#: SQL columns, on `ideas i`, that the rules read: the kind of the message the idea was said in, the
#: line of the session's last prompt from the person, and whether the person reopened it.
FACTS = """
    (SELECT m.kind FROM messages m WHERE m.file_id = i.source_file_id
        AND m.line <= i.source_line AND m.end_line >= i.source_line
        ORDER BY m.line DESC LIMIT 1) AS source_kind,
    (SELECT max(m.line) FROM messages m WHERE m.file_id = i.source_file_id AND m.role = 'user'
        AND m.kind = 'text' AND m.is_sidechain = 0 AND m.is_noise = 0) AS last_prompt_line,
    EXISTS (SELECT 1 FROM idea_corrections c WHERE c.source_file_id = i.source_file_id
        AND c.source_line = i.source_line AND c.content_hash = i.content_hash AND c.state = 'open')
        AS reopened
"""

# Putting work off on purpose: it stays open, whenever in the session it was said. The offline indexer
# marks what it found put off ("Deferred: …", "(put off: let's do that in another PR)"), whatever words
# the session used; a model's idea says so in its own words.
_DEFERRED = re.compile(
    r"^Deferred: |\(put off: |"
    r"\b(?:follow[- ]?up|later|defer(?:red)?|postpone|not (?:in|for) this (?:branch|pr|change|session)|"
    r"separate (?:pr|issue|ticket|change|branch)|(?:log|file|open|create) (?:an? |the )?(?:\w+ )?"
    r"(?:issue|ticket|bug)|next session|out of scope|for another (?:day|time|pr))\b",
    re.I,
)


# A failure retried and never passed, as the offline indexer marks it (`cairn.agent.offline.given_up`).
_GIVEN_UP = re.compile(r"\(failed \d+ times, never passed\)$")


def still_open(row: Mapping[str, Any]) -> bool:
    """Whether an open question, problem or todo (a row with `FACTS`) is one the session left open."""
    if row["reopened"]:
        return True  # the person said so
    content = str(row["content"])
    if _GIVEN_UP.search(content):
        return True  # whenever it happened: nothing after it made it pass
    if row["source_kind"] == "tool_result":
        return False
    if _DEFERRED.search(content):
        return True
    last = row["last_prompt_line"]
    return last is None or (row["source_line"] is not None and int(row["source_line"]) > int(last))


#: Open: not answered (done), and not declined by the person.
OPEN_QUESTION = "i.intent IN ('question', 'problem') AND i.answered_at IS NULL AND i.declined_at IS NULL"
OPEN_TODO = "i.intent = 'todo' AND i.completed_at IS NULL AND i.declined_at IS NULL"


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
    rows = await db.fetchall(
        f"""
        SELECT {BRIEF_COLUMNS}, i.importance, i.span_id, i.source_line, p.path, p.name AS project_name,
               se.started_at, t.name AS topic, {FACTS}
        FROM ideas i
        LEFT JOIN sessions se ON se.id = i.session_id
        LEFT JOIN projects p ON p.id = se.project_id
        LEFT JOIN topic_spans t ON t.id = i.span_id
        WHERE {state} AND {filters}
        ORDER BY i.said_at DESC, i.id DESC LIMIT ?
        """,
        (*params, POOL),
    )
    open_rows = [row for row in rows if still_open(row)]
    items = [
        OpenItem(
            **brief_of(row).model_dump(),
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
        for row in open_rows[:limit]
    ]
    return items, len(open_rows)
