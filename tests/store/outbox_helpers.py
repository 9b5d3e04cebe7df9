"""Shared by the outbox and vector-worker tests: a little of what the executor writes, and the check that
Chroma holds exactly one vector per eligible SQLite row."""

from __future__ import annotations

from typing import Any

from cairn.store.outbox import SOURCES
from cairn.store.store import Store, idea_hash
from cairn.store.vectors import VECTOR_KINDS


async def assert_consistent(store: Store) -> None:
    """Chroma holds exactly one vector per eligible SQLite row, for every kind."""
    for kind in VECTOR_KINDS:
        expected = await eligible_ids(store, kind)
        assert store.vectors.get_ids(kind) == expected, kind
        assert store.vectors.count(kind) == len(expected), kind


async def add_memory(store: Store, session: str) -> dict[str, int]:
    """A little of what the executor writes: ideas (one superseded), a span, entities with an alias."""
    async with store.db.write() as conn:

        async def insert(sql: str, params: tuple[Any, ...]) -> int:
            async with conn.execute(sql + " RETURNING id", params) as cur:
                row = await cur.fetchone()
            return int(row[0])

        span = await insert(
            "INSERT INTO topic_spans (session_id, name, summary, start_line) VALUES (?, ?, ?, 1)",
            (session, "Project setup", "Creating CLAUDE.md for the demo repository"),
        )
        old = await insert(
            "INSERT INTO ideas (session_id, span_id, intent, content, content_hash) VALUES (?, ?, ?, ?, ?)",
            (
                session,
                span,
                "decision",
                "Store vectors in SQLite blobs",
                idea_hash("Store vectors in SQLite blobs"),
            ),
        )
        new = await insert(
            "INSERT INTO ideas (session_id, span_id, intent, content, content_hash, importance) "
            "VALUES (?, ?, ?, ?, ?, 1.0)",
            (session, span, "decision", "Store vectors in Chroma", idea_hash("Store vectors in Chroma")),
        )
        await conn.execute("UPDATE ideas SET superseded_by = ? WHERE id = ?", (new, old))
        entity = await insert(
            "INSERT INTO entities (canonical_name, type) VALUES ('Chroma', 'technology')", ()
        )
        await conn.execute("INSERT INTO entity_aliases (entity_id, alias) VALUES (?, 'chromadb')", (entity,))
        project = await insert(
            "INSERT INTO projects (path, name) VALUES ('/work/demo', 'demo') "
            "ON CONFLICT (path) DO UPDATE SET name = name",
            (),
        )
        document = await insert(
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size) "
            "VALUES (?, 'src/store.py', 'h', 30)",
            (project,),
        )
        chunk = await insert(
            "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content) "
            "VALUES (?, 0, 1, 2, 'def store_vectors():\n    return chroma')",
            (document,),
        )
        association = await insert(
            "INSERT INTO search_associations (project_id, query, query_key, file_path, rel_path, source) "
            "VALUES (?, 'where are vectors stored', 'where are vectors stored', '/work/demo/src/store.py', "
            "'src/store.py', 'learned')",
            (project,),
        )
        # A later passage of an assistant message (as if it were long): the kind the default embeds.
        passage = await insert(
            "INSERT INTO message_passages (message_id, seq, char_start, char_end, text) "
            "SELECT id, 1, 0, 40, 'the rest of a long answer about the vectors' FROM messages "
            "WHERE session_id = ? AND role = 'assistant' AND kind = 'text' AND is_noise = 0 "
            "ORDER BY id LIMIT 1",
            (session,),
        )
    return {
        "span": span,
        "old": old,
        "new": new,
        "entity": entity,
        "chunk": chunk,
        "association": association,
        "passage": passage,
    }


async def eligible_ids(store: Store, kind: str) -> set[str]:
    rows = await store.db.fetchall(SOURCES[kind].all_sql())
    return {str(r[0]) for r in rows}
