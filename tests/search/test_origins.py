"""What a message is — the person's prompt, the assistant's reply, a tool call or its result — is stored
at capture and carried to every search result, and `--from` (`origins`) finds messages of one kind only.

A tool's output is kept in a `user` record by Claude Code: before origins, a traceback was shown as
something the person said (`msg:user`)."""

from __future__ import annotations

from pathlib import Path

from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.search.hybrid import search
from cairn.search.models import SearchRequest
from cairn.store.store import Store
from tests.helpers.builders import Transcript
from tests.helpers.cli import cairn


def failing_build(cwd: Path) -> Transcript:
    t = Transcript(cwd)
    t.user("the webpack build fails on the tokenizer import, can you look?")
    t.say("I'll run the webpack build to see the tokenizer error.")
    t.tool(
        "Bash",
        {"command": "npm run build", "description": "Build"},
        "ERROR in ./src/tokenizer.ts\nModule not found: webpack cannot resolve 'tiktoken/lite'",
        is_error=True,
    )
    t.tool("Read", {"file_path": f"{cwd}/webpack.config.js"}, "module.exports = { resolve: {} }")
    t.say("The webpack config has no alias for the tokenizer package; adding one fixes the build.")
    # Claude Code writes this in the person's name when they stop a turn: it asks nothing.
    t.user("[Request interrupted by user]")
    return t


async def test_every_message_is_stored_with_its_origin_tool_and_argument(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    path = failing_build(tmp_path / "app").write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    rows = await store.db.fetchall("SELECT origin, tool, tool_arg, failed FROM messages ORDER BY line")

    assert [tuple(row) for row in rows] == [
        ("prompt", None, None, 0),
        ("reply", None, None, 0),
        ("tool_call", "Bash", "npm run build", 0),
        ("tool_result", "Bash", "npm run build", 1),
        ("tool_call", "Read", f"{tmp_path / 'app'}/webpack.config.js", 0),
        ("tool_result", "Read", f"{tmp_path / 'app'}/webpack.config.js", 0),
        ("reply", None, None, 0),
        ("system", None, None, 0),
    ]


async def test_results_say_what_each_message_is_and_origins_filter_them(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    path = failing_build(tmp_path / "app").write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    async def found(**filters: object) -> list[tuple[str | None, str | None, bool]]:
        request = SearchRequest(query="webpack tokenizer", mode="keyword", kind="messages", **filters)
        page = await search(store.db, None, settings, request, record_usage=False)
        return [(r.origin, r.call, r.failed) for r in page.results]

    everything = await found()
    assert ("tool_result", "Bash: npm run build", True) in everything
    assert ("prompt", None, False) in everything
    assert await found(origins=["tool_result"]) == [("tool_result", "Bash: npm run build", True)]
    assert {origin for origin, _, _ in await found(origins=["prompt", "reply"])} == {"prompt", "reply"}
    # Ideas and topic spans have no origin: asking for one searches messages only.
    request = SearchRequest(query="webpack tokenizer", mode="keyword", kind="all", origins=["prompt"])
    page = await search(store.db, None, settings, request, record_usage=False)
    assert [r.kind for r in page.results] == ["message"]


def test_an_unknown_origin_is_refused_with_the_choices(cairn_home: Path) -> None:
    result = cairn("search", "build", "--from", "prompt,stdout", check=False)

    assert result.returncode == 2
    assert "unknown --from stdout" in result.stderr
    assert "tool_result" in result.stderr


async def test_a_prior_per_origin_and_per_tool_weighs_each_kind_of_message(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    path = failing_build(tmp_path / "app").write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    async def first(boosts: dict[str, float]) -> str | None:
        by_origin = {key: value for key, value in settings.search_boosts.items() if ":" not in key}
        weighed = settings.model_copy(update={"search_boosts": {**by_origin, **boosts}})
        request = SearchRequest(query="webpack tokenizer", mode="keyword", kind="messages")
        page = await search(store.db, None, weighed, request, record_usage=False)
        return page.results[0].origin

    assert await first({"tool_result": 5.0}) == "tool_result"
    # The tool's own entry comes before its origin's.
    assert await first({"tool_result": 5.0, "tool_result:Bash": 0.01}) != "tool_result"
    assert await first({"prompt": 5.0}) == "prompt"


async def test_origins_filter_the_vector_candidates_too(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """Chroma's neighbours are drawn under the origins' stored kinds, and SQL keeps the origins asked."""
    path = failing_build(tmp_path / "app").write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None
    await store.sync_vectors()

    async def origins(*wanted: str) -> set[str | None]:
        request = SearchRequest(
            query="webpack tokenizer build",
            mode="semantic",
            kind="messages",
            origins=list(wanted),
            min_score=0,
        )
        page = await search(store.db, store.vectors, settings, request, record_usage=False)
        assert page.vectors_unavailable is None and page.results
        return {r.origin for r in page.results}

    assert await origins("prompt") == {"prompt"}
    assert await origins("reply") == {"reply"}
    assert await origins("tool_call", "prompt") == {"tool_call", "prompt"}
