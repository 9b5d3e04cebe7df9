"""Loading search candidates: one query per kind for the rows, their session context and the facts
ranking needs (time, importance, usage, superseded state, related count).

Loading applies the filters again in SQL: vector candidates were filtered only as far as Chroma's
metadata goes, and this is where time ranges, the page snapshot and message kinds are enforced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind, SessionInfo, SourceLocation, SupersededBy, item_id, preview
from cairn.store.db import Database

# Message kinds weighed by their own `search_boosts` entry; other messages (prose) use "message".
_OWN_BOOST = frozenset({"tool_result", "compact_summary"})
_CONTEXT = """
    se.started_at AS started_at, p.path AS project, p.name AS project_name, f.path AS file
"""
_CONTEXT_JOINS = """
    LEFT JOIN sessions AS se ON se.id = t.session_id
    LEFT JOIN projects AS p ON p.id = se.project_id
"""
# The innermost topic span of the item's session that covers `line_expr`.
_COVERING_SPAN = """
    (SELECT sp.{col} FROM topic_spans AS sp
     WHERE sp.session_id = t.session_id AND sp.start_line <= {line}
       AND (sp.end_line IS NULL OR sp.end_line >= {line})
     ORDER BY sp.depth DESC, sp.start_line DESC, sp.id DESC LIMIT 1)
"""

_SQL: dict[Kind, str] = {
    "idea": f"""
        SELECT t.id, t.intent, t.content, t.importance, t.usage_count AS usage, t.said_at, t.session_id,
               t.source_file_id AS file_id, t.source_line AS line, t.superseded_by,
               sup.content AS sup_content, sup.said_at AS sup_said_at,
               sp.id AS topic_id, sp.name AS topic,
               (SELECT count(*) FROM relations AS r WHERE r.from_idea_id = t.id)
               + (SELECT count(*) FROM relations AS r WHERE r.to_idea_id = t.id) AS related,
               {_CONTEXT}
        FROM ideas AS t {_CONTEXT_JOINS}
        LEFT JOIN transcript_files AS f ON f.id = t.source_file_id
        LEFT JOIN topic_spans AS sp ON sp.id = t.span_id
        LEFT JOIN ideas AS sup ON sup.id = t.superseded_by
    """,
    "span": f"""
        SELECT t.id, NULL AS intent,
               t.name || CASE WHEN trim(t.summary) <> '' THEN ': ' || t.summary ELSE '' END AS content,
               NULL AS importance, 0 AS usage, {TABLES["span"].said_at} AS said_at, t.session_id,
               t.file_id, t.start_line AS line, NULL AS superseded_by,
               NULL AS sup_content, NULL AS sup_said_at,
               parent.id AS topic_id, parent.name AS topic,
               (SELECT count(*) FROM ideas AS i WHERE i.span_id = t.id) AS related,
               {_CONTEXT}
        FROM topic_spans AS t {_CONTEXT_JOINS}
        LEFT JOIN transcript_files AS f ON f.id = t.file_id
        LEFT JOIN topic_spans AS parent ON parent.id = t.parent_id
    """,
    "message": f"""
        SELECT t.id, t.role AS intent, t.text AS content, NULL AS importance, 0 AS usage,
               {TABLES["message"].said_at} AS said_at, t.session_id, t.file_id, t.line,
               t.kind AS message_kind,
               NULL AS superseded_by, NULL AS sup_content, NULL AS sup_said_at,
               {_COVERING_SPAN.format(col="id", line="t.line")} AS topic_id,
               {_COVERING_SPAN.format(col="name", line="t.line")} AS topic,
               (SELECT count(*) FROM ideas AS i WHERE i.source_file_id = t.file_id AND i.source_line = t.line)
                   AS related,
               {_CONTEXT}
        FROM messages AS t {_CONTEXT_JOINS}
        LEFT JOIN transcript_files AS f ON f.id = t.file_id
    """,
}


@dataclass(frozen=True)
class Item:
    """A loaded candidate: what ranking needs and what the result shows."""

    kind: Kind
    row_id: int
    intent: str | None
    content: str
    said_at: str | None
    importance: float | None
    usage: int
    superseded_by: SupersededBy | None
    related: int
    session: SessionInfo | None
    source: SourceLocation
    source_key: tuple[int, int] | None
    boost_key: str

    @property
    def id(self) -> str:
        return item_id(self.kind, self.row_id)


async def load(db: Database, kind: Kind, ids: list[int], filters: Filters) -> dict[int, Item]:
    """The candidates of `kind` among `ids` that pass `filters`, by row id."""
    if not ids:
        return {}
    where, params = filters.sql(kind)
    rows = await db.fetchall(
        f"{_SQL[kind]} WHERE t.id IN (SELECT value FROM json_each(?)) AND {where}",
        (json.dumps(ids), *params),
    )
    items = {}
    for row in rows:
        session = None
        if row["session_id"] is not None:
            session = SessionInfo(
                id=row["session_id"],
                project=row["project"],
                project_name=row["project_name"],
                started_at=row["started_at"],
                topic=row["topic"],
                topic_id=item_id("span", row["topic_id"]) if row["topic_id"] is not None else None,
            )
        superseded_by = None
        if row["superseded_by"] is not None:
            superseded_by = SupersededBy(
                id=item_id("idea", row["superseded_by"]),
                preview=preview(row["sup_content"] or ""),
                said_at=row["sup_said_at"],
            )
        if kind == "idea":
            boost_key = str(row["intent"])
        elif kind == "span":
            boost_key = "span"
        else:
            kind_of_message = str(row["message_kind"])
            boost_key = kind_of_message if kind_of_message in _OWN_BOOST else "message"
        file_id, line = row["file_id"], row["line"]
        items[int(row["id"])] = Item(
            kind=kind,
            row_id=int(row["id"]),
            intent=row["intent"],
            content=str(row["content"]),
            said_at=row["said_at"],
            importance=None if row["importance"] is None else float(row["importance"]),
            usage=int(row["usage"] or 0),
            superseded_by=superseded_by,
            related=int(row["related"] or 0),
            session=session,
            source=SourceLocation(file=row["file"], line=line),
            source_key=(int(file_id), int(line)) if file_id is not None and line is not None else None,
            boost_key=boost_key,
        )
    return items
