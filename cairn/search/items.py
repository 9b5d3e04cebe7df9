"""`show`: one item — idea, topic span, message or file chunk — in full, plus the idea briefs lookups share.

Search hands out short previews and ids; `show`, `timeline` and `open_items` are how a person or the
coding agent follows an id up — `cairn show 123`, `cairn timeline s12`, the MCP
`show`/`timeline`/`open_questions` tools. Nothing in them writes: looking at an item is not a use of it,
so `usage_count` (and a search association's `hits`) stays as search left it. A file chunk (`c78`, from
`search_content`) shows where it sits in its file, the file's keywords and the learned search
associations pointing at the file: why a search may have lifted it. `timeline` and `open_items` have
their own modules and build their one-line ideas with `brief_of`/`briefs` from here, so an idea reads
the same wherever it is listed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from cairn.search.errors import ItemNotFoundError
from cairn.search.filters import SPAN_FILE, SPAN_SAID_AT
from cairn.search.item_models import AssociationRef, EntityRef, IdeaBrief, ItemDetail, RelationLink, SpanBrief
from cairn.search.models import ItemKind, SessionInfo, SourceLocation, item_id, parse_item_id, preview
from cairn.store.db import Database
from cairn.store.json_columns import json_strings

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
# Search associations a file chunk lists (most learned first); a file rarely has more than a few.
MAX_ASSOCIATIONS = 50


async def show(db: Database, item: str | int) -> ItemDetail:
    """The item `item` names, in full; `BadItemIdError` for a malformed id, `ItemNotFoundError` if absent."""
    kind, row_id = parse_item_id(item)
    if kind == "idea":
        return await _show_idea(db, row_id)
    if kind == "span":
        return await _show_span(db, row_id)
    if kind == "chunk":
        return await _show_chunk(db, row_id)
    return await _show_message(db, row_id)


def not_found(kind: ItemKind, row_id: int) -> ItemNotFoundError:
    """The error for an id that names no stored item, telling the caller how to get a current one."""
    label = {
        "idea": f"idea #{row_id}",
        "span": f"topic span s{row_id}",
        "message": f"message m{row_id}",
        "chunk": f"file chunk c{row_id} (its file may have changed and been indexed again)",
    }
    return ItemNotFoundError(
        f"no {label[kind]} in the store (it may have been deleted, or the id mistyped); "
        "search again for a current id"
    )


#: The columns of `ideas i` that `brief_of` reads.
BRIEF_COLUMNS = "i.id, i.intent, i.content, i.said_at, i.superseded_by, i.session_id"


def brief_of(row: sqlite3.Row) -> IdeaBrief:
    """The idea in `row` (selected with at least `BRIEF_COLUMNS`) in one line."""
    return IdeaBrief(
        id=item_id("idea", int(row["id"])),
        intent=str(row["intent"]),
        preview=preview(str(row["content"])),
        said_at=row["said_at"],
        superseded=row["superseded_by"] is not None,
        session_id=row["session_id"],
    )


async def briefs(db: Database, where: str, params: Sequence[Any], order: str, limit: int) -> list[IdeaBrief]:
    """Briefs of the ideas `i` matching `where`, in `order`, at most `limit`."""
    rows = await db.fetchall(
        f"SELECT {BRIEF_COLUMNS} FROM ideas i WHERE {where} ORDER BY {order} LIMIT ?", (*params, limit)
    )
    return [brief_of(row) for row in rows]


async def _idea_brief(db: Database, idea: int | None) -> IdeaBrief | None:
    if idea is None:
        return None
    found = await briefs(db, "i.id = ?", (idea,), "i.id", 1)
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
        raise not_found("idea", idea)
    relations = [
        RelationLink(type=str(link["relation_type"]), direction="outgoing", idea=brief_of(link))
        for link in await db.fetchall(
            f"""
            SELECT r.relation_type, {BRIEF_COLUMNS} FROM relations r JOIN ideas i ON i.id = r.to_idea_id
            WHERE r.from_idea_id = ? ORDER BY r.id LIMIT ?
            """,
            (idea, MAX_RELATIONS),
        )
    ]
    relations += [
        RelationLink(type=str(link["relation_type"]), direction="incoming", idea=brief_of(link))
        for link in await db.fetchall(
            f"""
            SELECT r.relation_type, {BRIEF_COLUMNS} FROM relations r JOIN ideas i ON i.id = r.from_idea_id
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
        supersedes=await briefs(db, "i.superseded_by = ?", (idea,), "i.said_at, i.id", MAX_SUPERSEDES),
        answered_by=await _idea_brief(db, row["answered_by"]),
        answers=await briefs(db, "i.answered_by = ?", (idea,), "i.said_at, i.id", MAX_SUPERSEDES),
        resolution=row["resolution"],
        answered_at=row["answered_at"],
        completed_at=row["completed_at"],
        declined_at=row["declined_at"],
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
        raise not_found("span", span)
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
        ideas=await briefs(
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
        raise not_found("message", message)
    line = int(row["line"])
    topic = await db.scalar(
        """
        SELECT id FROM topic_spans
        WHERE session_id = ? AND start_line <= ? AND (end_line IS NULL OR end_line >= ?)
        ORDER BY depth DESC, start_line DESC, id DESC LIMIT 1
        """,
        (row["session_id"], line, line),
    )
    ideas = await briefs(
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


async def _show_chunk(db: Database, chunk: int) -> ItemDetail:
    row = await db.fetchone(
        """
        SELECT c.id, c.chunk_index, c.start_line, c.end_line, c.content, d.id AS document_id, d.rel_path,
               d.keywords, d.indexed_at, d.project_id, p.path AS project
        FROM file_chunks c
        JOIN file_documents d ON d.id = c.document_id
        JOIN projects p ON p.id = d.project_id
        WHERE c.id = ?
        """,
        (chunk,),
    )
    if row is None:
        raise not_found("chunk", chunk)
    path = f"{row['project']}/{row['rel_path']}"
    # The same rule the search boosts use: the association's project and relative path, or (for rows
    # written before associations had a project) the absolute path.
    associations = await db.fetchall(
        """
        SELECT id, query, source, times_learned, hits, original_score, grep_patterns, learned_at, last_used_at
        FROM search_associations
        WHERE (project_id = ? AND rel_path = ?) OR file_path = ?
        ORDER BY times_learned DESC, hits DESC, id LIMIT ?
        """,
        (row["project_id"], row["rel_path"], path, MAX_ASSOCIATIONS),
    )
    return ItemDetail(
        id=item_id("chunk", chunk),
        kind="chunk",
        title=row["rel_path"],
        content=row["content"],
        created_at=row["indexed_at"],
        source=SourceLocation(file=path, line=row["start_line"]),
        end_line=row["end_line"],
        project=row["project"],
        chunk_index=row["chunk_index"],
        document_keywords=json_strings(row["keywords"]),
        indexed_at=row["indexed_at"],
        associations=[
            AssociationRef(
                id=a["id"],
                query=a["query"],
                source=a["source"],
                times_learned=a["times_learned"],
                hits=a["hits"],
                original_score=a["original_score"],
                grep_patterns=json_strings(a["grep_patterns"]),
                learned_at=a["learned_at"],
                last_used_at=a["last_used_at"],
            )
            for a in associations
        ],
    )
