"""Learned search associations in ranking, on a real store: which apply (same query, similar query, not an
unrelated one), how they decay and are reinforced, and what they lift — a file's chunks in
`search_content`, the ideas linked to the file's entity in `search`.

Associations are written with plain SQL, as the learner would leave them, and embedded through the real
outbox with the packaged MiniLM; the cosine figures the similarity defaults rest on are measured here.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import numpy as np
import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.config import Settings
from cairn.learning.boost import (
    AssociationBoost,
    associations_for,
    boosted_documents,
    boosted_ideas,
    closeness,
    decay,
    query_key,
    reinforce,
)
from cairn.search import content
from cairn.search.content import search_content
from cairn.search.content_models import ContentRequest, ContentResponse
from cairn.search.hybrid import search
from cairn.search.models import SearchPage, SearchRequest
from cairn.store.db import Database
from cairn.store.store import Store
from tests.helpers.content_files import WEBAPP, Corpus, add_document, build_files
from tests.tools.memory import add_idea, insert

NOW = datetime.now(UTC)
CTA = "src/ui/Cta.tsx"
CTA_TEXT = 'export const Cta = () => <a className="cta-primary" href="/session/new">Continue</a>;'


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@pytest.fixture
async def corpus(store: Store) -> Corpus:
    """The search corpus plus a file nothing about logging in would find: its code never says so."""
    built = await build_files(store)
    async with store.db.write() as conn:
        document, chunks = await add_document(
            conn, built.projects[WEBAPP], CTA, ["Cta", "cta-primary"], [(1, 3, CTA_TEXT)]
        )
    built.documents[CTA] = document
    built.chunks[(CTA, 0)] = chunks[0]
    await store.sync_vectors()
    return built


async def associate(
    store: Store,
    query: str,
    rel_path: str,
    project_id: int | None,
    *,
    project: str = WEBAPP,
    learned_at: str | None = None,
    last_used_at: str | None = None,
) -> int:
    async with store.db.write() as conn:
        association = await insert(
            conn,
            "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source, "
            "original_score, learned_at, last_used_at) VALUES (?, ?, ?, ?, ?, 'learned', 0.4, ?, ?)",
            (
                query,
                query_key(query),
                f"{project}/{rel_path}",
                rel_path,
                project_id,
                learned_at or ago(0),
                last_used_at,
            ),
        )
    await store.sync_vectors()
    return association


def embed(store: Store, text: str) -> list[float]:
    return store.vectors.embed([text])[0]


# The weight: closeness, decay


def test_closeness_rises_linearly_from_the_minimum_to_full(settings: Settings) -> None:
    low, full = settings.learn_min_similarity, settings.learn_full_similarity
    assert (low, full) == (0.65, 0.8)
    assert closeness(low, settings) == 0.0
    assert closeness(0.3, settings) == 0.0
    assert closeness((low + full) / 2, settings) == pytest.approx(0.5)
    assert closeness(full, settings) == closeness(0.95, settings) == 1.0


def test_decay_halves_per_half_life_from_the_latest_learning_or_use(settings: Settings) -> None:
    half = settings.learn_half_life_days
    assert decay(ago(0), None, settings, NOW) == pytest.approx(1.0, abs=1e-6)
    assert decay(ago(half), None, settings, NOW) == pytest.approx(0.5, abs=1e-6)
    assert decay(ago(2 * half), None, settings, NOW) == pytest.approx(0.25, abs=1e-6)
    assert decay(ago(2 * half), ago(half), settings, NOW) == pytest.approx(0.5, abs=1e-6)
    assert decay(None, None, settings, NOW) == 1.0
    assert decay("not a time", None, settings, NOW) == 1.0


def test_minilm_cosines_behind_the_similarity_defaults(
    settings: Settings, embedding_function: EmbeddingFunction[Documents]
) -> None:
    """The seed's follow-up queries apply (nearly) in full; near misses naming another thing and
    unrelated queries do not apply at all."""
    pairs = {
        ("login button", "login button component"): (0.95, 1.0),
        ("user creation", "user creation endpoint"): (0.8, 1.0),
        ("sign in button", "login button component"): (0.0, 0.4),
        ("user deletion endpoint", "user creation endpoint"): (0.0, 0.0),
        ("logout button", "login button component"): (0.0, 0.0),
        ("login button", "user creation endpoint"): (0.0, 0.0),
        ("database migrations", "login button component"): (0.0, 0.0),
        ("kafka consumer lag", "login button component"): (0.0, 0.0),
    }
    texts = sorted({text for pair in pairs for text in pair})
    vectors = dict(
        zip(texts, (np.asarray(v, dtype=np.float64) for v in embedding_function(texts)), strict=True)
    )
    for (a, b), (lowest, highest) in pairs.items():
        cosine = float(vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b]))
        assert lowest <= closeness(cosine, settings) <= highest, (a, b, round(cosine, 3))


# Which associations apply


async def test_the_same_query_applies_in_full_whatever_its_case_and_spacing(
    store: Store, corpus: Corpus
) -> None:
    association = await associate(store, "login button component", CTA, corpus.projects[WEBAPP])
    boosts = await associations_for(
        store.db,
        None,
        store.settings,
        text="  Login   BUTTON component ",
        embedding=None,
        project_ids=None,
    )
    assert [(b.association_id, b.closeness, b.rel_path) for b in boosts] == [(association, 1.0, CTA)]
    assert boosts[0].weight == pytest.approx(store.settings.learn_boost, abs=1e-4)
    assert boosts[0].query == "login button component"
    documents = await boosted_documents(store.db, boosts)
    assert list(documents) == [corpus.documents[CTA]]


async def test_a_similar_query_applies_by_meaning_an_unrelated_one_not_at_all(
    store: Store, corpus: Corpus
) -> None:
    login = await associate(store, "login button component", CTA, corpus.projects[WEBAPP])
    users = await associate(store, "user creation endpoint", "src/api/users.ts", corpus.projects[WEBAPP])

    async def applying(text: str) -> dict[int, float]:
        boosts = await associations_for(
            store.db, store.vectors, store.settings, text=text, embedding=embed(store, text), project_ids=None
        )
        return {b.association_id: b.closeness for b in boosts}

    assert (await applying("login button")).keys() == {login}
    assert (await applying("login button"))[login] == 1.0
    assert 0.8 < (await applying("user creation"))[users] < 1.0
    assert await applying("database migrations with alembic") == {}
    assert await applying("user deletion endpoint") == {}
    # Another project's search does not see this project's associations.
    assert (
        await associations_for(
            store.db,
            store.vectors,
            store.settings,
            text="login button component",
            embedding=embed(store, "login button component"),
            project_ids=[corpus.projects["/work/api"]],
        )
        == []
    )
    # With the boost switched off nothing applies.
    off = store.settings.model_copy(update={"learn_boost": 0.0})
    boosts = await associations_for(
        store.db,
        store.vectors,
        off,
        text="login button",
        embedding=embed(store, "login button"),
        project_ids=None,
    )
    assert boosts == []


async def test_an_old_association_weighs_half_after_a_half_life_until_it_is_used_again(
    store: Store, corpus: Corpus
) -> None:
    half = store.settings.learn_half_life_days
    association = await associate(
        store, "login button component", CTA, corpus.projects[WEBAPP], learned_at=ago(half)
    )

    async def weight() -> float:
        found = await associations_for(
            store.db, None, store.settings, text="login button component", embedding=None, project_ids=None
        )
        return found[0].weight

    assert await weight() == pytest.approx(store.settings.learn_boost / 2, abs=1e-3)
    await reinforce(store.db, [association, association])
    row = await store.db.fetchone(
        "SELECT hits, last_used_at FROM search_associations WHERE id = ?", (association,)
    )
    assert row["hits"] == 1 and row["last_used_at"] is not None
    assert await weight() == pytest.approx(store.settings.learn_boost, abs=1e-3)
    await reinforce(store.db, [])
    assert await store.db.scalar("SELECT hits FROM search_associations WHERE id = ?", (association,)) == 1


# search_content


async def run_content(store: Store, settings: Settings | None = None, **fields: Any) -> ContentResponse:
    record = fields.pop("record_usage", False)
    return await search_content(
        store.db, store.vectors, settings or store.settings, ContentRequest(**fields), record_usage=record
    )


async def test_a_learned_file_nothing_else_draws_becomes_the_first_result(
    store: Store, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    cta = corpus.chunk(CTA)
    unlearned = store.settings.model_copy(update={"learn_boost": 0.0})
    before = await run_content(store, semantic_concepts=["login button"])
    assert cta not in [r.chunk_id for r in before.results]
    semantic = {
        r.chunk_id: r.relevance_score
        for r in (
            await run_content(store, unlearned, semantic_concepts=["login button"], min_score=0)
        ).results
    }
    # Only the nearest vector is drawn: the learned file must come in through its association.
    monkeypatch.setattr(content, "VECTOR_CANDIDATES", 1)
    narrow = await run_content(store, semantic_concepts=["login button"], min_score=0)
    assert cta not in [r.chunk_id for r in narrow.results]

    association = await associate(store, "login button component", CTA, corpus.projects[WEBAPP])
    after = await run_content(store, semantic_concepts=["login button"])
    top = after.results[0]
    assert top.chunk_id == cta
    assert top.document_id == f"{WEBAPP}/{CTA}"
    assert top.learned_from == "login button component"
    weight = store.settings.learn_boost  # closeness 1 (cosine 0.82), fresh
    assert top.relevance_score == pytest.approx(
        semantic.get(cta, 0.0) + (1 - semantic.get(cta, 0.0)) * weight, abs=2e-3
    )
    assert all(r.learned_from is None for r in after.results[1:])
    interpretation = after.statistics.search_interpretation
    assert f"'login button component' -> {CTA}" in interpretation
    hits = "SELECT hits, last_used_at FROM search_associations WHERE id = ?"
    assert tuple(await store.db.fetchone(hits, (association,))) == (0, None)
    await run_content(store, semantic_concepts=["login button"], record_usage=True)
    row = await store.db.fetchone(hits, (association,))
    assert row["hits"] == 1 and row["last_used_at"] is not None


async def test_a_page_without_the_lifted_result_reinforces_nothing(store: Store, corpus: Corpus) -> None:
    association = await associate(store, "login button component", CTA, corpus.projects[WEBAPP])
    # Session-narrowed: files sit out, so nothing the association lifts is returned.
    await run_content(
        store, semantic_concepts=["login button"], session="s-web", min_score=0, record_usage=True
    )
    # The api project's src/api/users.ts is not the webapp's file of that name: not lifted either.
    other = await associate(
        store, "user creation endpoint", "src/api/users.ts", corpus.projects["/work/api"], project="/work/api"
    )
    await run_content(store, semantic_concepts=["user creation endpoint"], record_usage=True)
    rows = await store.db.fetchall("SELECT id, hits FROM search_associations ORDER BY id")
    assert [tuple(row) for row in rows] == [
        (association, 0),
        (other, 0),
    ]


async def test_terms_only_searches_stay_grep_like(store: Store, corpus: Corpus) -> None:
    await associate(store, "useEffect", "docs/setup.md", corpus.projects[WEBAPP])
    await associate(store, "useEffect", "src/hooks/useSession.ts", corpus.projects[WEBAPP])
    response = await run_content(store, exact_terms=["useEffect"])
    # The setup doc never says useEffect: its association cannot make it a result of a grep.
    assert [r.chunk_id for r in response.results] == [corpus.chunk("src/hooks/useSession.ts")]
    assert response.results[0].learned_from == "useEffect"


async def test_an_association_written_before_projects_matches_by_absolute_path(
    store: Store, corpus: Corpus
) -> None:
    async with store.db.write() as conn:
        await conn.execute(
            "INSERT INTO search_associations (query, file_path) VALUES ('login button component', ?)",
            (f"{WEBAPP}/{CTA}",),
        )
    await store.sync_vectors()
    response = await run_content(store, semantic_concepts=["login button component"])
    assert response.results[0].chunk_id == corpus.chunk(CTA)


# search (hybrid): ideas linked to the learned file


async def add_ideas(store: Store, corpus: Corpus, fillers: int = 0) -> dict[str, int]:
    ideas: dict[str, int] = {}
    async with store.db.write() as conn:
        ideas["cta"] = await add_idea(
            conn, "s-web", "decision", "The landing page's call-to-action link starts a new session", 10
        )
        ideas["alias"] = await add_idea(
            conn,
            "s-web",
            "context",
            "The call-to-action button on the landing page uses the primary colour",
            11,
        )
        ideas["basename"] = await add_idea(
            conn, "s-web", "context", "The call-to-action component is covered by a snapshot test", 12
        )
        ideas["suffix"] = await add_idea(
            conn, "s-web", "context", "The call-to-action markup lives next to the other UI pieces", 13
        )
        for n in range(fillers):
            await add_idea(
                conn, "s-web", "context", f"Login button component note {n}: sign-in styling", 20 + n
            )
        by_path = await insert(conn, "INSERT INTO entities (canonical_name, type) VALUES (?, 'file')", (CTA,))
        by_alias = await insert(
            conn, "INSERT INTO entities (canonical_name, type) VALUES ('CTA link', 'concept')"
        )
        await conn.execute(
            "INSERT INTO entity_aliases (entity_id, alias) VALUES (?, ?)", (by_alias, f"webapp/{CTA}")
        )
        bare = await insert(conn, "INSERT INTO entities (canonical_name, type) VALUES ('Cta.tsx', 'file')")
        # The offline indexer's name for a file: its last two path components.
        suffix = await insert(
            conn, "INSERT INTO entities (canonical_name, type) VALUES ('ui/Cta.tsx', 'file')"
        )
        await conn.executemany(
            "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?)",
            [
                (ideas["cta"], by_path),
                (ideas["alias"], by_alias),
                (ideas["basename"], bare),
                (ideas["suffix"], suffix),
            ],
        )
    await store.sync_vectors()
    return ideas


async def run_search(store: Store, query: str, settings: Settings | None = None, **fields: Any) -> SearchPage:
    record = fields.pop("record_usage", False)
    return await search(
        store.db,
        store.vectors,
        settings or store.settings,
        SearchRequest(query=query, kind="ideas", **fields),
        record_usage=record,
    )


async def test_ideas_about_the_learned_file_are_lifted_in_search(store: Store, corpus: Corpus) -> None:
    ideas = await add_ideas(store, corpus)
    query = "login button component"
    before = {r.id: r for r in (await run_search(store, query, min_score=0, limit=50)).results}
    association = await associate(store, query, CTA, corpus.projects[WEBAPP])
    page = await run_search(store, query, min_score=0, limit=50)
    after = {r.id: r for r in page.results}
    weight = store.settings.learn_boost
    for name in ("cta", "alias", "suffix"):
        idea = str(ideas[name])
        assert after[idea].learned_from == query
        assert after[idea].scores.learned == pytest.approx(weight, abs=1e-3)
        assert after[idea].score == pytest.approx(min(1.0, before[idea].score * (1 + weight)), abs=2e-3)
    # A bare file name could be any project's Cta.tsx: not lifted.
    basename = str(ideas["basename"])
    assert basename not in after or after[basename].learned_from is None
    assert page.results[0].id in {str(ideas["cta"]), str(ideas["alias"]), str(ideas["suffix"])}
    # Without the association the same search is as it was.
    unlearned = store.settings.model_copy(update={"learn_boost": 0.0})
    plain = await run_search(store, query, unlearned, min_score=0, limit=50)
    assert {r.id: r.score for r in plain.results} == {i: r.score for i, r in before.items()}
    assert all(r.scores.learned is None and r.learned_from is None for r in plain.results)
    hits = "SELECT hits FROM search_associations WHERE id = ?"
    assert await store.db.scalar(hits, (association,)) == 0
    await run_search(store, query, min_score=0, limit=50, record_usage=True)
    assert await store.db.scalar(hits, (association,)) == 1


async def test_an_idea_no_ranking_drew_becomes_a_candidate_through_its_file(
    store: Store, corpus: Corpus
) -> None:
    ideas = await add_ideas(store, corpus, fillers=14)
    narrow = store.settings.model_copy(update={"search_candidates": 10})
    query = "login button component"
    before = await run_search(store, query, narrow, min_score=0, limit=100)
    assert str(ideas["cta"]) not in [r.id for r in before.results]
    await associate(store, query, CTA, corpus.projects[WEBAPP])
    after = await run_search(store, query, narrow, min_score=0, limit=100)
    lifted = next(r for r in after.results if r.id == str(ideas["cta"]))
    assert lifted.learned_from == query and lifted.match == "semantic"
    assert lifted.scores.vector is not None and lifted.scores.vector > 0


async def test_keyword_mode_lifts_only_what_keywords_drew(store: Store, corpus: Corpus) -> None:
    ideas = await add_ideas(store, corpus)
    await associate(store, "call-to-action", CTA, corpus.projects[WEBAPP])
    page = await run_search(store, "call-to-action", mode="keyword", min_score=0)
    by_id = {r.id: r for r in page.results}
    assert by_id[str(ideas["cta"])].learned_from == "call-to-action"
    assert by_id[str(ideas["basename"])].learned_from is None
    assert json.loads(page.model_dump_json())["results"][0]["learned_from"] == "call-to-action"


# boosted_ideas: which names name the file, and what finding them reads


async def a_project_and_a_session(store: Store) -> int:
    async with store.db.write() as conn:
        project = await insert(conn, "INSERT INTO projects (path, name) VALUES (?, 'webapp')", (WEBAPP,))
        await conn.execute("INSERT INTO sessions (id, project_id) VALUES ('s-web', ?)", (project,))
    return project


def boost_for(project: int, rel_path: str, association: int = 1) -> AssociationBoost:
    return AssociationBoost(association, project, f"{WEBAPP}/{rel_path}", rel_path, "q", 1.0, 0.3)


async def test_the_names_of_a_file_and_which_entities_they_count_for(store: Store) -> None:
    """The absolute, relative, parent-directory and two-component paths name the file whatever the
    entity's type (an alias equal to a path in another case too); another checkout's path only on a
    file entity or an alias of one; a bare file name never."""
    project = await a_project_and_a_session(store)
    names = {
        "absolute": (f"{WEBAPP}/{CTA}", "concept"),
        "relative": (CTA, "file"),
        "parent directory": (f"webapp/{CTA}", "concept"),
        "two components": ("ui/Cta.tsx", "technology"),
        "other checkout": (f"/home/someone/webapp/{CTA}", "file"),
        "other checkout, not a file": (f"/home/someone/webapp/{CTA}", "concept"),
        "bare name": ("Cta.tsx", "file"),
        "another file": ("src/ui/Cta.tsx.bak", "file"),
    }
    aliases = {
        "alias of a concept, absolute in another case": ("CTA link", f"{WEBAPP.upper()}/{CTA.upper()}"),
        "alias of a file, other checkout": ("Call to action", f"checkout-2/{CTA}"),
        "alias of a concept, other checkout": ("CTA button", f"checkout-3/{CTA}"),
    }
    ideas: dict[str, int] = {}
    async with store.db.write() as conn:
        for n, (label, (name, kind)) in enumerate(names.items()):
            entity = await insert(
                conn, "INSERT INTO entities (canonical_name, type) VALUES (?, ?)", (name, kind)
            )
            ideas[label] = await add_idea(conn, "s-web", "context", f"About {label}", n)
            await conn.execute("INSERT INTO idea_entities VALUES (?, ?)", (ideas[label], entity))
        for n, (label, (name, alias)) in enumerate(aliases.items(), start=len(names)):
            kind = "file" if "of a file" in label else "concept"
            entity = await insert(
                conn, "INSERT INTO entities (canonical_name, type) VALUES (?, ?)", (name, kind)
            )
            await conn.execute("INSERT INTO entity_aliases (entity_id, alias) VALUES (?, ?)", (entity, alias))
            ideas[label] = await add_idea(conn, "s-web", "context", f"About {label}", n)
            await conn.execute("INSERT INTO idea_entities VALUES (?, ?)", (ideas[label], entity))
    lifted = await boosted_ideas(store.db, [boost_for(project, CTA)])
    assert {label for label, idea in ideas.items() if idea in lifted} == {
        "absolute",
        "relative",
        "parent directory",
        "two components",
        "other checkout",
        "alias of a concept, absolute in another case",
        "alias of a file, other checkout",
    }


class CountingReader:
    """Stands in for the store's reader: runs the queries on its own connection and counts the SQLite
    virtual machine instructions they take (tens per row a query looks at)."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.row_factory = sqlite3.Row
        self.steps = 0
        self.conn.set_progress_handler(self._step, 10)

    def _step(self) -> int:
        self.steps += 10
        return 0

    async def fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()


