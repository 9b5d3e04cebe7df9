"""Two offline re-indexes of the same store make the same memory.

The offline indexer is deterministic for one batch, but what it keeps depends on what the store already
holds (a candidate a stored idea already says is dropped, a stored question is answered), and a re-index
lets each session see the other sessions' memory as the previous run left it. This guards that the
re-index still settles: run twice, it makes the same ideas (the cue-rule indexer once gave 99 and then
96 ideas on one store).
"""

from __future__ import annotations

from cairn.agent.indexer import index_pending
from cairn.config import Settings
from cairn.daemon.jobs import reindex_job
from cairn.ingest import sync_file
from cairn.store.store import Store
from tests.conftest import REAL_TRANSCRIPTS

# Three sessions of one project, which share its vocabulary: each can repeat, answer or replace another's.
SESSIONS = [
    REAL_TRANSCRIPTS / "entireio-cli" / "5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl",
    REAL_TRANSCRIPTS / "entireio-cli" / "0a76fbfe-d767-433e-b4b1-a39e044f21e8.jsonl",
    REAL_TRANSCRIPTS / "entireio-cli" / "2cfdacb8-9317-430f-8975-0709d2837d1c.jsonl",
]


async def _memory(store: Store) -> list[tuple[str, int, str, str]]:
    rows = await store.db.fetchall(
        "SELECT session_id, source_line, intent, content FROM ideas ORDER BY session_id, source_line, content"
    )
    return [(r["session_id"], r["source_line"], r["intent"], r["content"]) for r in rows]


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
