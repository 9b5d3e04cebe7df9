"""Where `search_content` finds its chunks: each `ContentSource` names a table, its FTS index and vectors.

The ranking only ever speaks to this description, so a kind of chunk joins by adding a source here,
without touching how results are scored. Two sources: the project files the agent touched, chunked
(`FILES`, ids `c<n>`), and transcript messages, one chunk each (`MESSAGES`, ids `m<n>`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cairn.search.filters import MESSAGE_KINDS


@dataclass(frozen=True)
class Filters:
    """Resolved scope: project ids (SQL) and paths (Chroma metadata), or None for all; a session id."""

    project_ids: tuple[int, ...] | None = None
    project_paths: tuple[str, ...] | None = None
    session: str | None = None


@dataclass(frozen=True)
class ContentSource:
    """One kind of chunk: where its rows, full-text index and vectors live.

    SQL fragments are over the source table aliased `t` plus whatever `joins` adds. `eligible` decides
    which rows are chunks at all; `vector_in` repeats the parts of it that Chroma metadata can express,
    so the nearest-neighbour budget is not spent on rows SQL would drop. `keywords_sql` takes a JSON
    array of `keyword_key` values and yields `(key, name)` rows, most important first per key.
    A source without `session_column` cannot be narrowed to a session and sits out such searches.
    """

    name: str
    prefix: str
    table: str
    fts_table: str
    vector_kind: str
    joins: str
    eligible: str
    text_column: str
    document_column: str
    index_column: str
    keyword_column: str
    project_column: str
    session_column: str | None
    keywords_sql: str
    vector_in: tuple[tuple[str, tuple[str, ...]], ...] = ()
    project_key: str = "project"
    session_key: str | None = "session_id"
    start_column: str = "NULL"
    end_column: str = "NULL"

    def usable(self, filters: Filters) -> bool:
        return filters.session is None or self.session_column is not None

    def scope(self, filters: Filters, snapshot: int) -> tuple[str, list[Any]]:
        """The SQL condition (and its parameters) a row must meet to be a result of this search."""
        parts = ["t.id <= ?", f"({self.eligible})"]
        params: list[Any] = [snapshot]
        if filters.project_ids is not None:
            parts.append(f"{self.project_column} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(filters.project_ids)))
        if filters.session is not None and self.session_column is not None:
            parts.append(f"{self.session_column} = ?")
            params.append(filters.session)
        return " AND ".join(parts), params

    def vector_where(self, filters: Filters) -> dict[str, Any] | None:
        conditions: list[dict[str, Any]] = [{key: {"$in": list(values)}} for key, values in self.vector_in]
        if filters.project_paths is not None:
            conditions.append({self.project_key: {"$in": list(filters.project_paths)}})
        if filters.session is not None and self.session_key is not None:
            conditions.append({self.session_key: filters.session})
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else {"$and": conditions}


MESSAGES = ContentSource(
    name="messages",
    prefix="m",
    table="messages",
    fts_table="messages_fts",
    vector_kind="messages",
    joins="JOIN transcript_files AS f ON f.id = t.file_id LEFT JOIN sessions AS s ON s.id = t.session_id",
    eligible="t.is_noise = 0 AND trim(t.text) <> '' AND t.kind IN ('text', 'tool_result', 'compact_summary')",
    text_column="t.text",
    document_column="f.path",
    index_column="t.line",
    keyword_column="t.session_id",
    project_column="s.project_id",
    session_column="t.session_id",
    keywords_sql="""
        SELECT i.session_id AS key, e.canonical_name AS name
        FROM ideas AS i
        JOIN idea_entities AS ie ON ie.idea_id = i.id
        JOIN entities AS e ON e.id = ie.entity_id
        WHERE i.session_id IN (SELECT value FROM json_each(?))
        GROUP BY i.session_id, e.id
        ORDER BY i.session_id, count(*) DESC, e.canonical_name COLLATE NOCASE
    """,
    vector_in=(("kind", MESSAGE_KINDS),),
)

# A file chunk's document is the file's absolute path (the project's path joined with the relative one):
# results span projects, and an agent opens the file with it directly. Files belong to a project, not
# a session, so a session-narrowed search leaves them out. `keyword_column` is the document id, which
# the learned-association boosts key by as well.
FILES = ContentSource(
    name="files",
    prefix="c",
    table="file_chunks",
    fts_table="file_chunks_fts",
    vector_kind="chunks",
    joins="JOIN file_documents AS d ON d.id = t.document_id JOIN projects AS p ON p.id = d.project_id",
    eligible="trim(t.content) <> ''",
    text_column="t.content",
    document_column="p.path || '/' || d.rel_path",
    index_column="t.chunk_index",
    keyword_column="d.id",
    project_column="d.project_id",
    session_column=None,
    keywords_sql="""
        SELECT d.id AS key, k.value AS name
        FROM file_documents AS d, json_each(d.keywords) AS k
        WHERE d.id IN (SELECT value FROM json_each(?)) AND k.type = 'text'
        ORDER BY d.id, k.key
    """,
    session_key=None,
    start_column="t.start_line",
    end_column="t.end_line",
)

# Order breaks ties between equal scores (grep-like searches give many 1.0s): a file chunk is the code or
# text as it stands now, a message what was said about it at some point, so the file comes first.
SOURCES: tuple[ContentSource, ...] = (FILES, MESSAGES)
