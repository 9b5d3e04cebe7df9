"""`cairn mcp`: its tools in-process on a real store, then a real stdio subprocess, with or without daemon."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import MCPServer

from cairn.config import Settings
from cairn.daemon.install import mcp_entry, write_launchers
from cairn.mcp.backend import Backend
from cairn.mcp.server import build_server, content_page
from cairn.store.lock import StoreLock
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.daemon.helpers import Daemons, enqueue, offline_daemons, query, wait_for
from tests.helpers.cli import cairn
from tests.helpers.learn import EXPECTED_FIGURES, fill
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.mcp.helpers import _server, call, error
from tests.tools.memory import Memory, seed_closed

TOOLS = {"search", "search_content", "show", "timeline", "open_questions"}
COMPACT_KEYS = {"id", "kind", "intent", "date", "score", "preview", "superseded", "superseded_by"}
LONG_TRANSCRIPT = REAL_TRANSCRIPTS / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"


@pytest.fixture
async def memory(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> Memory:
    """A seeded store, closed again: the MCP server opens it itself, per call."""
    return await seed_closed(settings, embedding_function)


@pytest.fixture
def server(settings: Settings, embedding_function: EmbeddingFunction[Documents], memory: Memory) -> MCPServer:
    """The server over the seeded store. Tests connect with `async with Client(server)` themselves:
    anyio's cancel scopes must be entered and left in one task, which an async fixture does not do."""
    return build_server(Backend(settings, embedding_function))


def _nulls(value: Any) -> bool:
    if isinstance(value, dict):
        return any(item is None or item in ([], {}) or _nulls(item) for item in value.values())
    if isinstance(value, list):
        return any(_nulls(item) for item in value)
    return False


# In process


