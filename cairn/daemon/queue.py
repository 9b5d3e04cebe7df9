"""The work queue: transcript paths the hook (or the daemon itself) wants looked at, with retry state.

The hook inserts `pending` rows from a separate process in milliseconds; the daemon claims due rows
(`running`), and settles each one as `done`, back to `pending` with a later `next_try_at`
(`retry`), or `parked` once it has failed `max_attempts` times, so a file that keeps failing is
shown to the user instead of being retried forever or dropped.

While a path waits, further notifications for it collapse into its one pending row (the partial
UNIQUE index on `path WHERE status = 'pending'`): a busy session fires a hook per prompt and per
answer, and the daemon only needs to know that the file changed, not how often. A `running` row does
not absorb new notifications, so bytes appended while a batch reads the file are never missed.

While indexing is paused (the model logged out, rate limited, unreachable, or the daily token budget
spent: `cairn.daemon.loop`), a claimed item is captured and then `defer`red: back to pending, marked
with the `paused` event and a `next_try_at` at the pause's end, its attempts untouched — a pause is
nobody's fault and must never park an item. A new notification for a deferred path makes it due at
once (the `ON CONFLICT ... DO UPDATE` of every enqueue, the hooks' included), so the daemon captures
the new lines while the pause lasts and defers the item again.

Every state change is one `db.write()` transaction; a daemon killed between `claim` and `done` leaves
rows `running`, which `requeue_running` puts back on the next start.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cairn.store.db import Database
from cairn.store.store import iso_utc

STATUSES = ("pending", "running", "parked", "done")

MAX_BACKOFF_SECONDS = 3600.0
"""A float backoff doubles per attempt; past an hour a failing file waits no longer between tries."""

PAUSED_EVENT = "paused"
"""The event of an item deferred by a pause: a notification for its path makes it due again."""

Backoff = float | Callable[[int], float]

_FIELDS = (
    "id",
    "path",
    "session_id",
    "event",
    "enqueued_at",
    "attempts",
    "next_try_at",
    "last_error",
    "status",
)
_COLUMNS = ", ".join(_FIELDS)


@dataclass(frozen=True)
class QueueItem:
    """One row of `work_queue`."""

    id: int
    path: str
    session_id: str | None
    event: str | None
    enqueued_at: str
    attempts: int
    next_try_at: str | None
    last_error: str | None
    status: str


def _item(row: sqlite3.Row | None) -> QueueItem:
    if row is None:
        raise LookupError("work_queue row vanished inside its own transaction")
    return QueueItem(**{name: row[name] for name in _FIELDS})


def _stamp(now: datetime | str | None) -> str:
    """The store's timestamp text for `now` (default: the current time); strings pass through."""
    if isinstance(now, str):
        return now
    return iso_utc(now if now is not None else datetime.now(UTC))


def backoff_seconds(backoff: Backoff, attempts: int) -> float:
    """Seconds to wait after the `attempts`-th failure.

    A number is the first wait, doubled per further attempt and capped at `MAX_BACKOFF_SECONDS`; a
    callable gets the attempt count and decides on its own.
    """
    if callable(backoff):
        return max(0.0, float(backoff(attempts)))
    return min(MAX_BACKOFF_SECONDS, max(0.0, float(backoff)) * 2 ** max(0, attempts - 1))


async def enqueue(db: Database, path: str, session_id: str | None = None, event: str | None = None) -> bool:
    """Add a pending row for `path`; False when one is already pending (the notification collapses,
    and makes a row deferred by a pause due now)."""
    async with db.write() as conn:
        found = await conn.execute("SELECT 1 FROM work_queue WHERE path = ? AND status = 'pending'", (path,))
        if await found.fetchone() is not None:
            await conn.execute(
                "UPDATE work_queue SET next_try_at = NULL "
                "WHERE path = ? AND status = 'pending' AND event = ?",
                (path, PAUSED_EVENT),
            )
            return False
        await conn.execute(
            "INSERT INTO work_queue (path, session_id, event) VALUES (?, ?, ?)", (path, session_id, event)
        )
        return True


