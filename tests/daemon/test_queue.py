"""The work queue's state machine on a real store: pending → running → done | pending again | parked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from cairn.config import Settings
from cairn.daemon import queue
from cairn.store.db import Database
from cairn.store.store import Store, iso_utc

NOW = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    store = await Store.open(settings)
    try:
        yield store.db
    finally:
        await store.close()


async def test_enqueue_collapses_while_pending_but_not_while_running(db: Database) -> None:
    assert await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    assert not await queue.enqueue(db, "/t/a.jsonl", "s", "UserPromptSubmit")
    [item] = await queue.claim(db, NOW, 10)
    assert (item.path, item.event, item.status) == ("/t/a.jsonl", "Stop", "running")
    assert await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    assert await queue.counts(db) == {"pending": 1, "running": 1, "parked": 0, "done": 0}
    assert await queue.depth(db) == 2


async def test_claim_takes_due_items_oldest_first_up_to_the_limit(db: Database) -> None:
    for name in "abcd":
        await queue.enqueue(db, f"/t/{name}.jsonl")
    async with db.write() as conn:
        await conn.execute(
            "UPDATE work_queue SET next_try_at = ? WHERE path = '/t/b.jsonl'",
            (iso_utc(NOW + timedelta(seconds=30)),),
        )
    first = await queue.claim(db, NOW, 2)
    assert [i.path for i in first] == ["/t/a.jsonl", "/t/c.jsonl"]
    assert [i.path for i in await queue.claim(db, iso_utc(NOW), 10)] == ["/t/d.jsonl"]
    assert await queue.claim(db, NOW, 10) == []
    later = await queue.claim(db, NOW + timedelta(seconds=31), 10)
    assert [i.path for i in later] == ["/t/b.jsonl"]


async def test_done_settles_items(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl")
    await queue.enqueue(db, "/t/b.jsonl")
    items = await queue.claim(db, NOW, 10)
    assert await queue.done(db, [i.id for i in items]) == 2
    assert await queue.done(db, []) == 0
    assert await queue.depth(db) == 0
    assert (await queue.counts(db))["done"] == 2


async def test_retry_backs_off_then_parks_with_the_error(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    [item] = await queue.claim(db, NOW, 1)
    item = await queue.retry(db, item, "boom 1", max_attempts=3, backoff=5.0, now=NOW)
    assert (item.status, item.attempts, item.last_error) == ("pending", 1, "boom 1")
    assert item.next_try_at == iso_utc(NOW + timedelta(seconds=5))
    assert await queue.claim(db, NOW + timedelta(seconds=4), 1) == []
    [item] = await queue.claim(db, NOW + timedelta(seconds=5), 1)
    item = await queue.retry(db, item, "boom 2", max_attempts=3, backoff=5.0, now=NOW)
    assert item.next_try_at == iso_utc(NOW + timedelta(seconds=10)), "a float backoff doubles"
    [item] = await queue.claim(db, NOW + timedelta(seconds=10), 1)
    item = await queue.retry(db, item, "boom 3", max_attempts=3, backoff=5.0, now=NOW)
    assert (item.status, item.attempts, item.next_try_at) == ("parked", 3, None)
    [parked] = await queue.parked(db)
    assert (parked.path, parked.last_error) == ("/t/a.jsonl", "boom 3")
    assert await queue.depth(db) == 0


async def test_retry_with_a_callable_backoff(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl")
    [item] = await queue.claim(db, NOW, 1)
    item = await queue.retry(db, item, "x", max_attempts=5, backoff=lambda n: 60.0 * n, now=NOW)
    assert item.next_try_at == iso_utc(NOW + timedelta(seconds=60))
    assert queue.backoff_seconds(1.0, 40) == queue.MAX_BACKOFF_SECONDS


async def test_retry_merges_into_a_fresh_pending_row(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    [item] = await queue.claim(db, NOW, 1)
    await queue.enqueue(db, "/t/a.jsonl", "s", "UserPromptSubmit")  # the hook fired meanwhile
    merged = await queue.retry(db, item, "boom", max_attempts=3, backoff=5.0, now=NOW)
    assert merged.id != item.id
    assert (merged.status, merged.attempts, merged.last_error) == ("pending", 1, "boom")
    assert merged.next_try_at == iso_utc(NOW + timedelta(seconds=5))
    assert await queue.counts(db) == {"pending": 1, "running": 0, "parked": 0, "done": 1}


async def test_requeue_running_recovers_a_crashed_daemon_s_claims(db: Database) -> None:
    for name in "abc":
        await queue.enqueue(db, f"/t/{name}.jsonl")
    await queue.claim(db, NOW, 10)
    await queue.enqueue(db, "/t/c.jsonl")  # c was notified again while it ran
    assert await queue.requeue_running(db) == 3
    assert await queue.counts(db) == {"pending": 3, "running": 0, "parked": 0, "done": 1}
    assert sorted(i.path for i in await queue.claim(db, NOW, 10)) == [
        "/t/a.jsonl",
        "/t/b.jsonl",
        "/t/c.jsonl",
    ]
    assert await queue.requeue_running(db) == 3
    assert await queue.requeue_running(db) == 0


async def test_defer_puts_an_item_back_until_the_pause_ends_without_an_attempt(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    [item] = await queue.claim(db, NOW, 1)
    until = NOW + timedelta(hours=3)
    deferred = await queue.defer(db, item, until, "Claude Code is not logged in")
    assert deferred is not None and deferred.id == item.id
    assert (deferred.status, deferred.attempts, deferred.event) == ("pending", 0, queue.PAUSED_EVENT)
    assert (deferred.next_try_at, deferred.last_error) == (iso_utc(until), "Claude Code is not logged in")
    assert await queue.claim(db, NOW, 10) == [], "not due before the pause ends"
    for _ in range(10):  # deferred again and again: never an attempt, never parked
        [again] = await queue.claim(db, until, 1)
        assert await queue.defer(db, again, until, "still paused") is not None
    assert await queue.counts(db) == {"pending": 1, "running": 0, "parked": 0, "done": 0}
    assert (await queue.claim(db, until, 1))[0].attempts == 0


async def test_a_notification_makes_a_deferred_item_due_and_wake_deferred_all(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    await queue.enqueue(db, "/t/b.jsonl", "s", "Stop")
    later = NOW + timedelta(hours=1)
    for item in await queue.claim(db, NOW, 10):
        await queue.defer(db, item, later, "paused")
    assert not await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")  # collapses, and is due now
    assert [i.path for i in await queue.claim(db, NOW, 10)] == ["/t/a.jsonl"]
    assert await queue.wake_deferred(db) == 1
    assert [i.path for i in await queue.claim(db, NOW, 10)] == ["/t/b.jsonl"]


async def test_defer_merges_into_a_fresh_pending_row(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    [item] = await queue.claim(db, NOW, 1)
    await queue.enqueue(db, "/t/a.jsonl", "s", "UserPromptSubmit")  # the hook fired meanwhile
    assert await queue.defer(db, item, NOW + timedelta(hours=1), "paused") is None
    [fresh] = await queue.claim(db, NOW, 10)
    assert fresh.event == "UserPromptSubmit", "the fresh row is due now: its new lines get captured"
    assert await queue.counts(db) == {"pending": 0, "running": 1, "parked": 0, "done": 1}


async def test_defer_paths_queues_the_rest_of_a_stopped_backfill(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    until = NOW + timedelta(hours=5)
    added = await queue.defer_paths(db, [("/t/a.jsonl", "s"), ("/t/b.jsonl", "t")], until, "budget")
    assert added == 1, "a path already pending is left as it is"
    assert [i.path for i in await queue.claim(db, NOW, 10)] == ["/t/a.jsonl"]
    [rest] = await queue.claim(db, until, 10)
    assert (rest.path, rest.session_id, rest.event, rest.attempts) == ("/t/b.jsonl", "t", "paused", 0)


async def test_a_deferred_item_that_then_fails_keeps_its_backoff_through_notifications(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    [item] = await queue.claim(db, NOW, 1)
    await queue.defer(db, item, NOW + timedelta(hours=1), "paused")
    [again] = await queue.claim(db, NOW + timedelta(hours=1), 1)
    failed = await queue.retry(db, again, "boom", max_attempts=5, backoff=600.0, now=NOW)
    assert failed.event is None, "a failure of its own is no pause"
    assert not await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    assert await queue.wake_deferred(db) == 0
    assert await queue.claim(db, NOW + timedelta(seconds=599), 10) == [], "the backoff holds"
    [due] = await queue.claim(db, NOW + timedelta(seconds=600), 10)
    assert due.next_try_at == iso_utc(NOW + timedelta(seconds=600))


async def test_a_failure_merged_into_a_deferred_row_keeps_its_backoff(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    [item] = await queue.claim(db, NOW, 1)
    await queue.defer_paths(db, [("/t/a.jsonl", "s")], NOW + timedelta(hours=9), "budget")
    merged = await queue.retry(db, item, "boom", max_attempts=5, backoff=600.0, now=NOW)
    assert (merged.event, merged.next_try_at) == (None, iso_utc(NOW + timedelta(hours=9)))
    assert not await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    assert await queue.claim(db, NOW + timedelta(hours=8), 10) == []


async def test_depth_due_by_leaves_out_only_items_a_pause_deferred(db: Database) -> None:
    await queue.enqueue(db, "/t/a.jsonl", "s", "Stop")
    await queue.enqueue(db, "/t/b.jsonl", "s", "Stop")
    a, b = await queue.claim(db, NOW, 10)
    await queue.defer(db, a, NOW + timedelta(hours=9), "budget")
    await queue.retry(db, b, "boom", max_attempts=5, backoff=3000.0, now=NOW)
    horizon = NOW + timedelta(seconds=300)
    assert await queue.depth(db, due_by=horizon) == 1, "a failure's far backoff still keeps the daemon"
    assert await queue.depth(db) == 2
