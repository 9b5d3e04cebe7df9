"""A small memory written with plain SQL, as the executor would: two projects, three sessions, spans,
ideas in every state (superseded, answered, completed, open), relations, entities with aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiosqlite
from chromadb.api.types import Documents, EmbeddingFunction
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from cairn.config import Settings
from cairn.store.store import Store, idea_hash, message_hash
from cairn.store.vectors import VectorIndex
from cairn.tools import ToolDeps

MAIN = "s-main"
OTHER = "s-other"
EMPTY = "s-empty"
CLOSED = "s-closed"  # has spans, none open
CYCLE = "s-cycle"  # no project; two spans that are each other's parent (bad data the tools must survive)
SAID_AT = "2025-01-02T03:04:05.000Z"


@dataclass(frozen=True)
class Memory:
    """Ids of what `seed` wrote, by the names the tests use."""

    spans: dict[str, int]
    ideas: dict[str, int]
    entities: dict[str, int]


async def insert(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    async with conn.execute(sql + " RETURNING id", params) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def add_idea(
    conn: aiosqlite.Connection,
    session: str,
    intent: str,
    content: str,
    line: int,
    *,
    file_id: int | None = None,
    span: int | None = None,
    **columns: Any,
) -> int:
    names = ["session_id", "intent", "content", "content_hash", "source_line", "source_file_id", "span_id"]
    values = [session, intent, content, idea_hash(content), line, file_id, span]
    names += list(columns)
    values += list(columns.values())
    marks = ", ".join("?" * len(names))
    return await insert(conn, f"INSERT INTO ideas ({', '.join(names)}) VALUES ({marks})", tuple(values))


async def add_span(
    conn: aiosqlite.Connection,
    session: str,
    name: str,
    start: int,
    end: int | None = None,
    *,
    summary: str = "",
    parent: int | None = None,
    depth: int = 0,
) -> int:
    return await insert(
        conn,
        "INSERT INTO topic_spans (session_id, name, summary, start_line, end_line, parent_id, depth) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (session, name, summary, start, end, parent, depth),
    )


async def seed(store: Store) -> Memory:
    async with store.db.write() as conn:
        cairn = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/cairn', 'cairn')")
        webapp = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/webapp', 'webapp')")
        await conn.executemany(
            "INSERT INTO sessions (id, project_id, started_at, last_at, git_branch) VALUES (?, ?, ?, ?, ?)",
            [
                (MAIN, cairn, "2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z", "main"),
                (OTHER, webapp, "2025-01-01T00:00:00.000Z", "2025-01-01T01:00:00.000Z", None),
                (EMPTY, cairn, None, None, None),
                (CLOSED, cairn, None, "2024-12-01T00:00:00.000Z", None),
                (CYCLE, None, None, "2024-11-01T00:00:00.000Z", None),
            ],
        )
        main_file = await insert(
            conn, "INSERT INTO transcript_files (path, session_id) VALUES ('/t/s-main.jsonl', ?)", (MAIN,)
        )
        other_file = await insert(
            conn, "INSERT INTO transcript_files (path, session_id) VALUES ('/t/s-other.jsonl', ?)", (OTHER,)
        )
        text = "Let's keep the vectors as blobs in SQLite for now."
        await conn.execute(
            "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash, timestamp) VALUES (?, ?, 12, 12, 0, 10, 'user', 'text', ?, ?, ?)",
            (MAIN, main_file, text, message_hash("user", "text", text), SAID_AT),
        )

        storage = await add_span(conn, MAIN, "Storage design", 1, 40, summary="Where cairn keeps its memory")
        vectors = await add_span(
            conn,
            MAIN,
            "Vector index with Chroma",
            10,
            30,
            summary="Choosing Chroma for embeddings, kept in step with SQLite by an outbox",
            parent=storage,
            depth=1,
        )
        tools = await add_span(
            conn, MAIN, "Indexing agent tools", 41, summary="Designing read-only tools for the indexing agent"
        )
        login = await add_span(
            conn, OTHER, "Login button component", 1, summary="React LoginButton renders the sign-in button"
        )
        finished = await add_span(conn, CLOSED, "Release checklist", 1, 9)
        first = await add_span(conn, CYCLE, "Chicken", 1)
        second = await add_span(conn, CYCLE, "Egg", 5, parent=first)
        await conn.execute("UPDATE topic_spans SET parent_id = ? WHERE id = ?", (second, first))

        def main(intent: str, content: str, line: int, span: int, **columns: Any) -> Any:
            return add_idea(conn, MAIN, intent, content, line, file_id=main_file, span=span, **columns)

        blobs = await main("decision", "Store vectors as blobs in SQLite", 12, vectors)
        chroma = await main(
            "decision", "Store vectors in Chroma, derived from SQLite through an outbox", 20, vectors
        )
        await conn.execute("UPDATE ideas SET superseded_by = ? WHERE id = ?", (chroma, blobs))
        duplicates = await main("question", "How should the agent find duplicate ideas?", 42, tools)
        offline = await main(
            "question", "Which embedding model works offline?", 43, tools, answered_at=SAID_AT
        )
        minilm = await main("solution", "MiniLM int8 ONNX embeddings run offline", 44, tools)
        await conn.execute("UPDATE ideas SET answered_by = ? WHERE id = ?", (minilm, offline))
        write_tests = await main("todo", "Write tests for the indexing tools", 45, tools)
        triggers = await main("todo", "Add FTS5 triggers", 46, tools, completed_at=SAID_AT)
        locked = await main("problem", "SQLite reports database is locked with several writers", 47, tools)
        button = await add_idea(
            conn,
            OTHER,
            "decision",
            "The LoginButton component renders the sign-in button",
            5,
            file_id=other_file,
            span=login,
        )
        run_context = await add_idea(
            conn, OTHER, "context", "pydantic_ai agents call tools with a RunContext", 6, file_id=other_file
        )
        await conn.executemany(
            "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, ?)",
            [(chroma, blobs, "supersedes"), (minilm, offline, "answers"), (duplicates, chroma, "relates_to")],
        )

        entities = {}
        for name, kind in [
            ("SQLite", "technology"),
            ("Chroma", "technology"),
            ("pydantic-ai", "technology"),
            ("LoginButton.tsx", "file"),
            ("cairn", "project"),
            ("PostgreSQL", "technology"),
        ]:
            entities[name] = await insert(
                conn, "INSERT INTO entities (canonical_name, type) VALUES (?, ?)", (name, kind)
            )
        await conn.executemany(
            "INSERT INTO entity_aliases (entity_id, alias) VALUES (?, ?)",
            [(entities["SQLite"], "sqlite3"), (entities["Chroma"], "chromadb")],
        )
        await conn.executemany(
            "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?)",
            [
                (blobs, entities["SQLite"]),
                (chroma, entities["SQLite"]),
                (locked, entities["SQLite"]),
                (chroma, entities["Chroma"]),
                (run_context, entities["pydantic-ai"]),
                (button, entities["LoginButton.tsx"]),
            ],
        )
    await store.sync_vectors()
    return Memory(
        spans={
            "storage": storage,
            "vectors": vectors,
            "tools": tools,
            "login": login,
            "finished": finished,
            "chicken": first,
            "egg": second,
        },
        ideas={
            "blobs": blobs,
            "chroma": chroma,
            "duplicates": duplicates,
            "offline": offline,
            "minilm": minilm,
            "write_tests": write_tests,
            "triggers": triggers,
            "locked": locked,
            "button": button,
            "run_context": run_context,
        },
        entities=entities,
    )


async def seed_closed(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> Memory:
    """`seed` the store at `settings.home`, then close it, so a daemon, an MCP server or a CLI process
    can open it as its own."""
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        return await seed(store)
    finally:
        await store.close()


@dataclass(frozen=True)
class Seeded:
    store: Store
    memory: Memory


def context(deps: ToolDeps) -> RunContext[ToolDeps]:
    """What pydantic-ai hands a tool, for calling tools directly (agent runs are in test_agent.py)."""
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())
