"""The entity tools against a real store: spelling-insensitive search, semantic fallback, linked ideas."""

from __future__ import annotations

import pytest
from pydantic_ai import RunContext

from cairn.tools import ToolDeps
from cairn.tools.entities import get_entity_ideas, search_entities
from cairn.tools.results import EntityIdeas, EntityList, Notice
from tests.tools.memory import Memory, Seeded, context

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def first(ctx: RunContext[ToolDeps], name: str, type: str | None = None) -> tuple[str, str | None]:
    """(canonical name, match kind) of the best entity for `name`."""
    result = await search_entities(ctx, name=name, type=type)  # type: ignore[arg-type]
    assert isinstance(result, EntityList), result
    assert result.entities, f"nothing found for {name!r}"
    return result.entities[0].canonical_name, result.entities[0].match


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("SQLite", ("SQLite", "exact")),
        ("sqlite", ("SQLite", "exact")),
        ("  SQLITE ", ("SQLite", "exact")),
        ("sqlite3", ("SQLite", "alias")),
        ("SQLite3", ("SQLite", "alias")),
        ("sqlite-3", ("SQLite", "normalized")),
        ("pydantic-ai", ("pydantic-ai", "exact")),
        ("pydantic_ai", ("pydantic-ai", "normalized")),
        ("PydanticAI", ("pydantic-ai", "normalized")),
        ("Pydantic AI", ("pydantic-ai", "normalized")),
        ("pydantic.ai", ("pydantic-ai", "normalized")),
        ("ChromaDB", ("Chroma", "alias")),
        ("chroma_db", ("Chroma", "normalized")),
        ("loginbutton", ("LoginButton.tsx", "prefix")),
        ("Button", ("LoginButton.tsx", "substring")),
        ("the SQLite database", ("SQLite", "contained")),
        ("Postgres SQL", ("PostgreSQL", "semantic")),
    ],
)
async def test_search_matches_spellings(
    ctx: RunContext[ToolDeps], memory: Memory, name: str, expected: tuple[str, str]
) -> None:
    assert await first(ctx, name) == expected


async def test_search_returns_aliases_and_idea_counts(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    result = await search_entities(ctx, name="sqlite")
    assert isinstance(result, EntityList)
    sqlite = result.entities[0]
    assert (sqlite.id, sqlite.type, sqlite.aliases, sqlite.ideas) == (
        memory.entities["SQLite"],
        "technology",
        ["sqlite3"],
        3,
    )


async def test_search_filters_by_type(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    assert await first(ctx, "LoginButton", type="file") == ("LoginButton.tsx", "prefix")
    result = await search_entities(ctx, name="SQLite", type="concept")
    assert isinstance(result, EntityList) and result.entities == []


async def test_search_finds_nothing_unrelated(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    result = await search_entities(ctx, name="Kubernetes")
    assert isinstance(result, EntityList) and result.entities == []


async def test_semantic_match_needs_vectors(seeded: Seeded, memory: Memory) -> None:
    result = await search_entities(context(ToolDeps(db=seeded.store.db, vectors=None)), name="Postgres SQL")
    assert isinstance(result, EntityList) and result.entities == []


@pytest.mark.parametrize("name", ["", "   ", "---", "._/"])
async def test_search_without_letters_is_a_notice(
    ctx: RunContext[ToolDeps], memory: Memory, name: str
) -> None:
    assert isinstance(await search_entities(ctx, name=name), Notice)


@pytest.mark.parametrize(
    "name", ["%", "_", "SQL%", "'; DROP TABLE entities; --", "ünïcode", '"*', "sql\ud800ite"]
)
async def test_search_never_fails_on_odd_names(ctx: RunContext[ToolDeps], memory: Memory, name: str) -> None:
    result = await search_entities(ctx, name=name)
    assert isinstance(result, EntityList | Notice)
    if isinstance(result, EntityList):
        # LIKE wildcards are not wildcards here: "%" and "SQL%" must not match every entity.
        assert len(result.entities) < len(memory.entities)


async def test_entity_ideas_newest_first(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    result = await get_entity_ideas(ctx, entity_id=memory.entities["SQLite"])
    assert isinstance(result, EntityIdeas)
    assert result.entity.canonical_name == "SQLite" and result.entity.aliases == ["sqlite3"]
    assert [idea.id for idea in result.ideas] == [
        memory.ideas["locked"],
        memory.ideas["chroma"],
        memory.ideas["blobs"],
    ]
    assert result.ideas[2].superseded_by == memory.ideas["chroma"]
    limited = await get_entity_ideas(ctx, entity_id=memory.entities["SQLite"], limit=1)
    assert isinstance(limited, EntityIdeas) and len(limited.ideas) == 1


@pytest.mark.parametrize("entity_id", [424242, 0, 2**64])
async def test_unknown_entity_is_a_notice(ctx: RunContext[ToolDeps], memory: Memory, entity_id: int) -> None:
    assert await get_entity_ideas(ctx, entity_id=entity_id) == Notice(notice=f"no entity with id {entity_id}")