async def claim(db: Database, now: datetime | str | None = None, limit: int = 50) -> list[QueueItem]:
    """Mark up to `limit` due pending rows `running` and return them, oldest first.

    Due means no `next_try_at` or one at or before `now`. Selection and update are one write
    transaction, so two claimers can never take the same row.
    """
    if limit <= 0:
        return []
    stamp = _stamp(now)
    async with db.write() as conn:
        cursor = await conn.execute(
            f"UPDATE work_queue SET status = 'running' WHERE id IN ("
            "  SELECT id FROM work_queue WHERE status = 'pending'"
            "  AND (next_try_at IS NULL OR next_try_at <= ?) ORDER BY id LIMIT ?"
            f") RETURNING {_COLUMNS}",
            (stamp, limit),
        )
        rows = await cursor.fetchall()
    return sorted((_item(row) for row in rows), key=lambda item: item.id)


async def done(db: Database, ids: Iterable[int]) -> int:
    """Mark rows finished; the number changed. `done` rows stay as history until pruned."""
    id_list = list(ids)
    if not id_list:
        return 0
    marks = ",".join("?" * len(id_list))
    async with db.write() as conn:
        cursor = await conn.execute(
            f"UPDATE work_queue SET status = 'done', last_error = NULL WHERE id IN ({marks})", id_list
        )
        return cursor.rowcount


async def retry(
    db: Database,
    item: QueueItem,
    error: str,
    *,
    max_attempts: int,
    backoff: Backoff,
    now: datetime | None = None,
) -> QueueItem:
    """Count a failure of `item`: back to pending after a backoff, or parked after `max_attempts`.

    If the hook queued a fresh pending row for the same path meanwhile, that row already stands for
    the next try, so this one merges into it (keeping the higher attempt count, the error and the
    later next-try time) instead of violating the one-pending-row-per-path index.

    A failure of the item's own is no pause: a `paused` event is dropped, so the next notification
    (or `wake_deferred`) does not wipe the backoff it now waits out.
    """
    attempts = item.attempts + 1
    moment = now if now is not None else datetime.now(UTC)
    if attempts >= max_attempts:
        status, next_try = "parked", None
    else:
        status = "pending"
        next_try = iso_utc(moment + timedelta(seconds=backoff_seconds(backoff, attempts)))
    async with db.write() as conn:
        if status == "pending":
            cursor = await conn.execute(
                "UPDATE work_queue SET attempts = max(attempts, ?), last_error = ?, "
                "next_try_at = max(coalesce(next_try_at, ''), ?), event = nullif(event, ?) "
                "WHERE path = ? AND status = 'pending' AND id != ? RETURNING id",
                (attempts, error, next_try, PAUSED_EVENT, item.path, item.id),
            )
            merged = await cursor.fetchone()
            if merged is not None:
                await conn.execute("UPDATE work_queue SET status = 'done' WHERE id = ?", (item.id,))
                cursor = await conn.execute(
                    f"SELECT {_COLUMNS} FROM work_queue WHERE id = ?", (merged["id"],)
                )
                return _item(await cursor.fetchone())
        cursor = await conn.execute(
            "UPDATE work_queue SET status = ?, attempts = ?, next_try_at = ?, last_error = ?, "
            f"event = nullif(event, ?) WHERE id = ? RETURNING {_COLUMNS}",
            (status, attempts, next_try, error, PAUSED_EVENT, item.id),
        )
        row = await cursor.fetchone()
    if row is None:
        raise LookupError(f"work_queue has no row {item.id}")
    return _item(row)


async def defer(db: Database, item: QueueItem, until: datetime, reason: str) -> QueueItem | None:
    """Put a claimed `item` back to pending until `until` because indexing is paused, counting no attempt.

    When a notification queued a fresh pending row for the path meanwhile, this one is finished and
    the fresh row stands for the file (it is due now, so what was appended gets captured); None then.
    """
    async with db.write() as conn:
        cursor = await conn.execute(
            "SELECT 1 FROM work_queue WHERE path = ? AND status = 'pending' AND id != ?", (item.path, item.id)
        )
        if await cursor.fetchone() is not None:
            await conn.execute("UPDATE work_queue SET status = 'done' WHERE id = ?", (item.id,))
            return None
        cursor = await conn.execute(
            "UPDATE work_queue SET status = 'pending', event = ?, next_try_at = ?, last_error = ? "
            f"WHERE id = ? RETURNING {_COLUMNS}",
            (PAUSED_EVENT, iso_utc(until), reason, item.id),
        )
        row = await cursor.fetchone()
    if row is None:
        raise LookupError(f"work_queue has no row {item.id}")
    return _item(row)