async def test_finding_a_file_s_entities_does_not_read_every_other_entity_per_association(
    store: Store,
) -> None:
    """Names compared to every entity and alias per association made each search with associations
    read the whole entity table and alias table again and again; only one pass over the entities (for
    the file entities among them) may remain."""
    project = await a_project_and_a_session(store)
    async with store.db.write() as conn:
        entity = await insert(conn, "INSERT INTO entities (canonical_name, type) VALUES (?, 'file')", (CTA,))
        idea = await add_idea(conn, "s-web", "context", "The call-to-action link", 1)
        await conn.execute("INSERT INTO idea_entities VALUES (?, ?)", (idea, entity))
    boosts = [boost_for(project, CTA)] + [boost_for(project, f"src/other_{n}.ts", n + 2) for n in range(9)]
    reader = CountingReader(str(store.db.path))
    try:

        async def steps() -> int:
            before = reader.steps
            assert set(await boosted_ideas(cast(Database, reader), boosts)) == {idea}
            return reader.steps - before

        few = await steps()
        others = 2_000
        async with store.db.write() as conn:
            await conn.executemany(
                "INSERT INTO entities (id, canonical_name, type) VALUES (?, ?, 'concept')",
                [(10_000 + n, f"concept {n}") for n in range(others)],
            )
            await conn.executemany(
                "INSERT INTO entity_aliases (entity_id, alias) VALUES (?, ?)",
                [(10_000 + n, f"another name of concept {n}") for n in range(others)],
            )
        many = await steps()
    finally:
        reader.conn.close()
    # One pass reads an entity in a handful of instructions; ten associations comparing four
    # conditions against every entity and alias took hundreds.
    assert (many - few) / others < 30, (few, many)
