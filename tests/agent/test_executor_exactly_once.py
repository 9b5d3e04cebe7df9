"""Invariants 1 and 3 for the executor: a batch applies once, wholly or not at all, and vectors follow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.agent import executor
from cairn.agent.batches import plan_batches
from cairn.agent.executor import Rejected, StaleBatchError, apply, record_failed_run
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.store.outbox import SOURCES
from cairn.store.store import Store
from tests.agent.executor_helpers import (
    SESSION_A,
    SESSION_B,
    SESSION_C,
    Transcripts,
    capture,
    counts,
    cursors,
    round_one,
    run_record,
    write_round_one,
)
from tests.store.procs import run


@pytest.fixture
async def transcripts(store: Store, settings: Settings, tmp_path: Path) -> Transcripts:
    """Round one's transcripts, captured."""
    t = Transcripts(tmp_path / "projects")
    write_round_one(t)
    await capture(store, settings, t)
    return t


UNINDEXED = {SESSION_A: 0, SESSION_B: 0, SESSION_C: 0}
INDEXED = {SESSION_A: 4, SESSION_B: 2, SESSION_C: 2}


async def test_applying_a_batch_twice_raises_stale_and_duplicates_nothing(
    store: Store, transcripts: Transcripts
) -> None:
    (planned,) = await plan_batches(store.db, mode="continuous")
    result = IndexResult.model_validate(round_one(transcripts))
    await apply(store.db, planned, result, run_record())
    after_first = await counts(store.db)

    with pytest.raises(StaleBatchError, match="another run already applied it"):
        await apply(store.db, planned, result, run_record())

    assert await counts(store.db) == after_first
    assert await cursors(store.db) == INDEXED
    assert await plan_batches(store.db) == []


async def test_one_moved_cursor_makes_the_whole_batch_stale(store: Store, transcripts: Transcripts) -> None:
    (planned,) = await plan_batches(store.db, mode="continuous")
    async with store.db.write() as conn:
        await conn.execute("UPDATE transcript_files SET indexed_line = 1 WHERE session_id = ?", (SESSION_B,))
    before = await counts(store.db)

    with pytest.raises(StaleBatchError, match="its cursor is at line 1"):
        await apply(store.db, planned, IndexResult.model_validate(round_one(transcripts)), run_record())

    assert await counts(store.db) == before
    assert await cursors(store.db) == {**UNINDEXED, SESSION_B: 1}


async def test_a_failure_mid_transaction_writes_nothing_and_the_batch_replays(
    store: Store, transcripts: Transcripts, monkeypatch: pytest.MonkeyPatch
) -> None:
    (planned,) = await plan_batches(store.db, mode="continuous")
    result = IndexResult.model_validate(round_one(transcripts))
    before = await counts(store.db)
    written: list[int] = []

    async def crash(self: Any) -> None:
        async with self.conn.execute("SELECT count(*) FROM ideas") as cursor:
            row = await cursor.fetchone()
        written.append(row[0])
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(executor._Writer, "_relations", crash)
    with pytest.raises(RuntimeError, match="disk on fire"):
        await apply(store.db, planned, result, run_record())

    assert written == [5]  # the ideas were inserted inside the transaction before it failed
    assert await counts(store.db) == before
    assert await cursors(store.db) == UNINDEXED

    monkeypatch.undo()
    (replanned,) = await plan_batches(store.db, mode="continuous")
    assert replanned == planned
    stats = await apply(store.db, replanned, result, run_record())
    assert sum(stats.ideas_by_intent.values()) == 5
    assert await cursors(store.db) == INDEXED


async def test_record_failed_run_accounts_the_run_and_keeps_the_cursors(
    store: Store, transcripts: Transcripts
) -> None:
    (planned,) = await plan_batches(store.db, mode="continuous")
    rejected = [Rejected(field="ideas", item={"source_line": 1}, reason="invalid output")]
    failed = run_record(outcome="invalid_output", error="the model's JSON did not validate")

    run_id = await record_failed_run(store.db, planned, failed, rejected)
    unlabelled = await record_failed_run(store.db, planned, run_record())

    row = await store.db.fetchone("SELECT * FROM index_runs WHERE id = ?", (run_id,))
    assert row is not None
    assert (row["outcome"], row["error"], row["model"], row["tool_calls"]) == (
        "invalid_output",
        "the model's JSON did not validate",
        "test-model",
        4,
    )
    assert json.loads(row["rejected_items"]) == [r.model_dump() for r in rejected]
    assert json.loads(row["applied"]) == {}
    assert (row["messages"], row["sessions"]) == (planned.message_count, 2)
    assert await store.db.scalar("SELECT outcome FROM index_runs WHERE id = ?", (unlabelled,)) == "failed"
    assert await cursors(store.db) == UNINDEXED
    assert await plan_batches(store.db, mode="continuous") == [planned]


CHILD = """
import asyncio, os, sys
from pathlib import Path

from cairn.agent.batches import plan_batches
from cairn.agent.executor import RunRecord, apply
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.store.store import Store


async def main() -> None:
    store = await Store.open(Settings.load(sys.argv[1]))
    (planned,) = await plan_batches(store.db, mode="continuous")
    result = IndexResult.model_validate_json(Path(sys.argv[2]).read_text())
    stats = await apply(store.db, planned, result, RunRecord("test", "v1", "continuous"))
    print(stats.run_id, flush=True)
    os._exit(9)  # die right after the commit: no vector sync, no close


asyncio.run(main())
"""


@pytest.mark.process
async def test_a_crash_between_commit_and_vector_sync_is_completed_by_the_next_sync(
    settings: Settings, tmp_path: Path
) -> None:
    t = Transcripts(tmp_path / "projects")
    write_round_one(t)
    async with await Store.open(settings) as first:
        await capture(first, settings, t)
        await first.sync_vectors()  # message vectors are in; only the executor's work is pending
    result_file = tmp_path / "result.json"
    result_file.write_text(IndexResult.model_validate(round_one(t)).model_dump_json())

    child = run(CHILD, str(settings.home), str(result_file))
    assert child.returncode == 9, child.stderr
    assert child.stdout.strip().isdigit()

    async with await Store.open(settings) as store:
        db = store.db
        assert await cursors(db) == INDEXED
        pending = await db.fetchall(
            "SELECT kind, count(*) AS n FROM vector_outbox GROUP BY kind ORDER BY kind"
        )
        assert {r["kind"]: r["n"] for r in pending} == {"entities": 5, "ideas": 5, "spans": 2}
        for kind in ("ideas", "spans", "entities"):
            assert store.vectors.count(kind) == 0

        assert await store.sync_vectors() == 12

        for kind in ("ideas", "spans", "entities", "messages"):
            expected = {str(r[0]) for r in await db.fetchall(SOURCES[kind].all_sql())}
            assert store.vectors.get_ids(kind) == expected, kind
            assert store.vectors.count(kind) == len(expected), kind
        assert await store.sync_vectors() == 0
        assert await plan_batches(db) == []  # nothing is indexed again
