"""What bounds the tools: result size, the soft call budget, and that they never write."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ToolReturnPart

from cairn.store.store import Store
from cairn.tools import TOOLS, ToolDeps
from cairn.tools.entities import get_entity_ideas, search_entities
from cairn.tools.ideas import (
    get_idea_relations,
    get_open_questions,
    get_open_todos,
    get_recent_ideas,
    search_ideas,
)
from cairn.tools.results import PREVIEW_CHARS, EntityIdeas, IdeaList, Notice, SpanList, TopicHierarchy
from cairn.tools.topics import find_similar_topics, get_current_span, get_topic_hierarchy, list_session_spans
from tests.tools.memory import MAIN, Memory, add_idea, add_span, context, seed

Call = tuple[Callable[..., Awaitable[Any]], dict[str, Any]]


def every_tool(memory: Memory) -> list[Call]:
    """A call of each of the eleven tools, on data that exists."""
    return [
        (search_ideas, {"query": "benchmark SQLite vectors", "limit": 25}),
        (get_open_questions, {"session": MAIN, "limit": 25}),
        (get_open_todos, {"session": MAIN, "limit": 25}),
        (get_current_span, {"session": MAIN}),
        (list_session_spans, {"session": MAIN}),
        (find_similar_topics, {"topic_name": "benchmark topic", "limit": 25}),
        (get_topic_hierarchy, {}),
        (search_entities, {"name": "SQLite"}),
        (get_entity_ideas, {"entity_id": memory.entities["SQLite"], "limit": 25}),
        (get_recent_ideas, {"session": MAIN, "limit": 25}),
        (get_idea_relations, {"idea_id": memory.ideas["chroma"]}),
    ]


def sent(tool: str, result: Any) -> str:
    """The text pydantic-ai sends the model for a tool's result."""
    return ToolReturnPart(tool_name=tool, content=result, tool_call_id="x").model_response_str()


def test_every_tool_is_exercised() -> None:
    unseeded = Memory(spans={}, ideas={"chroma": 1}, entities={"SQLite": 1})
    assert {f.__name__ for f, _ in every_tool(unseeded)} == {f.__name__ for f in TOOLS}
    assert len(TOOLS) == 11


async def crowd(store: Store, memory: Memory) -> None:
    """Many long ideas, todos, questions and nested spans in one session, all linked to SQLite."""
    long = "benchmark " + " ".join(f"word{i}" for i in range(60))
    async with store.db.write() as conn:
        parent = None
        for i in range(30):
            parent = await add_span(
                conn, MAIN, f"benchmark topic {i} " + "x" * 150, 100 + i, parent=parent, depth=min(i, 5)
            )
        for i in range(15):
            for intent in ("question", "todo", "context"):
                idea = await add_idea(conn, MAIN, intent, f"{long} {intent} {i}", 1000 + i)
                await conn.execute(
                    "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?)",
                    (idea, memory.entities["SQLite"]),
                )
    await store.sync_vectors()


async def test_results_fit_the_size_bound(fresh_store: Store) -> None:
    memory = await seed(fresh_store)
    await crowd(fresh_store, memory)
    for max_chars in (4000, 1500):
        deps = ToolDeps(db=fresh_store.db, vectors=fresh_store.vectors, max_result_chars=max_chars)
        for tool, kwargs in every_tool(memory):
            result = await tool(context(deps), **kwargs)
            text = sent(tool.__name__, result)
            assert len(text) <= max_chars, (tool.__name__, max_chars, len(text))
            if isinstance(result, IdeaList | EntityIdeas):
                assert all(len(idea.content) <= PREVIEW_CHARS for idea in result.ideas)
        ideas = await search_ideas(context(deps), query="benchmark", limit=25)
        assert isinstance(ideas, IdeaList)
        assert ideas.truncated is not None and "left out" in ideas.truncated
        assert 0 < len(ideas.ideas) < 25
        assert len(ideas.ideas[0].content) == PREVIEW_CHARS and ideas.ideas[0].content.endswith("…")
        tree = await get_topic_hierarchy(context(deps))
        assert isinstance(tree, TopicHierarchy) and tree.truncated is not None


async def test_small_results_are_not_cut(fresh_store: Store) -> None:
    memory = await seed(fresh_store)
    result = await get_open_todos(context(ToolDeps(db=fresh_store.db, vectors=None)), session=MAIN)
    assert isinstance(result, IdeaList) and result.truncated is None
    assert "truncated" not in sent("get_open_todos", result)
    assert [idea.id for idea in result.ideas] == [memory.ideas["write_tests"]]


async def test_budget_notice_after_max_tool_calls(fresh_store: Store) -> None:
    memory = await seed(fresh_store)
    deps = ToolDeps(db=fresh_store.db, vectors=None, max_tool_calls=2)
    ctx = context(deps)
    assert isinstance(await get_open_todos(ctx, session=MAIN), IdeaList)
    assert isinstance(await list_session_spans(ctx, session=MAIN), SpanList)
    for tool, kwargs in every_tool(memory):
        late = await tool(ctx, **kwargs)
        assert isinstance(late, Notice), tool.__name__
        assert "budget used up" in late.notice and "final result now" in late.notice
    assert deps.tool_calls == 2 + 11


def data_version(path: Path) -> int:
    """SQLite's change counter as seen by an outside connection: it moves when anyone else commits."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA data_version").fetchone()[0])


async def test_tools_never_write(fresh_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = await seed(fresh_store)
    db = fresh_store.db

    def no_writes() -> None:
        raise AssertionError("a tool opened a write transaction")

    monkeypatch.setattr(db, "write", no_writes)
    outside = sqlite3.connect(db.path)
    try:
        before = outside.execute("PRAGMA data_version").fetchone()[0]
        writer_changes = db.conn.total_changes
        deps = ToolDeps(db=db, vectors=fresh_store.vectors, max_tool_calls=100)
        calls = [
            *every_tool(memory),
            (get_idea_relations, {"idea_id": 999}),
            (get_entity_ideas, {"entity_id": 999}),
            (search_ideas, {"query": 'x" OR 1=1; DELETE FROM ideas; --'}),
            (search_entities, {"name": "'); DELETE FROM entities; --"}),
        ]
        for tool, kwargs in calls:
            await tool(context(deps), **kwargs)
        assert outside.execute("PRAGMA data_version").fetchone()[0] == before
        assert db.conn.total_changes == writer_changes
        assert await db.scalar("SELECT count(*) FROM vector_outbox") == 0
    finally:
        outside.close()


def test_tool_sources_hold_no_write_statements() -> None:
    """The tools read through `db.fetch*` only: no SQL that writes, no writer connection."""
    forbidden = (
        "INSERT ",
        "UPDATE ",
        "DELETE ",
        "REPLACE INTO",
        "CREATE ",
        "DROP ",
        ".write(",
        ".conn",
        "execute",
    )
    sources = Path(__file__).resolve().parents[2] / "cairn" / "tools"
    for path in sources.glob("*.py"):
        text = path.read_text()
        for word in forbidden:
            assert word not in text, f"{path.name} contains {word!r}"
