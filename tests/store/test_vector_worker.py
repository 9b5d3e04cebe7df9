"""Embedding in the background while a job writes (`Store.vectors_alongside`), real SQLite and Chroma."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from cairn.config import Settings
from cairn.store import outbox
from cairn.store.store import Store
from cairn.store.vector_worker import BULK_VECTOR_KINDS, MEMORY_VECTOR_KINDS
from cairn.store.vectors import VECTOR_KINDS
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.store.ingesting import LARGE, MAIN, MEDIUM, SMALL, ingest
from tests.store.outbox_helpers import add_memory, assert_consistent

ENTIRE = REAL_TRANSCRIPTS / "entireio-cli" / "0a76fbfe-d767-433e-b4b1-a39e044f21e8.jsonl"


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    opened = await Store.open(settings)
    yield opened
    await opened.close()


@pytest.mark.slow
async def test_what_the_body_writes_is_embedded_once_by_the_end(store: Store) -> None:
    seen: list[tuple[int, int]] = []

    async with store.vectors_alongside(progress=lambda d, t: seen.append((d, t))) as worker:
        for path in (SMALL, MAIN, LARGE):
            await ingest(store, path)
            # What the indexer does after each batch: while the worker runs this only wakes it.
            assert await store.sync_vectors() == 0
        ids = await add_memory(store, SMALL.stem)
        # What indexing wrote is embedded at once, for the next run's searches; messages are the worker's.
        memory = await store.sync_vectors()
        assert memory == 6, "2 ideas, a span, an entity, a file chunk, an association (not the passage)"
        assert str(ids["new"]) in store.vectors.get_ids("ideas")

    assert await outbox.pending(store.db) == 0
    await assert_consistent(store)
    assert worker.written > 0 and seen[-1][0] == worker.written
    assert all(done <= total for done, total in seen)
    # Every row was written to Chroma once: the two drains never share a row (all rows here are upserts).
    assert store.vectors.embedded + store.vectors.reused == worker.written + memory
    assert await store.sync_vectors() == 0  # after the block, sync_vectors drains again (nothing left)


@pytest.mark.slow
async def test_a_failing_body_keeps_the_rest_queued_and_its_own_error(store: Store) -> None:
    with pytest.raises(ZeroDivisionError):
        async with store.vectors_alongside():
            await ingest(store, LARGE)
            raise ZeroDivisionError

    # The worker stopped where it was; a later sync finishes the queue and matches SQLite.
    await store.sync_vectors()
    assert await outbox.pending(store.db) == 0
    await assert_consistent(store)


@pytest.mark.slow
async def test_stopping_leaves_the_rest_for_the_next_run(store: Store) -> None:
    for path in (SMALL, MAIN, LARGE, MEDIUM, ENTIRE):
        await ingest(store, path)
    queued = await outbox.pending(store.db)
    assert queued > 256, "more than one outbox batch"
    stop = False

    def progress(done: int, total: int) -> None:
        nonlocal stop
        stop = done > 0  # Ctrl-C after the first committed batch

    async with store.vectors_alongside(progress=progress, should_stop=lambda: stop) as worker:
        deadline = time.monotonic() + 120
        while not stop and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    left = await outbox.pending(store.db)
    assert 0 < worker.written < queued and left == queued - worker.written
    assert await store.sync_vectors() == left
    await assert_consistent(store)


async def test_one_worker_per_store(store: Store) -> None:
    async with store.vectors_alongside():
        with pytest.raises(RuntimeError, match="already runs"):
            async with store.vectors_alongside():
                pass


def test_the_worker_and_the_job_share_out_every_kind() -> None:
    assert sorted(BULK_VECTOR_KINDS + MEMORY_VECTOR_KINDS) == sorted(VECTOR_KINDS)
