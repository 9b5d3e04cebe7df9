"""Loading search candidates: one query per kind for the facts ranking needs (text, time, importance,
usage, superseded state, place), and for the page shown one more for what a result shows besides
(session context, topic, what superseded it, related count: `complete`).

Loading applies the filters again in SQL: vector candidates were filtered only as far as Chroma's
metadata goes, and this is where time ranges, the page snapshot and message kinds are enforced.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind, SessionInfo, SourceLocation, SupersededBy, item_id, preview
from cairn.store.db import Database
from cairn.transcripts.origin import ORIGINS, Origin, call_label

# Message kinds weighed by their own `search_boosts` entry; other messages (prose) use "message".
_OWN_BOOST = frozenset({"tool_result", "compact_summary"})
_CONTEXT = """
    se.started_at AS started_at, p.path AS project, p.name AS project_name, f.path AS file
"""
_CONTEXT_JOINS = """
    LEFT JOIN sessions AS se ON se.id = t.session_id
    LEFT JOIN projects AS p ON p.id = se.project_id
"""
# The id of the innermost topic span of the item's session that covers `line` (joined once for its
# id and name: two subqueries, one per column, cost a message load ~15 % more).
_COVERING_SPAN = """
    (SELECT sp.id FROM topic_spans AS sp
     WHERE sp.session_id = t.session_id AND sp.start_line <= {line}
       AND (sp.end_line IS NULL OR sp.end_line >= {line})
     ORDER BY sp.depth DESC, sp.start_line DESC, sp.id DESC LIMIT 1)