async def test_every_tool_and_every_parameter_is_described(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 30, tool.name
            assert tool.description == tool.description.strip(), tool.name
            assert all(line == line.lstrip() for line in tool.description.splitlines()), (
                f"{tool.name}'s description keeps its docstring indentation"
            )
            assert tool.annotations is not None and tool.annotations.read_only_hint
            for name, schema in tool.input_schema.get("properties", {}).items():
                assert len(schema.get("description", "")) > 15, f"{tool.name}.{name}"
        search = tools["search"].input_schema["properties"]
        assert set(search) == {
            "query",
            "mode",
            "kind",
            "project",
            "session",
            "intents",
            "origins",
            "since",
            "until",
            "include_superseded",
            "limit",
            "cursor",
        }
        assert "next_cursor" in search["cursor"]["description"]
        content = tools["search_content"].input_schema["properties"]
        assert "cursor" in content and not {"continuation", "continuation_token"} & set(content)
        # Issue 31: the old names of cursor are gone from what the agent reads.
        assert not any("deprecated" in json.dumps(t.input_schema).lower() for t in tools.values())
        assert "working directory" in search["project"]["description"]
        assert search["mode"]["enum"] == ["hybrid", "semantic", "keyword"]
        assert search["kind"]["enum"] == ["ideas", "spans", "messages", "all"]
        assert client.instructions and "show(id)" in client.instructions


async def test_search_answers_compactly_and_show_in_full(server: MCPServer, memory: Memory) -> None:
    async with Client(server) as client:
        page = await call(
            client, "search", {"query": "vectors blobs SQLite", "kind": "ideas", "include_superseded": True}
        )
        assert page["results"] and page["total"] >= len(page["results"])
        assert set(page) == {"results", "total", "next_cursor", "notices", "hint"}
        assert "show(id)" in page["hint"]
        for result in page["results"]:
            assert set(result) <= COMPACT_KEYS and {"id", "kind", "score", "preview"} <= set(result)
            assert result["score"] == round(result["score"], 2)
        blobs = next(r for r in page["results"] if r["id"] == str(memory.ideas["blobs"]))
        assert blobs["superseded"] is True and blobs["superseded_by"] == str(memory.ideas["chroma"])
        assert blobs["intent"] == "decision" and len(blobs["date"]) == 10

        item = await call(client, "show", {"id": blobs["id"]})
        assert item["content"] == "Store vectors as blobs in SQLite" and item["kind"] == "idea"
        assert item["superseded_by"]["id"] == str(memory.ideas["chroma"])
        assert not _nulls(item), "fields that do not apply are left out"


async def test_search_and_search_content_page_with_cursor_and_next_cursor(server: MCPServer) -> None:
    async with Client(server) as client:
        args = {"query": "SQLite Chroma vectors", "mode": "keyword", "limit": 1}
        first = await call(client, "search", args)
        assert first["next_cursor"] and "pass next_cursor as cursor" in first["hint"]
        second = await call(client, "search", {"cursor": first["next_cursor"]})
        assert second["results"][0]["id"] != first["results"][0]["id"]

        last = await call(client, "search_content", {"exact_terms": ["blobs"]})
        assert last["results"] and last["next_cursor"] is None and "continuation" not in last
        refusal = await error(client, "search_content", {"cursor": "garbage"})
        assert "repeat the search without it" in refusal


def test_search_content_pages_are_told_in_next_cursor() -> None:
    op_page = {
        "results": [],
        "continuation": {"has_more": True, "next_token": "tok"},
        "navigation_hints": {"next_actions": ["Use continuation_token for more results (3 more)"]},
    }
    page = content_page(op_page)
    assert page["next_cursor"] == "tok" and "continuation" not in page
    actions = page["navigation_hints"]["next_actions"]
    assert actions == ["Pass next_cursor as cursor for more results (3 more)"]


async def test_search_takes_the_cli_date_forms(server: MCPServer, memory: Memory) -> None:
    """The seed's Chroma span was said in January 2025, its Chroma idea today: ages, ISO dates and words
    filter alike."""
    async with Client(server) as client:
        query = {"query": "Chroma", "limit": 100}

        async def dates(**when: str) -> list[str]:
            return [r["date"] for r in (await call(client, "search", {**query, **when}))["results"]]

        everything = await dates(since="2025-01-01")
        assert "2025-01-02" in everything
        recent = await dates(since="3d")
        assert len(recent) < len(everything) and all(d > "2025-06-01" for d in recent)
        assert await dates(since="yesterday") == recent
        older = await dates(until="2w")
        assert older and all(d < "2025-06-01" for d in older)
        assert await dates(until="2024-12-31T23:00Z") == []


async def test_timeline_open_questions_search_content_and_learner_stats_answer(
    settings: Settings, embedding_function: EmbeddingFunction[Documents], memory: Memory
) -> None:
    server = build_server(Backend(settings, embedding_function), learner_stats=True)
    async with Client(server) as client:
        around = await call(client, "timeline", {"id": str(memory.ideas["minilm"]), "before": 2, "after": 1})
        assert around["anchor"]["id"] == str(memory.ideas["minilm"]) and len(around["before"]) == 2

        open_items = await call(client, "open_questions", {"project": "/work/cairn"})
        assert str(memory.ideas["duplicates"]) in {q["id"] for q in open_items["questions"]}
        assert str(memory.ideas["write_tests"]) in {t["id"] for t in open_items["todos"]}

        content = await call(client, "search_content", {"exact_terms": ["blobs"]})
        assert any("blobs in SQLite" in chunk["content"] for chunk in content["results"])
        assert {"statistics", "next_cursor", "navigation_hints"} <= set(content)

        stats = await call(client, "learner_stats")
        assert stats["enabled"] is True
        assert {key: stats[key] for key in EXPECTED_FIGURES} == dict.fromkeys(EXPECTED_FIGURES, 0)


async def test_learner_stats_returns_the_stored_figures(
    settings: Settings, embedding_function: EmbeddingFunction[Documents], memory: Memory
) -> None:
    async with await Store.open(settings, vectors=VectorIndex(settings, embedding_function)) as store:
        await fill(store)
    server = build_server(Backend(settings, embedding_function), learner_stats=True)
    async with Client(server) as client:
        stats = await call(client, "learner_stats")
    assert {key: stats[key] for key in EXPECTED_FIGURES} == EXPECTED_FIGURES
    assert (stats["enabled"], stats["threshold"], stats["timeout_seconds"]) == (True, 0.65, 60.0)
    assert "search result missing" in stats["recent_errors"]


async def test_bad_calls_are_tool_errors_and_the_server_keeps_answering(server: MCPServer) -> None:
    async with Client(server) as client:
        assert "is not an item id" in await error(client, "show", {"id": "banana"})
        assert "999999" in await error(client, "show", {"id": "999999"})
        assert "repeat the search without it" in await error(client, "search", {"cursor": "garbage"})
        assert "give semantic_concepts" in await error(client, "search_content", {})
        assert "limit" in await error(client, "search", {"query": "x", "limit": 500})
        bad_date = await error(client, "search", {"query": "x", "since": "last week"})
        assert "since 'last week' is not a date: use 2025-01-31" in bad_date and "3d" in bad_date
        assert "before" in await error(client, "timeline", {"id": "1", "before": 99})
        # Issue 30: dates at the edge of the calendar gave a bare "Error executing tool search".
        for edge in ("0001-01-01", "9999-12-31T23:59:59-12:00"):
            said = await error(client, "search", {"query": "x", "since": edge})
            assert f"since {edge!r} is too far in the past or future" in said, said
        page = await call(client, "search", {"query": "Chroma"})
        assert page["results"]


async def test_a_busy_store_answers_by_keyword_and_no_lock_is_kept_between_calls(
    server: MCPServer, settings: Settings
) -> None:
    async with Client(server) as client:
        await call(client, "search", {"query": "Chroma"})
        assert StoreLock(settings.lock_path).holder_pid() is None

        with StoreLock(settings.lock_path):  # another cairn process working directly, as far as flock knows
            busy = await call(client, "search", {"query": "Chroma"})
        assert busy["results"]
        notices = " ".join(busy.get("notices", []))
        assert f"process {os.getpid()}" in notices and "is writing the store" in notices, busy
        assert (await call(client, "search", {"query": "Chroma"}))["results"]


# A real `cairn mcp` subprocess


async def _search_and_show(server: StdioServerParameters, memory: Memory) -> None:
    async with Client(server) as connected:
        page = await call(connected, "search", {"query": "Chroma outbox", "kind": "ideas"})
        assert str(memory.ideas["chroma"]) in [r["id"] for r in page["results"]]
        item = await call(connected, "show", {"id": str(memory.ideas["chroma"])})
        assert item["content"] == "Store vectors in Chroma, derived from SQLite through an outbox"
        refusal = await error(connected, "show", {"id": "nope"})
        assert "is not an item id" in refusal and "daemon refused" not in refusal
        again = await call(connected, "search", {"query": "embedding model offline", "mode": "semantic"})
        assert again["results"]


@pytest.mark.process
async def test_a_stdio_subprocess_answers_from_the_store_directly(
    settings: Settings, memory: Memory, tmp_path: Path
) -> None:
    await _search_and_show(_server(settings.home), memory)
    assert StoreLock(settings.lock_path).holder_pid() is None


@pytest.mark.process
async def test_a_stdio_server_reports_its_version_and_offers_learner_stats_only_when_set(
    settings: Settings, memory: Memory
) -> None:
    async with Client(_server(settings.home)) as connected:
        assert connected.server_info.name == "cairn"
        assert connected.server_info.version == importlib.metadata.version("cairn-memory") != ""
        assert {tool.name for tool in (await connected.list_tools()).tools} == TOOLS
    async with Client(_server(settings.home, CAIRN_MCP_LEARNER_STATS="true")) as connected:
        assert {tool.name for tool in (await connected.list_tools()).tools} == TOOLS | {"learner_stats"}
        assert (await call(connected, "learner_stats"))["enabled"] is True


@pytest.fixture
def daemons(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    """Daemons on the offline model that index in many small runs; all killed at the end."""
    settings = {
        "CAIRN_BATCH_WINDOW_SECONDS": "0.05",
        "CAIRN_CONTINUOUS_TOKEN_BUDGET": "1000",
        "CAIRN_IDLE_EXIT_SECONDS": "60",
    }
    with offline_daemons(cairn_home, monkeypatch, **settings) as started:
        yield started


@pytest.mark.process
async def test_a_stdio_subprocess_routes_through_a_running_daemon(
    daemons: Daemons, settings: Settings, memory: Memory
) -> None:
    pid = daemons.start()
    assert StoreLock(settings.lock_path).holder_pid() == pid  # so only the socket can answer
    await _search_and_show(_server(settings.home), memory)


@pytest.mark.process
async def test_search_while_the_daemon_indexes_a_transcript(
    daemons: Daemons, settings: Settings, memory: Memory, tmp_path: Path
) -> None:
    daemons.start()
    project = tmp_path / "claude-projects" / "-work-viewer"
    project.mkdir(parents=True)
    transcript = project / LONG_TRANSCRIPT.name
    shutil.copy(LONG_TRANSCRIPT, transcript)
    enqueue(settings.home, transcript, transcript.stem)

    def busy() -> bool:
        return query(
            settings.home, "SELECT count(*) FROM work_queue WHERE status IN ('pending', 'running')"
        ) != [(0,)]

    searches_while_busy = 0
    async with Client(_server(settings.home)) as connected:
        for _ in range(200):
            indexing = busy()
            page = await call(connected, "search", {"query": "Chroma outbox", "kind": "ideas"})
            assert str(memory.ideas["chroma"]) in [r["id"] for r in page["results"]]
            searches_while_busy += indexing
            if not indexing or searches_while_busy >= 5:
                break
        wait_for(lambda: query(settings.home, "SELECT count(*) FROM messages")[0][0] > 0, 60, "a capture")
        args = {"query": "TodoItem component", "kind": "messages", "mode": "keyword"}
        messages = await call(connected, "search", args)
        assert messages["results"], "what the daemon captured is searchable through the same server"
    assert searches_while_busy >= 1


@pytest.mark.process
async def test_the_installed_entry_starts_a_working_server(
    settings: Settings, memory: Memory, tmp_path: Path
) -> None:
    write_launchers(settings)  # as `cairn install` does: the entry runs the home's `cairn-mcp` launcher
    entry = mcp_entry(settings)
    assert entry["env"] == {"CAIRN_HOME": str(settings.home)}
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
    async with Client(server) as connected:
        item = await call(connected, "show", {"id": str(memory.ideas["blobs"])})
        assert item["superseded"] is True


@pytest.mark.process
def test_mcp_help_says_how_claude_code_uses_it() -> None:
    text = " ".join(cairn("mcp", "--help", timeout=60).stdout.split())
    assert "cairn install" in text and "~/.claude.json" in text and "stdout" in text
