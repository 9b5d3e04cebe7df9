"""Messages found through their passages: a term only in a clipped tool result's elided middle (keyword
mode) and a paraphrase of a sentence deep inside a long answer (semantic mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.ingest import sync_paths
from cairn.search.filters import Filters
from cairn.search.hybrid import search
from cairn.search.keyword import keyword_hits, passage_texts
from cairn.search.models import SearchPage, SearchRequest
from cairn.search.query import build
from cairn.search.semantic import vector_matches
from cairn.store.store import Store
from tests.store.passage_transcript import DEEP_SENTENCE, HIDDEN_FILE, LONG_ANSWER, PARAPHRASE, long_session

SESSION = "5e55a9e0-0000-4000-8000-00000000beef"


@pytest.fixture
async def synced(store: Store, tmp_path: Path) -> Store:
    path = long_session(tmp_path / "work", SESSION).write(tmp_path / "projects" / "-work" / "s.jsonl")
    report = await sync_paths(store, [path], store.settings)
    assert not report.errors
    return store


async def run(store: Store, query: str, **kwargs: Any) -> SearchPage:
    request = SearchRequest(query=query, kind="messages", min_score=0, **kwargs)
    return await search(store.db, store.vectors, store.settings, request, record_usage=False)


async def message_id(store: Store, where: str, *params: Any) -> int:
    return int(await store.db.scalar(f"SELECT id FROM messages WHERE {where}", params))


async def test_a_term_only_in_the_elided_middle_of_a_tool_result_finds_that_message(synced: Store) -> None:
    store = synced
    tool_result = await message_id(store, "kind = 'tool_result'")
    stem = HIDDEN_FILE.split("_")[0]
    # The stored (clipped) text has no trace of it; only a passage does.
    assert not await store.db.fetchall("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (stem,))

    page = await run(store, stem, mode="keyword")
    assert [r.id for r in page.results] == [f"m{tool_result}"]
    # The snippet is cut from the passage that matched, not from the clipped text shown in full.
    found = page.results[0]
    assert stem not in found.content
    assert [found.snippet[a:b] for a, b in found.highlights] == [HIDDEN_FILE.split(".")[0]]

    hits = await keyword_hits(store.db, "message", build(stem), Filters(), 10)  # type: ignore[arg-type]
    (hit,) = hits
    assert hit.row_id == tool_result and hit.strength == 1.0 and hit.passage_id is not None
    shown = await passage_texts(store.db, [hit.passage_id])
    assert HIDDEN_FILE in shown[hit.passage_id]

    # The same under narrowing filters (another query plan), and nothing from another session.
    page = await run(store, HIDDEN_FILE, mode="keyword", session=SESSION)
    assert [r.id for r in page.results] == [f"m{tool_result}"]
    assert (await run(store, stem, mode="keyword", session="another-session")).results == []


async def test_a_message_matched_by_its_own_text_and_a_passage_is_one_hit(synced: Store) -> None:
    store = synced
    answer = await message_id(store, "text = ?", LONG_ANSWER)
    hits = await keyword_hits(store.db, "message", build("nightly export"), Filters(), 10)  # type: ignore[arg-type]
    assert [hit.row_id for hit in hits].count(answer) == 1
    assert len({hit.row_id for hit in hits}) == len(hits)


async def test_a_paraphrase_of_a_sentence_deep_in_a_long_answer_finds_it_semantically(synced: Store) -> None:
    store = synced
    answer = await message_id(store, "text = ?", LONG_ANSWER)
    embedding = store.vectors.embed([PARAPHRASE])[0]
    # The message's own vector reads only its first ~256 word pieces: the filler, not the export.
    own = {hit.id: hit.score for hit in store.vectors.query("messages", None, 20, embedding=embedding)}
    matches = await vector_matches(
        store.db, store.vectors, "message", embedding, Filters(), 10, store.settings
    )
    best = next(m for m in matches if m.row_id == answer)
    assert best.passage_id is not None and best.cosine > own.get(str(answer), 0.0) + 0.1
    assert DEEP_SENTENCE in (await passage_texts(store.db, [best.passage_id]))[best.passage_id]

    page = await run(store, PARAPHRASE, mode="semantic")
    assert page.results[0].id == f"m{answer}"
    narrowed = await run(store, PARAPHRASE, mode="semantic", session=SESSION)
    assert narrowed.results[0].id == f"m{answer}"
    assert (await run(store, PARAPHRASE, mode="semantic", session="another-session")).results == []