async def defer_paths(
    db: Database, entries: Iterable[tuple[str, str | None]], until: datetime, reason: str
) -> int:
    """Queue (path, session) pairs as deferred until `until`, for the daemon to index after a pause
    (the rest of a backfill the daily budget stopped); a path already pending is left as it is.
    How many rows were added."""
    added = 0
    async with db.write() as conn:
        for path, session_id in entries:
            cursor = await conn.execute(
                "INSERT INTO work_queue (path, session_id, event, next_try_at, last_error) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (path) WHERE status = 'pending' DO NOTHING",
                (path, session_id, PAUSED_EVENT, iso_utc(until), reason),
            )
            added += cursor.rowcount
    return added


async def wake_deferred(db: Database) -> int:
    """Make every item deferred by a pause due now (a daemon starting, or a pause lifted early)."""
    async with db.write() as conn:
        cursor = await conn.execute(
            "UPDATE work_queue SET next_try_at = NULL WHERE status = 'pending' AND event = ? "
            "AND next_try_at IS NOT NULL",
            (PAUSED_EVENT,),
        )
        return cursor.rowcount


async def requeue_running(db: Database) -> int:
    """Put rows left `running` by a daemon that died back to pending; the number of rows touched.

    A running row whose path meanwhile got a fresh pending row is simply finished: the pending one
    already asks for the same file to be read from its stored offset.
    """
    async with db.write() as conn:
        cursor = await conn.execute(
            "UPDATE work_queue SET status = 'done' WHERE status = 'running' AND path IN "
            "(SELECT path FROM work_queue WHERE status = 'pending')"
        )
        merged = cursor.rowcount
        cursor = await conn.execute(
            "UPDATE OR IGNORE work_queue SET status = 'pending' WHERE status = 'running' "
            "AND id IN (SELECT min(id) FROM work_queue WHERE status = 'running' GROUP BY path)"
        )
        requeued = cursor.rowcount
        # Several running rows of one path (only possible by hand-editing) keep the oldest.
        cursor = await conn.execute("UPDATE work_queue SET status = 'done' WHERE status = 'running'")
        return merged + requeued + cursor.rowcount


async def depth(db: Database, due_by: datetime | None = None) -> int:
    """Items not yet settled (pending, including those backing off, plus running): 0 means idle.

    With `due_by`, items an indexing pause deferred past then are left out: they need not keep a
    daemon up for hours (`cairn.daemon.loop`), since the next daemon to start tries them at once. An
    item backing off after a failure of its own still counts, however long its wait: only a pause's
    wait is one the next daemon cuts short.
    """
    if due_by is None:
        return int(
            await db.scalar("SELECT count(*) FROM work_queue WHERE status IN ('pending', 'running')") or 0
        )
    return int(
        await db.scalar(
            "SELECT count(*) FROM work_queue WHERE status = 'running' OR (status = 'pending' "
            "AND (event IS NOT ? OR next_try_at IS NULL OR next_try_at <= ?))",
            (PAUSED_EVENT, _stamp(due_by)),
        )
        or 0
    )


async def counts(db: Database) -> dict[str, int]:
    """Rows per status, every status present (zero when none), for `cairn status`."""
    rows = await db.fetchall("SELECT status, count(*) AS n FROM work_queue GROUP BY status")
    found = {row["status"]: int(row["n"]) for row in rows}
    return {status: found.get(status, 0) for status in STATUSES}


async def parked(db: Database) -> list[QueueItem]:
    """Items that failed `max_attempts` times, newest first, with their last error."""
    rows = await db.fetchall(f"SELECT {_COLUMNS} FROM work_queue WHERE status = 'parked' ORDER BY id DESC")
    return [_item(row) for row in rows]
