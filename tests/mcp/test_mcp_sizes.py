"""Every MCP reply fits an agent's context: default replies stay within 8K characters, long texts come
in parts, long lists say what they left out, and a bad argument is refused in one line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from mcp import Client
from mcp.server import MCPServer
from pydantic import BaseModel, Field, ValidationError

from cairn.config import Settings
from cairn.mcp.backend import Backend
from cairn.mcp.server import build_server
from cairn.mcp.sizing import REPLY_CHARS, SHOW_TEXT_CHARS, fit, one_line
from cairn.store.store import Store, message_hash
from cairn.store.vectors import VectorIndex
from tests.mcp.helpers import call, error
from tests.tools.memory import Memory, add_idea, insert, seed

SESSION = "s-long"
LONG_MESSAGES = 12
HUB_RELATIONS = 150


def _message(n: int) -> str:
    """A ~4K-character message mentioning the retry queue; message 0 is a pasted ~26K-character log."""
    words = 1_200 if n == 0 else 200
    return f"Message {n} about the retry queue: " + " ".join(f"step{n}x{i} retry queue" for i in range(words))


@pytest.fixture
async def long_store(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> dict[str, Any]:
    """The usual seeded store plus a session of long messages and an idea with 150 relations."""
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        memory: Memory = await seed(store)
        async with store.db.write() as conn:
            project = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/long', 'long')")
            await conn.execute("INSERT INTO sessions (id, project_id) VALUES (?, ?)", (SESSION, project))
            file_id = await insert(
                conn,
                "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)",
                ("/t/long.jsonl", SESSION),
            )
            messages = []
            for n in range(LONG_MESSAGES):
                text = _message(n)
                messages.append(
                    await insert(
                        conn,
                        "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, "
                        "role, kind, text, content_hash, timestamp) "
                        "VALUES (?, ?, ?, ?, 0, 10, 'user', 'text', ?, ?, '2025-03-04T05:06:07.000Z')",
                        (SESSION, file_id, n + 1, n + 1, text, message_hash("user", "text", text)),
                    )
                )
            hub = await add_idea(
                conn, SESSION, "decision", "Retry the queue with backoff", 1, file_id=file_id
            )
            for n in range(HUB_RELATIONS):
                other = await add_idea(
                    conn, SESSION, "context", f"Detail {n} of the retry queue: " + "x" * 150, n + 2
                )
                await conn.execute(
                    "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) "
                    "VALUES (?, ?, 'builds_on')",
                    (other, hub),
                )
        await store.sync_vectors()
    finally:
        await store.close()
    return {"memory": memory, "messages": messages, "hub": hub}


@pytest.fixture
def server(
    settings: Settings, embedding_function: EmbeddingFunction[Documents], long_store: Any
) -> MCPServer:
    return build_server(Backend(settings, embedding_function))


async def _reply(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.content[0].text


async def test_search_content_with_default_arguments_fits_and_pages_through_everything(
    server: MCPServer, long_store: dict[str, Any]
) -> None:
    messages = {f"m{n}" for n in long_store["messages"]}
    async with Client(server) as client:
        seen: list[str] = []
        args: dict[str, Any] = {"exact_terms": ["retry queue"], "project": "/work/long"}
        pages = 0
        while True:
            text = await _reply(client, "search_content", args)
            assert len(text) <= REPLY_CHARS, len(text)
            page = json.loads(text)
            seen += [r["chunk_id"] for r in page["results"]]
            pages += 1
            if page["next_cursor"] is None:
                break
            args = {"cursor": page["next_cursor"]}
        assert pages > 1 and set(seen) == messages and len(seen) == len(messages)
        first = json.loads(await _reply(client, "search_content", {"exact_terms": ["retry queue"]}))
        assert any(r.get("omitted_chars") for r in first["results"])
        assert "show(chunk_id)" in first["navigation_hints"]["next_actions"][0]


async def test_show_reads_a_long_message_in_parts(server: MCPServer, long_store: dict[str, Any]) -> None:
    pasted = f"m{long_store['messages'][0]}"
    async with Client(server) as client:
        parts: list[str] = []
        offset = 0
        while True:
            text = await _reply(client, "show", {"id": pasted, "offset": offset})
            assert len(text) <= REPLY_CHARS
            item = json.loads(text)
            parts.append(item["content"])
            if "next_offset" not in item:
                break
            offset = item["next_offset"]
        whole = _message(0)
        assert item["content_chars"] == len(whole) and "".join(parts) == whole
        assert len(parts) == -(-len(whole) // SHOW_TEXT_CHARS) > 1
        short = await call(client, "show", {"id": f"m{long_store['messages'][1]}"})
        assert short["content"] == _message(1) and "next_offset" not in short and "content_chars" not in short


async def test_a_hub_idea_keeps_its_first_relations_and_counts_the_rest(
    server: MCPServer, long_store: dict[str, Any]
) -> None:
    async with Client(server) as client:
        text = await _reply(client, "show", {"id": str(long_store["hub"])})
        assert len(text) <= REPLY_CHARS
        item = json.loads(text)
        assert item["content"] == "Retry the queue with backoff"
        assert len(item["relations"]) + item["omitted"]["relations"] == 100  # the op lists at most 100
        assert item["relations"][0]["idea"]["preview"].startswith("Detail 0 of the retry queue")


async def test_every_tool_answers_within_the_bound_by_default(
    server: MCPServer, long_store: dict[str, Any]
) -> None:
    memory: Memory = long_store["memory"]
    calls = [
        ("search", {"query": "retry queue"}),
        ("search", {"query": "retry queue", "kind": "messages"}),
        ("search_content", {"semantic_concepts": ["retrying a queue"]}),
        ("show", {"id": f"m{long_store['messages'][0]}"}),
        ("timeline", {"id": str(long_store["hub"])}),
        ("timeline", {"id": str(memory.ideas["chroma"])}),
        ("open_questions", {}),
    ]
    async with Client(server) as client:
        for tool, args in calls:
            assert len(await _reply(client, tool, args)) <= REPLY_CHARS, (tool, args)


def test_fit_shortens_the_longest_list_and_keeps_the_counts() -> None:
    question = {"id": "1", "intent": "question", "preview": "q" * 200}
    reply = {"questions": [question] * 90, "todos": [question] * 10, "question_count": 90, "todo_count": 10}
    fitted = fit(reply)
    assert len(json.dumps(fitted)) <= REPLY_CHARS
    assert fitted["question_count"] == 90 and fitted["todo_count"] == 10
    for key in ("questions", "todos"):
        assert len(fitted[key]) + fitted["omitted"].get(key, 0) == len(reply[key])
    assert fitted["questions"] == reply["questions"][: len(fitted["questions"])], "the first ones stay"
    assert fit({"a": [1, 2]}) == {"a": [1, 2]}


async def test_bad_arguments_are_refused_in_one_line_naming_the_argument(server: MCPServer) -> None:
    async with Client(server) as client:
        for tool, args, named in [
            ("search", {"query": "x", "limit": 0}, "limit"),
            ("search_content", {"exact_terms": ["x"], "limit": "many"}, "limit"),
            ("show", {}, "id"),
            ("show", {"id": "1", "offset": -5}, "offset"),
            ("timeline", {"id": "1", "before": 99}, "before"),
            ("search", {"query": "x", "mode": "fuzzy"}, "mode"),
        ]:
            said = await error(client, tool, args)
            assert "\n" not in said and "http" not in said and "pydantic" not in said, said
            assert said.startswith(f"{tool}: bad arguments: {named}: "), said


def test_one_line_quotes_a_long_value_short() -> None:
    class Arguments(BaseModel):
        limit: int = Field(ge=1)

    with pytest.raises(ValidationError) as caught:
        Arguments.model_validate({"limit": "9" * 500 + "x"})
    said = one_line("search", caught.value)
    assert said.startswith("search: bad arguments: limit: ") and len(said) < 200 and "…" in said
