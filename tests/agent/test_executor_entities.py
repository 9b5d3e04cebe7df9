"""Entity canonicalisation: which spellings are one entity, and the optional embedding check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.agent.batches import plan_batches
from cairn.agent.entities import EntityIndex, EntityKey, entity_key
from cairn.agent.executor import apply
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.store.store import Store
from tests.agent.executor_helpers import ASSISTANT, SESSION_A, USER, Transcripts, capture, insert, run_record


@pytest.mark.parametrize(
    ("names", "entity_type"),
    [
        (["SQLite", "sqlite", "SQLite.", " sqlite "], "technology"),
        (["Node.js", "NodeJS", "node js"], "technology"),
        (["lock contention", "Lock-Contention"], "concept"),
        (["`src/db.py`", "src/db.py.", "SRC/db.py"], "file"),
    ],
)
def test_spellings_of_one_thing_share_a_key(names: list[str], entity_type: str) -> None:
    assert len({entity_key(n, entity_type) for n in names}) == 1


@pytest.mark.parametrize(
    ("first", "second", "entity_type"),
    [
        ("C", "C++", "technology"),
        ("C", "C#", "technology"),
        ("src/db.py", "src/dbpy", "file"),
        ("sqlite", "sqlite3", "concept"),  # versions are split off technologies only
    ],
)
def test_different_things_keep_different_keys(first: str, second: str, entity_type: str) -> None:
    assert entity_key(first, entity_type) != entity_key(second, entity_type)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("sqlite3", EntityKey("sqlite", "3")),
        ("Python 3.11", EntityKey("python", "311")),
        ("ec2", EntityKey("ec2")),  # a stem under three characters is not a versioned name
        ("ES6", EntityKey("es6")),
        ("...", EntityKey("")),
    ],
)
def test_technology_versions_are_split_off_long_stems(name: str, key: EntityKey) -> None:
    assert entity_key(name, "technology") == key


def index_of(*names: tuple[int, str, bool]) -> EntityIndex:
    index = EntityIndex()
    for entity_id, name, canonical in names:
        index.add(entity_id, name, "technology", canonical=canonical)
    return index


def test_versions_match_the_unversioned_entity_but_never_each_other() -> None:
    index = index_of((1, "SQLite", True), (2, "IPv4", True), (3, "python3", True))
    assert index.find(entity_key("sqlite3", "technology")) == 1
    assert index.find(entity_key("IPv6", "technology")) is None
    assert index.find(entity_key("Python", "technology")) == 3  # the only python
    assert index.find(entity_key("python2", "technology")) is None
    index.add(4, "python2", "technology", canonical=True)
    assert index.find(entity_key("Python", "technology")) is None  # python2 or python3: ambiguous


def test_canonical_names_win_over_aliases() -> None:
    index = index_of((1, "Postgres", False), (2, "Postgres", True), (2, "pg", False))
    assert index.find(entity_key("postgres", "technology")) == 2
    assert index.find(entity_key("PG", "technology")) == 2


class FakeEmbedding:
    """Names in one group get the same vector; every other name its own orthogonal one."""

    def __init__(self, *groups: set[str]) -> None:
        self.groups = groups
        self.calls: list[list[str]] = []
        self._own: dict[str, int] = {}

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(texts)
        return [self._vector(t) for t in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * 64
        group = next((i for i, g in enumerate(self.groups) if text in g), None)
        slot = group if group is not None else len(self.groups) + self._own.setdefault(text, len(self._own))
        vector[slot] = 1.0
        return vector


async def apply_entities(
    store: Store, settings: Settings, tmp_path: Path, names: list[str], **kw: Any
) -> None:
    t = Transcripts(tmp_path / "projects")
    t.add(SESSION_A, (USER, "Which database?"), (ASSISTANT, "Use a relational one."))
    await capture(store, settings, t)
    (planned,) = await plan_batches(store.db)
    idea = {
        "session": SESSION_A,
        "source_file": str(t.path(SESSION_A)),
        "source_line": 2,
        "content": "Use a relational database.",
        "intent": "decision",
        "entities": [{"name": n, "type": "technology"} for n in names],
    }
    await apply(store.db, planned, IndexResult.model_validate({"ideas": [idea]}), run_record(), **kw)


async def entities(store: Store) -> list[tuple[str, str | None]]:
    rows = await store.db.fetchall(
        "SELECT e.canonical_name, a.alias FROM entities e LEFT JOIN entity_aliases a ON a.entity_id = e.id "
        "ORDER BY e.id, a.alias"
    )
    return [(r[0], r[1]) for r in rows]


async def test_an_embedding_match_reuses_the_entity_and_records_the_alias(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await insert(store.db, "INSERT INTO entities (canonical_name, type) VALUES ('PostgreSQL', 'technology')")
    await insert(store.db, "INSERT INTO entities (canonical_name, type) VALUES ('Postgres', 'concept')")
    embed = FakeEmbedding({"PostgreSQL", "Postgres", "postgres db"})

    await apply_entities(store, settings, tmp_path, ["Postgres", "Redis"], embed=embed)

    assert await entities(store) == [("PostgreSQL", "Postgres"), ("Postgres", None), ("Redis", None)]
    # One call per type, comparing the unmatched names with that type's entities only.
    assert embed.calls == [["Postgres", "Redis", "PostgreSQL"]]


async def test_without_embeddings_a_synonym_is_a_new_entity(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await insert(store.db, "INSERT INTO entities (canonical_name, type) VALUES ('PostgreSQL', 'technology')")
    await apply_entities(store, settings, tmp_path, ["Postgres"])
    assert await entities(store) == [("PostgreSQL", None), ("Postgres", None)]


async def test_names_that_match_lexically_are_never_embedded(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await insert(store.db, "INSERT INTO entities (canonical_name, type) VALUES ('SQLite', 'technology')")
    embed = FakeEmbedding()
    await apply_entities(store, settings, tmp_path, ["sqlite", "sqlite3"], embed=embed)
    assert embed.calls == []
    assert await entities(store) == [("SQLite", "sqlite3")]