"""

# Whether the message an idea was drawn from asks something (a question mark in its last 200 characters,
# as `cairn.search.hybrid.asks_question` reads a message): a todo drawn from it is a question the indexer
# read a statement of, and settled by the reply it ranks as that reply (`Item.answer`).
_ASKS = """EXISTS (SELECT 1 FROM messages AS q WHERE q.file_id = {idea}.source_file_id
    AND q.line = {idea}.source_line AND instr(substr(q.text, -200), '?') > 0)"""
# The message that settled an idea where no idea was drawn (`Item.answer`): a question, or a todo drawn
# from a message that asks, with no answering idea. `resolved_line` is a line of the session that settled
# it, which a later session can be: the message at that line of the idea's own file is the answer only
# when it was said when the idea was settled (the executor stamps the answering line's time).
_ANSWERING_MESSAGE = (
    """CASE WHEN {idea}.answered_by IS NULL AND {idea}.resolved_line IS NOT NULL
    AND ({idea}.intent = 'question' OR ({idea}.intent = 'todo' AND """
    + _ASKS
    + """))
    THEN (SELECT m.id FROM messages AS m WHERE m.file_id = {idea}.source_file_id
          AND m.line = {idea}.resolved_line
          AND m.timestamp = coalesce({idea}.answered_at, {idea}.completed_at)
          ORDER BY m.kind <> 'text', m.id LIMIT 1) END"""
)

# What ranking reads of each candidate: a search loads a few hundred and shows ten.
_SQL: dict[Kind, str] = {
    "idea": f"""
        SELECT t.id, t.intent, t.content, t.content_hash, t.importance, t.usage_count AS usage, t.said_at,
               t.session_id,
               t.source_file_id AS file_id, t.source_line AS line, t.superseded_by,
               t.answered_at, t.completed_at, t.declined_at,
               CASE WHEN t.intent = 'question' THEN t.answered_by END AS answered_by,
               {_ANSWERING_MESSAGE.format(idea="t")} AS answered_by_message
        FROM ideas AS t
    """,
    "span": f"""
        SELECT t.id, NULL AS intent, NULL AS content_hash,
               t.name || CASE WHEN trim(t.summary) <> '' THEN ': ' || t.summary ELSE '' END AS content,
               NULL AS importance, 0 AS usage, {TABLES["span"].said_at} AS said_at, t.session_id,
               t.file_id, t.start_line AS line, NULL AS superseded_by, NULL AS answered_by,
               NULL AS answered_by_message, NULL AS answered_at, NULL AS completed_at, NULL AS declined_at
        FROM topic_spans AS t
    """,
    "message": f"""
        SELECT t.id, t.role AS intent, t.text AS content, t.content_hash, NULL AS importance, 0 AS usage,
               {TABLES["message"].said_at} AS said_at, t.session_id, t.file_id, t.line,
               t.kind AS message_kind, t.origin, t.tool, t.tool_arg, t.failed,
               NULL AS superseded_by, NULL AS answered_by, NULL AS answered_by_message,
               NULL AS answered_at, NULL AS completed_at, NULL AS declined_at
        FROM messages AS t
    """,
}

# What only a result shown reads (`complete`): its session and topic, what superseded it, how many
# ideas relate to it, its transcript file. The covering topic and the related counts are a subquery a
# row each, the rest joins: read for every candidate they made the loads' SQL four times as long
# (100K ideas: 6.4 ms a search; 1.4 without them).
_SHOWN: dict[Kind, str] = {
    "idea": f"""
        SELECT t.id, sup.content AS sup_content, sup.said_at AS sup_said_at,
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
        SELECT t.id, NULL AS sup_content, NULL AS sup_said_at,
               parent.id AS topic_id, parent.name AS topic,
               (SELECT count(*) FROM ideas AS i WHERE i.span_id = t.id) AS related,
               {_CONTEXT}
        FROM topic_spans AS t {_CONTEXT_JOINS}
        LEFT JOIN transcript_files AS f ON f.id = t.file_id
        LEFT JOIN topic_spans AS parent ON parent.id = t.parent_id
    """,
    "message": f"""
        SELECT t.id, NULL AS sup_content, NULL AS sup_said_at,
               cov.id AS topic_id, cov.name AS topic,
               (SELECT count(*) FROM ideas AS i WHERE i.source_file_id = t.file_id AND i.source_line = t.line)
                   AS related,
               {_CONTEXT}
        FROM messages AS t {_CONTEXT_JOINS}
        LEFT JOIN transcript_files AS f ON f.id = t.file_id
        LEFT JOIN topic_spans AS cov ON cov.id = {_COVERING_SPAN.format(line="t.line")}
    """,
}
_SHOWN_COLUMNS = (
    "sup_content",
    "sup_said_at",
    "topic_id",
    "topic",
    "related",
    "started_at",
    "project",
    "project_name",
    "file",
)


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
    source_key: tuple[int, int] | None
    boost_key: str
    row: dict[str, Any] = field(repr=False, compare=False)
    """The loaded row, by column; `complete` adds what `session`, `source`, `superseded_by` and
    `related` are built from."""
    answered_by: int | None = None  # a question idea: the idea that answers it
    answered_by_message: int | None = None
    """A question idea answered where no idea was drawn, or a todo drawn from a message that asks and
    settled by a reply: the message at the line that answered it."""

    @property
    def answer(self) -> tuple[Kind, int] | None:
        """What answers this question idea, by (kind, row id): the answering idea, else the message at
        the line that answered it (an indexer that draws no idea from a reply still links the question to
        it); None for anything else."""
        if self.answered_by is not None:
            return ("idea", self.answered_by)
        if self.answered_by_message is not None:
            return ("message", self.answered_by_message)
        return None

    @property
    def id(self) -> str:
        return item_id(self.kind, self.row_id)

    # The models a result shows are built when first asked for: a search loads hundreds of candidates
    # and shows ten, and validating three models for each candidate cost more than scoring them.

    @cached_property
    def session(self) -> SessionInfo | None:
        row = self.row
        if row["session_id"] is None:
            return None
        return SessionInfo(
            id=row["session_id"],
            project=row["project"],
            project_name=row["project_name"],
            started_at=row["started_at"],
            topic=row["topic"],
            topic_id=item_id("span", row["topic_id"]) if row["topic_id"] is not None else None,
        )

    @property
    def superseded(self) -> bool:
        """Whether a later idea replaced it: what ranking asks of every candidate."""
        return self.row["superseded_by"] is not None

    @property
    def related(self) -> int:
        """How many ideas relate to it (`complete`)."""
        return int(self.row["related"] or 0)

    @property
    def superseded_by(self) -> SupersededBy | None:
        """What replaced it, for a result shown (`complete`): few are, so no cache for them."""
        row = self.row
        if row["superseded_by"] is None:
            return None
        return SupersededBy(
            id=item_id("idea", row["superseded_by"]),
            preview=preview(row["sup_content"] or ""),
            said_at=row["sup_said_at"],
        )

    @property
    def origin(self) -> Origin | None:
        """Where a message comes from (`cairn.transcripts.origin`); None for ideas and spans."""
        value = self.row.get("origin")
        return value if value in ORIGINS else None

    @property
    def call(self) -> str | None:
        """The call a tool call, tool result or subagent report belongs to: `Bash: npm run build`."""
        if self.origin not in ("tool_call", "tool_result", "subagent") or not self.row.get("tool"):
            return None
        return call_label(self.row.get("tool"), self.row.get("tool_arg"))

    @property
    def repeat_key(self) -> tuple[Kind, str] | None:
        """What the item says, as a key two copies of it share (`cairn.search.folding.fold_repeats`): a
        message's `content_hash` covers its role, kind and exact text, an idea's its normalised text."""
        content_hash = self.row.get("content_hash")
        return (self.kind, str(content_hash)) if content_hash else None

    @cached_property
    def source(self) -> SourceLocation:
        return SourceLocation(file=self.row["file"], line=self.row["line"])


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
    # `sqlite3.Row` finds a column by name by comparing it with every column name in turn: reading
    # this many columns by name cost ~30 us a row (hundreds of rows a search); a dict costs ~1 us.
    names = rows[0].keys() if rows else []
    for values in rows:
        row = dict(zip(names, values, strict=True))
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
            source_key=(int(file_id), int(line)) if file_id is not None and line is not None else None,
            boost_key=boost_key,
            row=row,
            answered_by=None if row["answered_by"] is None else int(row["answered_by"]),
            answered_by_message=_id_or_none(row["answered_by_message"]),
        )
    return items


async def complete(db: Database, items: list[Item]) -> None:
    """Add to each of `items` (the page shown) what a result shows besides what ranked it (`_SHOWN`),
    the kinds' queries at once. The items passed the filters when they were loaded; they are not
    checked again. A row deleted since shows none of it, as a row without a session would."""
    for item in items:
        item.row.update(dict.fromkeys(_SHOWN_COLUMNS))
    by_kind: dict[Kind, dict[int, Item]] = {}
    for item in items:
        by_kind.setdefault(item.kind, {})[item.row_id] = item
    by_id = "WHERE t.id IN (SELECT value FROM json_each(?))"
    found = await asyncio.gather(
        *(db.fetchall(f"{_SHOWN[kind]} {by_id}", (json.dumps(list(of)),)) for kind, of in by_kind.items())
    )
    for of_kind, rows in zip(by_kind.values(), found, strict=True):
        names = rows[0].keys() if rows else []
        for values in rows:
            shown = dict(zip(names, values, strict=True))
            of_kind[int(shown.pop("id"))].row.update(shown)


def _id_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


async def answers_of(db: Database, idea_ids: list[int]) -> list[tuple[Kind, int]]:
    """What answers the answered questions among `idea_ids`, by (kind, row id), each once, in question
    order: the answering idea, else the message at the answering line when no idea was drawn there.
    Candidates of their own, since a question that matches the query ranks as its answer
    (`cairn.search.folding.fold_answered`). The filters apply when they are loaded."""
    if not idea_ids:
        return []
    rows = await db.fetchall(
        f"""SELECT CASE WHEN i.intent = 'question' THEN i.answered_by END AS answered_by,
                   {_ANSWERING_MESSAGE.format(idea="i")} AS message
            FROM ideas AS i WHERE i.id IN (SELECT value FROM json_each(?))
              AND (i.answered_by IS NOT NULL OR i.resolved_line IS NOT NULL) ORDER BY i.id""",
        (json.dumps(idea_ids),),
    )
    found: list[tuple[Kind, int]] = []
    for row in rows:
        if row["answered_by"] is not None:
            found.append(("idea", int(row["answered_by"])))
        elif row["message"] is not None:
            found.append(("message", int(row["message"])))
    return list(dict.fromkeys(found))
