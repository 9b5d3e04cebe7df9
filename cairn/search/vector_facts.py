"""The fields a vector's Chroma metadata holds for filtering, read from SQLite instead.

The vector outbox copies each row's session, project, intent, superseded state and message kind into
its vector's metadata (`cairn.store.outbox.SOURCES`), so a search can filter inside Chroma. When the
search filters the nearest neighbours itself (`cairn.search.semantic`), reading those fields back from
Chroma costs ~0.1 ms a hit — 300 hits cost more than the nearest-neighbour search — while one indexed
SQLite statement reads them for every hit in about a millisecond. The dicts use the metadata's keys
and types, so `Filters.accepts` judges them exactly as it judges Chroma's metadata; being read from
the truth, they are never behind a write the outbox has not sent yet.
"""

from __future__ import annotations

import json
from typing import Any

from cairn.search.models import Kind
from cairn.store.db import Database

_PROJECT = """
    LEFT JOIN sessions AS s ON s.id = {session}
    LEFT JOIN projects AS p ON p.id = s.project_id
"""

# Each kind's fields, without and with the project's path: only a project filter reads the path, and
# its two joins cost the statement two thirds of its time (300 ideas: 1.07 ms with them, 0.33 without).
_SQL: dict[Kind, str] = {
    "idea": "SELECT t.id, t.session_id{project}, t.intent, t.superseded_by IS NOT NULL AS superseded "
    "FROM ideas AS t",
    "span": "SELECT t.id, t.session_id{project} FROM topic_spans AS t",
    "message": "SELECT t.id, t.session_id{project}, t.kind FROM messages AS t",
}

_PASSAGES = """
    SELECT t.id, t.message_id, m.session_id{project}, m.kind
    FROM message_passages AS t
    JOIN messages AS m ON m.id = t.message_id
"""

# SQLite answers 0/1 where the outbox stores a boolean (`VectorSource.flags`).
_FLAGS = frozenset({"superseded"})


def _select(template: str, session: str, project: bool) -> str:
    if not project:
        return template.format(project="")
    return template.format(project=", p.path AS project") + _PROJECT.format(session=session)


async def row_facts(
    db: Database, kind: Kind, ids: list[int], *, project: bool = True
) -> dict[int, dict[str, Any]]:
    """The metadata-equivalent fields of each row of `kind` among `ids` that exists, by id; without
    `project`, all but the project's path (no filter of the search reads it)."""
    return await _facts(db, _select(_SQL[kind], "t.session_id", project), ids)


async def passage_facts(db: Database, ids: list[int], *, project: bool = True) -> dict[int, dict[str, Any]]:
    """For each message passage among `ids`: its `message_id` and its message's fields, by passage id
    (without `project`, all but the project's path)."""
    return await _facts(db, _select(_PASSAGES, "m.session_id", project), ids)


async def _facts(db: Database, select: str, ids: list[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    rows = await db.fetchall(f"{select} WHERE t.id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
    facts: dict[int, dict[str, Any]] = {}
    # By position: `sqlite3.Row` finds a column by name by comparing it with each name in turn.
    names = rows[0].keys() if rows else []
    for row in rows:
        facts[int(row["id"])] = {
            key: bool(value) if key in _FLAGS else value
            for key, value in zip(names, row, strict=True)
            if key != "id" and value is not None
        }
    return facts
