"""Searching several kinds at once weighs every kind's keyword matches against the best of them all."""

from __future__ import annotations

from cairn.search.hybrid import search
from cairn.search.models import SearchRequest
from cairn.store.store import Store
from tests.search.test_hybrid import conversation_store
from tests.tools.memory import add_idea


async def test_a_weak_kind_gets_no_full_credit_for_being_its_kinds_best(store: Store) -> None:
    # The only idea is a greeting that holds the names alone; a message holds the whole question.
    found = await conversation_store(
        store,
        {
            "chat": [
                (1, "user", "Caroline: Hey Melanie! How's it going?"),
                (2, "assistant", "Caroline: I loved the book Becoming Nicole, Melanie: I recommend it"),
            ]
        },
    )
    async with store.db.write() as conn:
        greeting = await add_idea(conn, "chat", "question", "Caroline: Hey Melanie! How's it going today?", 1)
    await store.sync_vectors()

    async def relevance_of(kind: str) -> dict[str, float]:
        request = SearchRequest(
            query="What book did Caroline recommend to Melanie?", mode="keyword", kind=kind, min_score=0
        )
        page = await search(store.db, store.vectors, store.settings, request, record_usage=False)
        return {r.id: r.scores.fusion for r in page.results}

    alone, mixed = await relevance_of("ideas"), await relevance_of("all")
    idea = str(greeting)
    assert mixed[idea] < alone[idea]  # beside the message's better bm25 it is no longer the yardstick
    assert ids_first(mixed) == f"m{found['chat:2']}"


def ids_first(scores: dict[str, float]) -> str:
    return max(scores, key=lambda key: scores[key])
