"""Every MCP tool stays within 8K characters at its largest arguments, says what it left out and how to
get it, and refuses an argument it does not take — all through a real `cairn mcp` stdio process."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from mcp import Client

from cairn.config import Settings
from cairn.mcp.server import _bounded_search
from cairn.mcp.sizing import REPLY_CHARS, size
from cairn.store.store import Store, message_hash
from cairn.store.vectors import VectorIndex
from tests.mcp.helpers import _server, call, error
from tests.tools.memory import add_idea, add_span, insert

CROWD = "s-crowd"
PROJECT = "/work/crowd"
#: Of each kind, enough that a page of them overflows 8K characters several times over.
MESSAGES = 40
SPANS = 40
QUESTIONS = 40
TODOS = 40
#: Long words, so that a text is long in characters yet short in tokens for the embedding model.
FILLER = (
    "exponential backoff scheduling keeps reconnecting workers idempotent; deduplicated "
    "acknowledgements prevent duplicated deliveries whenever overloaded brokers restart unexpectedly"
)


def _long(what: str, n: int) -> str:
    """A text of about 250 characters about the retry queue, different for each `n`."""
    return f"{what} {n} about the retry queue: {FILLER}"


@pytest.fixture
async def crowded(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> dict[str, Any]:
    """A store with hundreds of long ideas, spans and messages about one subject in one session."""
    return await crowd(settings, embedding_function)


async def crowd(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> dict[str, Any]:
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        async with store.db.write() as conn:
            project = await insert(conn, "INSERT INTO projects (path, name) VALUES (?, 'crowd')", (PROJECT,))
            await conn.execute("INSERT INTO sessions (id, project_id) VALUES (?, ?)", (CROWD, project))
            file_id = await insert(
                conn, "INSERT INTO transcript_files (path, session_id) VALUES ('/t/crowd.jsonl', ?)", (CROWD,)
            )
            for n in range(MESSAGES):
                text = _long("Message", n)
                await conn.execute(
                    "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, "
                    "role, kind, text, content_hash, timestamp) "
                    "VALUES (?, ?, ?, ?, 0, 10, 'user', 'text', ?, ?, '2025-03-04T05:06:07.000Z')",
                    (CROWD, file_id, n + 1, n + 1, text, message_hash("user", "text", text)),
                )
            for n in range(SPANS):
                await add_span(conn, CROWD, f"Retry queue topic {n}", n + 1, n + 1, summary=_long("Topic", n))
            line = MESSAGES
            ideas = []
            for intent, count in (("question", QUESTIONS), ("todo", TODOS)):
                for n in range(count):
                    line += 1
                    said_at = f"2025-03-04T06:{line // 60:02}:{line % 60:02}.000Z"  # one second apart
                    ideas.append(
                        await add_idea(
                            conn, CROWD, intent, _long(intent, n), line, file_id=file_id, said_at=said_at
                        )
                    )
        await store.sync_vectors()
    finally:
        await store.close()
    return {"middle": ideas[len(ideas) // 2]}


async def _reply(client: Client, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A tool's reply text, checked against the bound, and its JSON."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    text = result.content[0].text
    assert len(text) <= REPLY_CHARS, (tool, args, len(text))
    return text, json.loads(text)


@pytest.mark.process
async def test_search_at_its_largest_limit_fills_the_bound_and_its_cursor_loses_nothing(
    crowded: dict[str, Any], settings: Settings
) -> None:
    async with Client(_server(settings.home)) as client:
        for kind in ("all", "ideas", "spans", "messages"):
            args = {"query": "retry queue", "kind": kind, "limit": 100, "mode": "keyword"}
            text, page = await _reply(client, "search", args)
            shown = len(page["results"])
            assert len(text) > REPLY_CHARS * 3 // 4 and shown > 10, "the page is filled, not cut short"
            assert shown + page["omitted"]["results"] == min(100, page["total"]), kind
            assert f"{page['omitted']['results']} results left out" in page["hint"], page["hint"]
            assert "pass next_cursor as cursor" in page["hint"] and page["next_cursor"]

        # Following the cursors of full pages returns every idea once: none left out is skipped.
        args = {"query": "retry queue", "kind": "ideas", "limit": 100, "project": PROJECT}
        seen: list[str] = []
        while True:
            _, page = await _reply(client, "search", args)
            seen += [result["id"] for result in page["results"]]
            if not page["next_cursor"]:
                break
            args = {"cursor": page["next_cursor"], "limit": 100}
        assert len(seen) == len(set(seen)) == page["total"] == QUESTIONS + TODOS

        small = (await _reply(client, "search", {"query": "retry queue", "limit": 3}))[1]
        assert len(small["results"]) == 3 and "omitted" not in small and "left out" not in small["hint"]


@pytest.mark.process
async def test_every_other_tool_at_its_largest_arguments_stays_within_the_bound(
    crowded: dict[str, Any], settings: Settings
) -> None:
    middle = str(crowded["middle"])
    async with Client(_server(settings.home)) as client:
        _, open_items = await _reply(client, "open_questions", {"project": PROJECT, "limit": 200})
        assert open_items["question_count"] == QUESTIONS and open_items["todo_count"] == TODOS
        listed = len(open_items["questions"]) + len(open_items["todos"])
        assert listed + sum(open_items["omitted"].values()) == QUESTIONS + TODOS
        assert "left out" in open_items["hint"] and "pass project or session" in open_items["hint"]

        _, around = await _reply(client, "timeline", {"id": middle, "before": 50, "after": 50})
        assert around["omitted"] and "timeline(id)" in around["hint"]
        # The ideas nearest the item stay: the last one before it and the first one after it.
        assert around["before"][-1]["id"] == str(crowded["middle"] - 1)
        assert around["after"][0]["id"] in {middle, str(crowded["middle"] + 1)}

        _, passages = await _reply(client, "search_content", {"exact_terms": ["retry queue"], "limit": 50})
        assert passages["results"] and passages["next_cursor"]


@pytest.mark.process
async def test_an_unknown_argument_is_refused_in_one_line_naming_it_and_the_accepted_ones(
    crowded: dict[str, Any], settings: Settings
) -> None:
    async with Client(_server(settings.home)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name, tool in tools.items():
            assert tool.input_schema["additionalProperties"] is False, name
        accepted = ", ".join(tools["search"].input_schema["properties"])
        said = await error(client, "search", {"query": "retry queue", "max_results": 5})
        assert (
            said == f"search: bad arguments: max_results: not an argument of search, which takes {accepted}"
        )
        said = await error(client, "open_questions", {"projct": PROJECT, "todos": False})
        assert said.startswith(
            "open_questions: bad arguments: projct, todos: not an argument of open_questions"
        )
        assert "which takes project, session, include_todos, limit" in said
        for name in tools:
            said = await error(
                client, name, {"id": "1", "query": "x", "semantic_concepts": ["x"], "bogus": 1}
            )
            assert "\n" not in said and "bogus" in said and "which takes" in said, said
        # A misspelt filter is not quietly dropped, and a correct call still answers.
        page = await call(client, "search", {"query": "retry queue", "project": PROJECT})
        assert page["results"]


def _op_page(count: int, total: int, token: str | None) -> dict[str, Any]:
    """A search op page of `count` ideas with 200-character previews, as the op returns it."""
    results = [
        {
            "id": str(n),
            "kind": "idea",
            "intent": "todo",
            "said_at": "2025-03-04",
            "score": 0.5,
            "preview": "p" * 200,
        }
        for n in range(count)
    ]
    return {"results": results, "total": total, "next_token": token, "notices": []}


async def test_only_the_results_shown_are_counted_as_used() -> None:
    calls: list[tuple[int, bool]] = []

    async def page_of(count: int, record_usage: bool) -> dict[str, Any]:
        calls.append((count, record_usage))
        return _op_page(count, 500, "cursor")

    reply = await _bounded_search(page_of, 100)
    shown = len(reply["results"])
    assert calls == [(100, False), (shown, True)] and size(reply) <= REPLY_CHARS
    assert reply["omitted"] == {"results": 100 - shown} and reply["next_cursor"] == "cursor"

    calls.clear()
    await _bounded_search(page_of, 10)
    assert calls == [(10, True)], "the default page is read once"


async def test_a_cursor_too_long_for_any_page_is_dropped_and_the_reply_says_why() -> None:
    async def page_of(count: int, record_usage: bool) -> dict[str, Any]:
        return _op_page(count, 500, "t" * 20_000)  # what a query of many thousand characters makes

    reply = await _bounded_search(page_of, 100)
    assert size(reply) <= REPLY_CHARS and reply["results"] and reply["next_cursor"] is None
    assert "query is too long to page through" in reply["hint"]
