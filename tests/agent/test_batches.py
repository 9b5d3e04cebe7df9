"""Batches for the indexer: token-bounded, contiguous per file, noise covered but not sent."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from cairn.agent.batches import plan_batches
from cairn.agent.schema import extract_batch, render_batch_prompt
from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.store import Store
from cairn.tokens import count_tokens
from tests.helpers.paths import REAL_TRANSCRIPTS

VIEWER = sorted((REAL_TRANSCRIPTS / "claude-code-viewer").glob("*.jsonl"))
DEMO = Path(__file__).resolve().parents[2] / "cairn" / "demo" / "demo-session.jsonl"


async def test_batches_cover_every_message_once_and_respect_the_budget(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, VIEWER, settings, vectors=False)
        for mode, budget in (("backfill", 8_000), ("continuous", 3_000)):
            batches = await plan_batches(store.db, mode=mode, message_tokens=budget)
            assert len(batches) > 1
            covered: dict[str, list[tuple[int, int]]] = {}
            for planned in batches:
                assert planned.tokens <= budget
                sent = sum(count_tokens(m.content) for u in planned.batch.updates for m in u.messages)
                assert sent <= budget
                if mode == "backfill":
                    assert len({c.session_id for c in planned.cursors}) == 1
                for cursor in planned.cursors:
                    covered.setdefault(cursor.path, []).append((cursor.from_line, cursor.to_line))
            for path, ranges in covered.items():
                # Contiguous: each batch starts where the previous one ended, from 0 to the last line.
                assert ranges[0][0] == 0
                assert all(a[1] == b[0] for a, b in pairwise(ranges))
                last = await store.db.scalar(
                    "SELECT max(m.end_line) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
                    "WHERE f.path = ?",
                    (path,),
                )
                assert ranges[-1][1] == last


async def test_noise_is_covered_but_not_sent(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [DEMO], settings, vectors=False)
        [planned] = await plan_batches(store.db, mode="backfill")
        contents = [m.content for u in planned.batch.updates for m in u.messages]
        assert not any(c.startswith("/cost") or "Total cost" in c for c in contents)
        noise_lines = await store.db.fetchall("SELECT end_line FROM messages WHERE is_noise = 1")
        assert noise_lines and all(r["end_line"] <= planned.cursors[0].to_line for r in noise_lines)
        # The prompt round-trips the batch, and transcript text stays inside the markers as JSON.
        assert extract_batch(render_batch_prompt(planned.batch)) == planned.batch


async def test_nothing_pending_after_the_cursor_moves(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [DEMO], settings, vectors=False)
        [planned] = await plan_batches(store.db)
        async with store.db.write() as conn:
            await conn.execute(
                "UPDATE transcript_files SET indexed_line = ? WHERE id = ?",
                (planned.cursors[0].to_line, planned.cursors[0].file_id),
            )
        assert await plan_batches(store.db) == []
