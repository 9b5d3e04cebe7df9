"""Two offline re-indexes of the same store make the same memory, whatever made the store.

The offline indexer is deterministic for one batch, but what it keeps and links depends on what the
store already holds (a candidate a stored idea already says is dropped, a stored question is answered,
a new idea is related to stored ones). A re-index goes oldest first and lets each session see the
memory of the sessions before it, as it was when the session was new; then each generation is a
function of the stored messages and the re-index settles at once. When it let a session see later
sessions' memory too, a session's new generation depended on the previous generation of the sessions
after it, so the memory a re-index made depended on how the store had been indexed before, and the
second re-index of a store could still change it (the cue-rule indexer once gave 99 and then 96 ideas
on one store; with the learned offline indexer, the five real sessions below, indexed one at a time in
reverse order of their file names, gained a link in the second re-index and kept links from ideas to
ideas said days later).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.agent.indexer import index_pending
from cairn.config import Settings
from cairn.daemon.jobs import reindex_job
from cairn.ingest import sync_file
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers.paths import REAL_TRANSCRIPTS

pytestmark = pytest.mark.slow

# Three sessions of one project, which share its vocabulary: each can repeat, answer or replace another's.
SESSIONS = [
    REAL_TRANSCRIPTS / "entireio-cli" / "5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl",
    REAL_TRANSCRIPTS / "entireio-cli" / "0a76fbfe-d767-433e-b4b1-a39e044f21e8.jsonl",
    REAL_TRANSCRIPTS / "entireio-cli" / "2cfdacb8-9317-430f-8975-0709d2837d1c.jsonl",
]
# All five sessions of that project (two weeks of work, 117 ideas offline): enough cross-session links
# for a store's history to show in them.
PROJECT = sorted((REAL_TRANSCRIPTS / "entireio-cli").glob("*.jsonl"))

# An idea (session, line, intent, words, answered, done, superseded) or a link (the places of its two ends
# and its type), as plain values: what two stores can be compared by.
Row = tuple[object, ...]


async def _memory(store: Store) -> list[tuple[str, int, str, str]]:
    rows = await store.db.fetchall(
        "SELECT session_id, source_line, intent, content FROM ideas ORDER BY session_id, source_line, content"
    )
    return [(r["session_id"], r["source_line"], r["intent"], r["content"]) for r in rows]


async def _ideas_and_links(store: Store) -> tuple[list[Row], list[Row]]:
    """Every idea by its place and words, with whether it is answered, done or superseded, and every
    link between ideas by its two ends' places: what a re-index makes, without the ids it assigns."""
    ideas = await store.db.fetchall(
        """
        SELECT session_id, source_line, intent, content, answered_at IS NOT NULL AS answered,
               completed_at IS NOT NULL AS done, superseded_by IS NOT NULL AS superseded
        FROM ideas ORDER BY session_id, source_line, intent, content
        """
    )
    links = await store.db.fetchall(
        """
        SELECT a.session_id, a.source_line, a.intent, b.session_id AS to_session, b.source_line AS to_line,
               b.intent AS to_intent, r.relation_type
        FROM relations r JOIN ideas a ON a.id = r.from_idea_id JOIN ideas b ON b.id = r.to_idea_id
        ORDER BY 1, 2, 3, 4, 5, 6, 7
        """
    )
    return [tuple(row) for row in ideas], [tuple(row) for row in links]


async def _later_links(store: Store) -> list[Row]:
    """Links from an idea to an idea of a session that started after the first one's session: no
    conversation can build on or relate to what was only said later."""
    rows = await store.db.fetchall(
        """
        SELECT a.session_id, a.source_line, a.intent, b.session_id, b.source_line, b.intent, r.relation_type
        FROM relations r
        JOIN ideas a ON a.id = r.from_idea_id JOIN sessions sa ON sa.id = a.session_id
        JOIN ideas b ON b.id = r.to_idea_id JOIN sessions sb ON sb.id = b.session_id
        WHERE (coalesce(sa.started_at, sa.created_at), sa.id)
            < (coalesce(sb.started_at, sb.created_at), sb.id)
        """
    )
    return [tuple(row) for row in rows]


async def _reindexed(store: Store, settings: Settings, sessions: int) -> tuple[list[Row], list[Row]]:
    report = await reindex_job(store, settings, model="offline")
    assert report["sessions_swapped"] == sessions and report["runs_failed"] == 0, report["sessions"]
    return await _ideas_and_links(store)


async def test_two_offline_reindexes_make_the_same_ideas(store: Store, settings: Settings) -> None:
    for path in SESSIONS:
        await sync_file(store, path, settings)
    report = await index_pending(store, settings, model="offline")
    assert report.ok and not report.failures
    first = await reindex_job(store, settings, model="offline")
    assert first["sessions_swapped"] == len(SESSIONS) and first["runs_failed"] == 0
    once = await _memory(store)
    assert len({session for session, *_ in once}) == len(SESSIONS)
    second = await reindex_job(store, settings, model="offline")
    assert second["sessions_swapped"] == len(SESSIONS) and second["runs_failed"] == 0
    assert await _memory(store) == once


async def _index_one_by_one(store: Store, settings: Settings, paths: list[Path]) -> None:
    for path in paths:
        await sync_file(store, path, settings)
        report = await index_pending(store, settings, model="offline")
        assert report.ok and not report.failures


async def test_a_store_indexed_out_of_order_settles_in_one_reindex_to_what_any_store_would(
    store: Store, settings: Settings, tmp_path: Path, embedding_function: EmbeddingFunction[Documents]
) -> None:
    """A store filled in another order than the sessions were held (a backfill goes by file name; an
    import or a late `cairn index` adds old sessions after newer ones) links ideas to ideas said later.
    One re-index rebuilds it as if each session had been indexed in turn, a second changes nothing, and
    a store that indexed the same sessions all in one go re-indexes to the same memory: a re-index
    depends on the messages, not on the store's past."""
    await _index_one_by_one(store, settings, PROJECT[::-1])
    assert await _later_links(store), "indexed out of order, some ideas link to ideas said after them"

    once = await _reindexed(store, settings, len(PROJECT))
    ideas, links = once
    assert len({idea[0] for idea in ideas}) == len(PROJECT) and links
    assert await _later_links(store) == []
    assert await _reindexed(store, settings, len(PROJECT)) == once

    other = Settings.load(tmp_path / "other-home")
    async with await Store.open(other, vectors=VectorIndex(other, embedding_function)) as at_once:
        for path in PROJECT:
            await sync_file(at_once, path, other)
        report = await index_pending(at_once, other, model="offline")
        assert report.ok and not report.failures
        assert await _ideas_and_links(at_once) != once, "another history: other links"
        assert await _reindexed(at_once, other, len(PROJECT)) == once
