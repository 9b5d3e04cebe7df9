"""search_content over file chunks next to transcript messages, and `show` of a chunk id, on a real store.

The file index (documents, chunks, keywords) is written with plain SQL as the indexer would leave it,
and embedded through the real outbox into real Chroma with the packaged MiniLM, so these tests do not
depend on how files get chunked — only on what search does with the chunks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn.search.content import search_content
from cairn.search.content_models import ContentRequest, ContentResponse
from cairn.search.errors import ItemNotFoundError, SearchError
from cairn.search.items import show
from cairn.search.models import parse_item_id
from cairn.search.timeline import timeline
from cairn.store.store import Store
from tests.helpers.content_files import API, SESSION, TRANSCRIPT, WEBAPP, Corpus, add_document, build_files


@pytest.fixture
async def corpus(store: Store) -> Corpus:
    return await build_files(store)


async def run(store: Store, **fields: Any) -> ContentResponse:
    return await search_content(
        store.db, store.vectors, store.settings, ContentRequest(**fields), record_usage=False
    )


def ids(response: ContentResponse) -> list[str]:
    return [r.chunk_id for r in response.results]


# Concepts, exact terms, both


async def test_concepts_find_the_file_chunk_with_its_path_lines_and_keywords(
    store: Store, corpus: Corpus
) -> None:
    response = await run(store, semantic_concepts=["user creation endpoint"], min_score=0.2)
    # The message that says it in words ranks with the code: both sources are searched.
    assert corpus.message(3) in ids(response)
    top = next(r for r in response.results if r.chunk_id.startswith("c"))
    assert top.chunk_id == corpus.chunk("src/api/users.ts")
    assert top.document_id == f"{WEBAPP}/src/api/users.ts"
    assert (top.chunk_index, top.start_line, top.end_line) == (0, 1, 12)
    assert top.content.startswith("router.post('/users'")
    assert top.document_keywords == ["createUser", "users router", "validation"]
    assert top.learned_from is None
    assert f"{WEBAPP}/src/api/users.ts" in response.statistics.files_covered
    code = await run(store, exact_terms=["createUserSchema"])
    assert ids(code) == [corpus.chunk("src/api/users.ts")]
    hints = code.navigation_hints.next_actions
    assert f"Open the file {WEBAPP}/src/api/users.ts at lines 1-12" in hints
    assert not any("show(id=" in hint for hint in hints)


async def test_exact_terms_match_file_chunks_and_files_come_first_in_ties(
    store: Store, corpus: Corpus
) -> None:
    response = await run(store, exact_terms=["useState"])
    assert ids(response) == [corpus.chunk("src/hooks/useSession.ts"), corpus.message(1)]
    assert {r.relevance_score for r in response.results} == {1.0}
    # Code-shaped terms are case-sensitive in files as in messages.
    assert await run(store, exact_terms=["UseState"]) is not None
    assert ids(await run(store, exact_terms=["UseState"])) == []
    # A symbol FTS does not index is found by a plain scan of the chunks.
    arrow = await run(store, exact_terms=["=>"], min_score=0)
    assert corpus.chunk("src/api/users.ts") in ids(arrow) and corpus.chunk("src/hooks/useSession.ts") in ids(
        arrow
    )


async def test_an_exact_term_multiplies_a_file_chunks_semantic_score(store: Store, corpus: Corpus) -> None:
    concepts = ["scheduling a refresh"]
    target = corpus.chunk("src/hooks/useSession.ts")
    semantic = {
        r.chunk_id: r.relevance_score
        for r in (await run(store, semantic_concepts=concepts, min_score=0)).results
    }
    both = {
        r.chunk_id: r.relevance_score
        for r in (
            await run(store, semantic_concepts=concepts, exact_terms=["useEffect"], min_score=0)
        ).results
    }
    assert 0 < semantic[target] < 1 / 1.5
    assert both[target] == pytest.approx(semantic[target] * 1.5, abs=2e-4)
    assert next(iter(both)) == target


async def test_project_filter_narrows_files_and_a_session_filter_leaves_them_out(
    store: Store, corpus: Corpus
) -> None:
    everywhere = await run(store, exact_terms=["SQLite", "outbox"], min_score=0)
    assert corpus.chunk("app/storage.py") in ids(everywhere)
    api = await run(store, exact_terms=["SQLite", "outbox"], min_score=0, project="api")
    assert ids(api) == [corpus.chunk("app/storage.py")]
    webapp = await run(store, semantic_concepts=["database write-ahead log"], min_score=0, project=WEBAPP)
    assert corpus.chunk("app/storage.py") not in ids(webapp)
    assert all(r.document_id.startswith(WEBAPP) or r.document_id == TRANSCRIPT for r in webapp.results)

    session = await run(store, exact_terms=["useState"], session=SESSION)
    assert ids(session) == [corpus.message(1)]
    assert "project files, which belong to no session, left out" in session.statistics.search_interpretation
    with pytest.raises(SearchError, match="no project"):
        await run(store, exact_terms=["useState"], project="/work/elsewhere")


async def test_pages_run_across_both_sources_without_repeats(store: Store, corpus: Corpus) -> None:
    request: dict[str, Any] = {"exact_terms": ["res", "dev", "outbox", "useState", "SQLite"], "min_score": 0}
    whole = await run(store, **request, limit=50)
    total = whole.statistics.total_results
    kinds = {r.chunk_id[0] for r in whole.results}
    assert kinds == {"c", "m"} and total >= 6
    page = await run(store, **request, limit=2)
    seen = ids(page)
    # A file indexed while the caller pages is neither shown nor counted.
    async with store.db.write() as conn:
        await add_document(
            conn, corpus.projects[WEBAPP], "src/late.ts", [], [(1, 2, "dev outbox useState res")]
        )
    await store.sync_vectors()
    while page.continuation.has_more:
        assert page.continuation.next_token is not None
        page = await search_content(
            store.db,
            store.vectors,
            store.settings,
            ContentRequest(continuation_token=page.continuation.next_token, limit=2),
            record_usage=False,
        )
        assert page.statistics.total_results == total
        seen += ids(page)
    assert seen == ids(whole)
    assert len(seen) == len(set(seen)) == total
    assert (await run(store, **request, limit=50)).statistics.total_results == total + 1


async def test_document_keywords_are_capped_and_feed_related_queries(store: Store, corpus: Corpus) -> None:
    response = await run(store, exact_terms=["useEffect"])
    assert response.results[0].document_keywords == [
        "useSession",
        "useState",
        "session refresh",
        "JWT",
        "React hooks",
        "token",
        "expiry",
    ]
    assert response.navigation_hints.related_queries == [
        "expiry",
        "JWT",
        "React hooks",
        "session refresh",
        "token",
    ]


async def test_without_vectors_concepts_find_file_chunks_by_their_words(store: Store, corpus: Corpus) -> None:
    request = ContentRequest(semantic_concepts=["schema validation users"], min_score=0.3)
    response = await search_content(store.db, None, store.settings, request, record_usage=False)
    assert "unavailable" in response.statistics.search_interpretation
    assert corpus.chunk("src/api/users.ts") in ids(response)


async def test_a_file_whose_chunks_are_gone_is_no_longer_found(store: Store, corpus: Corpus) -> None:
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM file_documents WHERE id = ?", (corpus.documents["src/api/users.ts"],))
    await store.sync_vectors()
    assert store.vectors.get_embeddings("chunks", [str(corpus.chunks[("src/api/users.ts", 0)])]) == {}
    response = await run(
        store, semantic_concepts=["user creation endpoint"], exact_terms=["router"], min_score=0
    )
    assert not any(r.chunk_id.startswith("c") and "users.ts" in r.document_id for r in response.results)


# show c<id>


async def test_show_a_file_chunk_with_keywords_and_associations(store: Store, corpus: Corpus) -> None:
    chunk = corpus.chunks[("src/api/users.ts", 1)]
    async with store.db.write() as conn:
        await conn.execute(
            "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source, "
            "grep_patterns, original_score, times_learned, hits) "
            "VALUES (?, ?, ?, ?, ?, 'learned', ?, ?, 2, 3)",
            (
                "user creation endpoint",
                "user creation endpoint",
                f"{WEBAPP}/src/api/users.ts",
                "src/api/users.ts",
                corpus.projects[WEBAPP],
                json.dumps(["createUser|user.*create"]),
                0.38,
            ),
        )
        # Another project's file with the same relative path is another file.
        await conn.execute(
            "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source) "
            "VALUES ('users api', 'users api', '/work/api/src/api/users.ts', 'src/api/users.ts', ?, 'agent')",
            (corpus.projects[API],),
        )
    detail = await show(store.db, f"c{chunk}")
    assert (detail.id, detail.kind, detail.title) == (f"c{chunk}", "chunk", "src/api/users.ts")
    assert detail.content.startswith("router.delete")
    assert (detail.source.file, detail.source.line, detail.end_line) == (f"{WEBAPP}/src/api/users.ts", 10, 20)
    assert (detail.project, detail.chunk_index) == (WEBAPP, 1)
    assert detail.document_keywords == ["createUser", "users router", "validation"]
    assert detail.indexed_at is not None and detail.session is None
    assert [(a.query, a.source, a.times_learned, a.hits) for a in detail.associations] == [
        ("user creation endpoint", "learned", 2, 3)
    ]
    assert detail.associations[0].grep_patterns == ["createUser|user.*create"]
    assert detail.associations[0].original_score == 0.38
    assert (await show(store.db, f"chunk:{chunk}")).id == f"c{chunk}"


async def test_chunk_ids_parse_and_unknown_ones_are_clear_errors(store: Store, corpus: Corpus) -> None:
    assert parse_item_id("c12") == ("chunk", 12)
    assert parse_item_id("C7") == ("chunk", 7)
    with pytest.raises(ItemNotFoundError, match="file chunk c99999"):
        await show(store.db, "c99999")
    with pytest.raises(SearchError, match="no place in the conversation's timeline"):
        await timeline(store.db, corpus.chunk("docs/setup.md"))
