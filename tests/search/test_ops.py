"""The search socket ops through `run_op`, as the daemon and the direct CLI path run them, on a real store."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from cairn.daemon.server import OPS, BadArgumentsError, UnknownOpError, op_function, run_op
from cairn.search.errors import BadContinuationError, ItemNotFoundError, SearchError
from cairn.search.models import BadItemIdError
from cairn.store.store import Store
from tests.helpers.learn import EXPECTED_FIGURES, fill
from tests.tools.memory import MAIN, Memory, seed

SEARCH_OPS = (
    "search",
    "search_content",
    "show",
    "timeline",
    "open_questions",
    "learner_stats",
    "learn_associations",
    "learn_forget",
    "files",
)


@pytest.fixture
async def memory(store: Store) -> Memory:
    return await seed(store)


async def _usage(store: Store, idea: int) -> int:
    return int(await store.db.scalar("SELECT usage_count FROM ideas WHERE id = ?", (idea,)))


def test_every_search_op_is_registered() -> None:
    assert set(SEARCH_OPS) <= set(OPS)


def test_every_op_named_by_its_path_imports() -> None:
    """Ops in other modules are imported at their first call: a misspelt path would fail only then."""
    for op in OPS:
        fn = op_function(op)
        assert inspect.iscoroutinefunction(fn), op
        assert op_function(op) is fn  # resolved once
    with pytest.raises(UnknownOpError, match="unknown op 'nope'"):
        op_function("nope")


async def test_search_returns_a_json_page_and_records_usage_only_when_asked(
    store: Store, memory: Memory
) -> None:
    chroma = memory.ideas["chroma"]
    page = await run_op(
        store, "search", {"query": "Chroma outbox", "kind": "ideas", "record_usage": False, "limit": 5}
    )
    assert json.loads(json.dumps(page)) == page
    assert page["mode"] == "hybrid" and page["query"] == "Chroma outbox"
    ids = [result["id"] for result in page["results"]]
    assert str(chroma) in ids
    assert all(result["kind"] == "idea" for result in page["results"])
    assert await _usage(store, chroma) == 0

    await run_op(store, "search", {"query": "Chroma outbox", "kind": "ideas"})
    assert await _usage(store, chroma) == 1


async def test_search_nulls_mean_defaults_and_filters_apply(store: Store, memory: Memory) -> None:
    page = await run_op(
        store,
        "search",
        {
            "query": "button",
            "mode": "keyword",
            "project": "webapp",
            "session": None,
            "intents": ["decision"],
            "limit": None,
            "record_usage": False,
        },
    )
    assert [result["id"] for result in page["results"]] == [str(memory.ideas["button"])]


async def test_search_pages_through_a_continuation_token(store: Store, memory: Memory) -> None:
    args: dict[str, Any] = {"query": "SQLite vectors Chroma", "mode": "keyword", "limit": 1}
    first = await run_op(store, "search", {**args, "record_usage": False})
    assert first["total"] > 1 and first["next_token"]
    second = await run_op(store, "search", {"continuation": first["next_token"], "record_usage": False})
    assert second["results"] and second["results"][0]["id"] != first["results"][0]["id"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"query": "x", "limit": 500}, "bad search request: limit: input should be less than or equal to"),
        ({"query": "x", "mode": "fuzzy"}, "mode: input should be 'hybrid', 'semantic' or 'keyword' (got"),
        ({"query": "x", "since": "yesterday"}, "since: input should be a valid datetime"),
        ({"query": "x", "intents": ["wish"]}, "intents.0: input should be 'decision'"),
        ({"query": "x", "projcet": "cairn"}, "unknown argument(s) projcet; it takes query, mode, kind"),
        ({"query": "x", "record_usage": "yes"}, "record_usage must be true or false"),
    ],
)
async def test_bad_search_arguments_are_one_readable_line(
    store: Store, args: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SearchError) as caught:
        await run_op(store, "search", args)
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message and "errors.pydantic.dev" not in message


async def test_a_damaged_continuation_token_is_refused(store: Store) -> None:
    with pytest.raises(BadContinuationError, match="repeat the search without it"):
        await run_op(store, "search", {"continuation": "not-a-token"})


async def test_show_returns_the_full_item(store: Store, memory: Memory) -> None:
    blobs = memory.ideas["blobs"]
    item = await run_op(store, "show", {"id": str(blobs)})
    assert item["id"] == str(blobs) and item["kind"] == "idea"
    assert item["content"] == "Store vectors as blobs in SQLite"
    assert item["superseded"] and item["superseded_by"]["id"] == str(memory.ideas["chroma"])
    span = await run_op(store, "show", {"id": f"s{memory.spans['tools']}"})
    assert span["kind"] == "span" and span["title"] == "Indexing agent tools"
    assert (await run_op(store, "show", {"id": blobs}))["id"] == str(blobs)


async def test_show_refuses_bad_and_unknown_ids(store: Store, memory: Memory) -> None:
    with pytest.raises(BadItemIdError, match="is not an item id"):
        await run_op(store, "show", {"id": "banana"})
    with pytest.raises(ItemNotFoundError):
        await run_op(store, "show", {"id": "999999"})
    with pytest.raises(BadArgumentsError, match="missing a required argument: 'id'"):
        await run_op(store, "show", {})
    with pytest.raises(SearchError, match=r"bad show request: id: "):
        await run_op(store, "show", {"id": ["1"]})


async def test_timeline_lists_ideas_around_the_anchor(store: Store, memory: Memory) -> None:
    minilm = memory.ideas["minilm"]
    result = await run_op(store, "timeline", {"id": str(minilm), "before": 1, "after": 1})
    assert result["anchor"]["id"] == str(minilm)
    assert len(result["before"]) == 1 and len(result["after"]) == 1
    assert result["before"][0]["id"] == str(memory.ideas["offline"])
    with pytest.raises(SearchError, match="before: input should be less than or equal to 50"):
        await run_op(store, "timeline", {"id": str(minilm), "before": 51})


async def test_open_questions_lists_what_is_unresolved(store: Store, memory: Memory) -> None:
    result = await run_op(store, "open_questions", {"project": "cairn", "include_todos": True})
    questions = {item["id"] for item in result["questions"]}
    todos = {item["id"] for item in result["todos"]}
    assert str(memory.ideas["duplicates"]) in questions
    assert str(memory.ideas["offline"]) not in questions  # answered
    assert str(memory.ideas["write_tests"]) in todos
    assert str(memory.ideas["triggers"]) not in todos  # completed
    without = await run_op(store, "open_questions", {"session": MAIN, "include_todos": False, "limit": 1})
    assert without["todos"] == [] and len(without["questions"]) == 1
    with pytest.raises(SearchError, match="limit: input should be greater than or equal to 1"):
        await run_op(store, "open_questions", {"limit": 0})


async def test_search_content_returns_full_passages(store: Store, memory: Memory) -> None:
    result = await run_op(store, "search_content", {"exact_terms": ["blobs"], "limit": 5})
    assert result["results"], result
    assert any("blobs in SQLite" in chunk["content"] for chunk in result["results"])
    assert set(result) >= {"results", "statistics", "continuation", "navigation_hints"}


async def test_search_content_refuses_a_request_without_a_signal(store: Store) -> None:
    with pytest.raises(SearchError) as caught:
        await run_op(store, "search_content", {"semantic_concepts": [], "exact_terms": ["  "]})
    assert "give semantic_concepts" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(SearchError, match="limit must be between 1 and 50"):
        await run_op(store, "search_content", {"exact_terms": ["blobs"], "limit": 51})


async def test_learner_stats_counts_what_the_loop_stored(store: Store) -> None:
    assert await run_op(store, "learner_stats") == {
        **dict.fromkeys(EXPECTED_FIGURES, 0),
        "enabled": True,
        "threshold": 0.65,
        "timeout_seconds": 60.0,
        "recent_errors": [],
    }
    await fill(store)
    stats = await run_op(store, "learner_stats")
    assert {key: stats[key] for key in EXPECTED_FIGURES} == EXPECTED_FIGURES
    assert len(stats["recent_errors"]) == 2

    # Switched off, it still says what was learned: those associations keep ranking.
    store.settings = store.settings.model_copy(update={"learn_from_search": False})
    off = await run_op(store, "learner_stats")
    assert off["enabled"] is False and off["associations_created"] == stats["associations_created"]


async def test_learn_and_files_ops_refuse_bad_arguments_in_one_line(store: Store) -> None:
    await fill(store)
    for op, args, expected in (
        ("learn_associations", {"source": "robot"}, "source: input should be 'learned' or 'agent'"),
        ("learn_associations", {"limit": 0}, "limit: input should be greater than or equal to 1"),
        ("learn_associations", {"project": "nowhere"}, "no project 'nowhere' is stored"),
        ("learn_forget", {"ids": []}, "ids: list should have at least 1 item"),
        ("learn_forget", {"ids": ["x"]}, "ids.0: input should be a valid integer"),
        ("files", {"status": "lost"}, "status: input should be"),
    ):
        with pytest.raises(SearchError) as caught:
            await run_op(store, op, args)
        assert expected in str(caught.value) and "\n" not in str(caught.value), (op, str(caught.value))
    with pytest.raises(BadArgumentsError):
        await run_op(store, "files", {"colour": "red"})
    assert await run_op(store, "learn_associations", {"project": None, "source": None, "limit": None})
