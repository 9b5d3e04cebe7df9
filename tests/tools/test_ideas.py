"""The idea tools against a real store: search (full text + vectors), open items, recent ideas, relations."""

from __future__ import annotations

import pytest
from pydantic_ai import RunContext

from cairn.tools import ToolDeps
from cairn.tools.ideas import (
    get_idea_relations,
    get_open_questions,
    get_open_todos,
    get_recent_ideas,
    search_ideas,
)
from cairn.tools.results import IdeaList, IdeaRelations, Notice
from tests.tools.memory import EMPTY, MAIN, OTHER, SAID_AT, Memory, Seeded, context

pytestmark = pytest.mark.asyncio(loop_scope="module")


def ids(result: IdeaList | Notice) -> list[int]:
    assert isinstance(result, IdeaList), result
    return [idea.id for idea in result.ideas]


async def test_search_finds_by_words_and_marks_superseded(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    result = await search_ideas(ctx, query="vectors as blobs in SQLite")
    assert isinstance(result, IdeaList)
    assert result.ideas[0].id == memory.ideas["blobs"]
    blobs = result.ideas[0]
    assert blobs.superseded_by == memory.ideas["chroma"]
    assert (blobs.session, blobs.line, blobs.intent) == (MAIN, 12, "decision")
    assert blobs.at == SAID_AT  # when it was said, not when it was stored
    assert '"superseded_by":' in result.model_dump_json()
    chroma = next(idea for idea in result.ideas if idea.id == memory.ideas["chroma"])
    assert chroma.superseded_by is None
    assert "superseded_by" not in chroma.model_dump_json()  # nulls are not sent to the model


async def test_search_finds_by_meaning(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    # No word in common with "MiniLM int8 ONNX embeddings run offline" / "Which embedding model ..."
    # apart from what stemming would give: the vectors find them.
    result = await search_ideas(
        ctx, query="a neural network that turns sentences into vectors without internet"
    )
    assert isinstance(result, IdeaList)
    found = {idea.id: idea for idea in result.ideas}
    assert memory.ideas["minilm"] in found or memory.ideas["offline"] in found
    assert all(idea.similarity is None or 0 <= idea.similarity <= 1 for idea in result.ideas)
    assert any(idea.similarity is not None for idea in result.ideas)


async def test_search_without_vectors_uses_full_text(seeded: Seeded, memory: Memory) -> None:
    ctx = context(ToolDeps(db=seeded.store.db, vectors=None))
    assert ids(await search_ideas(ctx, query="LoginButton sign-in")) == [memory.ideas["button"]]
    assert ids(await search_ideas(ctx, query="neural network without internet")) == []


async def test_search_survives_a_failing_vector_index(
    deps: ToolDeps, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("chroma is gone")

    assert deps.vectors is not None
    monkeypatch.setattr(deps.vectors, "query", broken)
    assert memory.ideas["button"] in ids(await search_ideas(context(deps), query="LoginButton"))


async def test_search_filters_by_session_and_intent(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    everywhere = ids(await search_ideas(ctx, query="button component vectors SQLite", limit=25))
    assert memory.ideas["button"] in everywhere and memory.ideas["chroma"] in everywhere
    other = ids(await search_ideas(ctx, query="button component vectors SQLite", session=OTHER))
    assert other == [memory.ideas["button"]]
    decisions = await search_ideas(ctx, query="SQLite database vectors", intent="problem", limit=25)
    assert ids(decisions) == [memory.ideas["locked"]]


async def test_search_limit_is_clamped(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    assert len(ids(await search_ideas(ctx, query="SQLite vectors", limit=1))) == 1
    assert len(ids(await search_ideas(ctx, query="SQLite vectors", limit=0))) > 1  # the default, not zero
    assert len(ids(await search_ideas(ctx, query="SQLite vectors", limit=10_000))) <= 25


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "*",
        "AND(",
        "NEAR/3 SQLite",
        'SQLite" OR "x',
        "content:SQLite",
        "^SQLite -Chroma +x",
        "sqlite*",
        "((((",
        "NOT",
        "日本語のテキスト",
        "ünïcode café 🙂",
        "\x00\x01",
        "' OR 1=1 --",
        "lone \ud800 surrogate SQLite",
    ],
)
async def test_search_never_fails_on_hostile_queries(
    ctx: RunContext[ToolDeps], memory: Memory, query: str
) -> None:
    result = await search_ideas(ctx, query=query)
    assert isinstance(result, IdeaList)
    if "SQLite" in query and "NEAR" not in query:
        assert memory.ideas["locked"] in ids(result) or memory.ideas["blobs"] in ids(result)


async def test_search_notices(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    blank = await search_ideas(ctx, query="   ")
    assert isinstance(blank, Notice) and "empty" in blank.notice
    unknown = await search_ideas(ctx, query="SQLite", session="no-such-session")
    assert isinstance(unknown, Notice) and "no session" in unknown.notice
    surrogate = await get_open_todos(ctx, session="s-\udc00")
    assert isinstance(surrogate, Notice) and "no session" in surrogate.notice


async def test_open_questions_exclude_answered(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    # Problems count as open questions; the answered question does not; newest first.
    assert ids(await get_open_questions(ctx, session=MAIN)) == [
        memory.ideas["locked"],
        memory.ideas["duplicates"],
    ]
    assert ids(await get_open_questions(ctx, session=MAIN, limit=1)) == [memory.ideas["locked"]]
    assert ids(await get_open_questions(ctx, session=OTHER)) == []
    unknown = await get_open_questions(ctx, session="nope")
    assert isinstance(unknown, Notice) and "'nope'" in unknown.notice


async def test_open_todos_exclude_completed(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    assert ids(await get_open_todos(ctx, session=MAIN)) == [memory.ideas["write_tests"]]
    assert ids(await get_open_todos(ctx, session=EMPTY)) == []


async def test_recent_ideas_newest_first(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    assert ids(await get_recent_ideas(ctx, session=MAIN, limit=3)) == [
        memory.ideas["locked"],
        memory.ideas["triggers"],
        memory.ideas["write_tests"],
    ]
    assert ids(await get_recent_ideas(ctx, session=MAIN, intent="todo")) == [
        memory.ideas["triggers"],
        memory.ideas["write_tests"],
    ]
    completed = (await get_recent_ideas(ctx, session=MAIN, intent="todo")).ideas[0]  # type: ignore[union-attr]
    assert completed.completed_at == SAID_AT
    assert len(ids(await get_recent_ideas(ctx, session=MAIN))) == 8


async def test_idea_relations_both_directions(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    result = await get_idea_relations(ctx, idea_id=memory.ideas["chroma"])
    assert isinstance(result, IdeaRelations)
    assert result.idea.id == memory.ideas["chroma"]
    assert [(r.relation, r.idea.id) for r in result.outgoing] == [("supersedes", memory.ideas["blobs"])]
    assert [(r.relation, r.idea.id) for r in result.incoming] == [("relates_to", memory.ideas["duplicates"])]
    assert result.outgoing[0].idea.content == "Store vectors as blobs in SQLite"
    assert result.outgoing[0].idea.superseded_by == memory.ideas["chroma"]

    answered = await get_idea_relations(ctx, idea_id=memory.ideas["offline"])
    assert isinstance(answered, IdeaRelations)
    assert [(r.relation, r.idea.id) for r in answered.incoming] == [("answers", memory.ideas["minilm"])]
    assert answered.outgoing == []


@pytest.mark.parametrize("idea_id", [999_999, 0, -5, 2**70])
async def test_unknown_idea_is_a_notice(ctx: RunContext[ToolDeps], memory: Memory, idea_id: int) -> None:
    assert await get_idea_relations(ctx, idea_id=idea_id) == Notice(notice=f"no idea with id {idea_id}")
