"""The daily token budget for indexing: what today's runs spent, and whether another run may start.

A model that indexes on the user's own plan or key spends real money or plan quota, and an indexer
that kept running unbounded is the complaint users of comparable tools make most ("$17 in 3 hours",
plan limits used up overnight). So every model but `offline` shares one budget per local day,
`Settings.daily_token_budget` (0 turns it off).

What counts: input plus output tokens of every `index_runs` row — any mode, any outcome, applied or
failed, daemon, backfill, sync or reindex alike — except the offline model's (its counts are estimates
of what a model would have been sent, and cost nothing). An eval records its runs in its own temporary
store, so the budget caps one eval run by itself and does not share the daemon's day.

The day is the user's: from the local midnight of `now` on, since a person reads "today" on their own
clock. `index_runs.started_at` is UTC text, so the window's start is converted to UTC and compared as
text (the store's one time format).

The budget is checked before a run starts: a run of an API model started under the budget may end over
it, by at most one run's tokens (bounded by `usage_limits`), since cutting a run short would throw away
what it was paid for. The `claude-code` model sends requests pydantic-ai never sees, so its runs are
also held to what is left of the day request by request (`cairn.agent.spend`, through the gate of
`cairn.agent.claude_code_gate`).

Reading it is one indexed query, so a caller may ask before every batch. The clock is a parameter so
a test can move to the next day.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from cairn.agent.model_names import OFFLINE
from cairn.config import Settings
from cairn.store.db import Database
from cairn.store.store import iso_utc

Clock = Callable[[], datetime]

_SPENT_SQL = (
    "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM index_runs "
    "WHERE started_at >= ? AND model != ?"
)


def utc_now() -> datetime:
    """The real clock, the default of every `now` here."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class BudgetState:
    """Today's indexing spend against the budget; `limit` 0 means no budget applies."""

    spent: int
    limit: int
    remaining: int | None
    resets_at: datetime
    exhausted: bool

    @property
    def enabled(self) -> bool:
        return self.limit > 0


def day_window(now: datetime) -> tuple[datetime, datetime]:
    """(start, end) of the local day holding `now`, as aware local datetimes.

    A naive datetime's `astimezone()` reads it as local time with the zone rules of that date, so a
    day next to a daylight-saving change gets its own midnight, not today's offset.
    """
    local = now.astimezone()
    start = datetime.combine(local.date(), time()).astimezone()
    end = datetime.combine(local.date() + timedelta(days=1), time()).astimezone()
    return start, end


def state_of(spent: int, limit: int, now: datetime) -> BudgetState:
    """The budget state for `spent` tokens today under `limit` (0: off) at `now`."""
    _start, end = day_window(now)
    if limit <= 0:
        return BudgetState(spent=spent, limit=0, remaining=None, resets_at=end, exhausted=False)
    return BudgetState(
        spent=spent, limit=limit, remaining=max(0, limit - spent), resets_at=end, exhausted=spent >= limit
    )


def _since(now: datetime) -> str:
    return iso_utc(day_window(now)[0])


async def spent_today(dbs: Iterable[Database], now: datetime) -> int:
    """Tokens the non-offline runs recorded in `dbs` spent since the local midnight of `now`."""
    total = 0
    for db in dbs:
        total += int(await db.scalar(_SPENT_SQL, (_since(now), OFFLINE)) or 0)
    return total


async def budget_state(
    db: Database | Iterable[Database], settings: Settings, now: datetime | None = None
) -> BudgetState:
    """Today's state of the budget, counting the runs of `db` (or of several: a re-index's scratch
    store records its runs aside until its session is swapped in)."""
    moment = now if now is not None else utc_now()
    dbs = [db] if isinstance(db, Database) else list(db)
    return state_of(await spent_today(dbs, moment), settings.daily_token_budget, moment)


def read_budget_state(conn: sqlite3.Connection, settings: Settings, now: datetime) -> BudgetState:
    """`budget_state` through a plain (read-only) sqlite3 connection, for `cairn status`."""
    spent = int(conn.execute(_SPENT_SQL, (_since(now), OFFLINE)).fetchone()[0] or 0)
    return state_of(spent, settings.daily_token_budget, now)


def applies(settings: Settings, model: str) -> bool:
    """Whether runs of `model` are held to the daily budget: any model but offline, when one is set."""
    return settings.daily_token_budget > 0 and model.strip() != OFFLINE


def clock_time(moment: datetime) -> str:
    """`00:00 local` for a reset at midnight, else `HH:MM local` (a person's clock, no date)."""
    return f"{moment.astimezone():%H:%M} local"


def spent_line(state: BudgetState) -> str:
    """The one line a person reads when indexing stops for the budget: what was spent, when it goes on,
    and how to go on now."""
    return (
        f"daily indexing budget spent: {state.spent:,} of {state.limit:,} tokens today; indexing resumes "
        f"after midnight ({clock_time(state.resets_at)}) — raise daily_token_budget to go on now"
    )


def budget_words(state: BudgetState) -> str:
    """Today's spend in one phrase for status and stats: `12,345 of 2,000,000 tokens today (0.6%);
    resets 00:00 local`, or the spend alone when no budget applies."""
    if not state.enabled:
        return f"{state.spent:,} tokens today (no daily budget: daily_token_budget = 0)"
    share = state.spent / state.limit
    words = f"{state.spent:,} of {state.limit:,} tokens today ({share:.0%})"
    if state.exhausted:
        return f"{words}: spent, indexing waits; resets {clock_time(state.resets_at)}"
    return f"{words}; resets {clock_time(state.resets_at)}"
