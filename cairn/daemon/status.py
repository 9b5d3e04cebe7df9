"""`cairn status`: one look at the daemon, its queue, what failed, and what indexing cost today.

Besides the UTC day's spend (`Today`, as providers bill), it shows the daily token budget on the
user's local day (`Budget`, `cairn.agent.budget`) whenever one applies, and the daemon's indexing
pause (`IndexingPause`, from `cairn.daemon.pause`) while the store does not show it to be over.

The daemon owns the store while it runs, so this never opens a `Store` (which takes the store lock)
and never goes through the daemon either: it reads through a read-only SQLite connection
(`mode=ro`), which WAL lets it do while the daemon writes — the same way `cairn daemon status`
reads the queue. Whether the daemon runs comes from `cairn.daemon.process` (pidfile + liveness), so
both commands agree on what "running" means.

Everything here is a plain dataclass, so `--json` is `asdict` and the CLI only renders.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from cairn.config import Settings
from cairn.daemon import process
from cairn.daemon.queue import STATUSES
from cairn.daemon.recall_drops import read_drops

if TYPE_CHECKING:
    from cairn.agent.budget import BudgetState
    from cairn.daemon.pause import Pause
    from cairn.store.db import Database

RECENT_RUNS = 10


@dataclass(frozen=True)
class ParkedItem:
    """A queue item that failed `queue_max_attempts` times; the user has to look at it."""

    id: int
    path: str
    session_id: str | None
    attempts: int
    last_error: str | None
    enqueued_at: str


@dataclass(frozen=True)
class RetryingItem:
    """A queue item that failed and waits for its next try."""

    id: int
    path: str
    attempts: int
    next_try_at: str | None
    last_error: str | None


@dataclass(frozen=True)
class RecentRun:
    """One `index_runs` row, cut to what tells a person whether indexing works and what it costs."""

    id: int
    started_at: str
    model: str
    mode: str
    outcome: str | None
    input_tokens: int
    output_tokens: int
    ideas_applied: int
    error: str | None


@dataclass(frozen=True)
class Today:
    """Indexing spend since midnight UTC (model prices are per token, and providers bill in UTC)."""

    date: str
    runs: int = 0
    failed_runs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Budget:
    """Today's indexing tokens against the daily budget (`cairn.agent.budget`): the local day, any model
    but offline; `resets_at` is local ISO time, `words` the phrase status and the viewer show."""

    spent: int
    limit: int
    remaining: int | None
    resets_at: str
    exhausted: bool
    words: str


@dataclass(frozen=True)
class IndexingPause:
    """The daemon's indexing pause (`cairn.daemon.pause`) while it holds: `line` is what a person reads."""

    kind: str
    reason: str
    model: str
    since: str
    until: str
    line: str


@dataclass
class Recall:
    """What recall brought into sessions and what it could not: ideas injected, the injections the agent
    expanded (`hits`, `hit_rate`), and hook calls dropped because the daemon did not serve them in time
    (`drops`, per reason: late, failed, no_daemon; `last_drop` says when and which)."""

    injections: int = 0
    hits: int = 0
    hit_rate: float | None = None
    drops: int = 0
    drops_by_reason: dict[str, int] = field(default_factory=dict)
    last_drop: dict[str, object] | None = None


@dataclass
class Status:
    """Everything `cairn status` shows; `store` is False when there is no store (yet) to read."""

    home: str
    store: bool
    daemon: process.DaemonStatus
    queue: dict[str, int] = field(default_factory=dict)
    parked: list[ParkedItem] = field(default_factory=list)
    retrying: list[RetryingItem] = field(default_factory=list)
    recent_runs: list[RecentRun] = field(default_factory=list)
    today: Today | None = None
    # Set when a budget applies (daily_token_budget > 0 and a model other than offline indexes).
    budget: Budget | None = None
    pause: IndexingPause | None = None
    ideas: int = 0
    messages: int = 0
    recall: Recall = field(default_factory=Recall)
    error: str | None = None

    @property
    def depth(self) -> int:
        """Items the daemon still has to do: pending (including those backing off) and running."""
        return self.queue.get("pending", 0) + self.queue.get("running", 0)


def _ideas_applied(applied: str | None) -> int:
    """Ideas one run wrote, from its `applied` JSON (`ApplyStats`); 0 for runs that applied nothing."""
    try:
        data = json.loads(applied or "{}")
    except ValueError:
        return 0
    by_intent = data.get("ideas_by_intent") if isinstance(data, dict) else None
    return sum(int(n) for n in by_intent.values()) if isinstance(by_intent, dict) else 0


def budget_applies(settings: Settings) -> bool:
    """Whether the daily budget holds the model this home indexes with (the configured one, else the
    default: Claude with a key, offline without)."""
    from cairn.agent.budget import applies
    from cairn.agent.model_names import default_model

    return applies(settings, settings.model or default_model())


def read_budget(conn: sqlite3.Connection, settings: Settings, now: datetime) -> Budget:
    """Today's `Budget` through a read-only connection."""
    from cairn.agent.budget import read_budget_state

    return as_budget(read_budget_state(conn, settings, now))


def as_budget(state: BudgetState) -> Budget:
    from cairn.agent.budget import budget_words

    return Budget(
        spent=state.spent,
        limit=state.limit,
        remaining=state.remaining,
        resets_at=state.resets_at.isoformat(timespec="seconds"),
        exhausted=state.exhausted,
        words=budget_words(state),
    )


def _shown(pause: Pause, now: datetime) -> IndexingPause:
    from cairn.daemon.pause import pause_line

    return IndexingPause(
        kind=pause.kind,
        reason=pause.reason,
        model=pause.model,
        since=pause.since.isoformat(timespec="seconds"),
        until=pause.until.isoformat(timespec="seconds"),
        line=pause_line(pause, now),
    )


_APPLIED_SINCE = (
    "SELECT 1 FROM index_runs WHERE outcome IN ('ok', 'tool_budget') AND started_at > ? AND model = ? LIMIT 1"
)


async def current_pause(db: Database, settings: Settings, now: datetime) -> IndexingPause | None:
    """`read_pause_state` through the store's own connection (`cairn stats`, which may run in the daemon)."""
    from cairn.agent.budget import budget_state
    from cairn.daemon.pause import BUDGET, read_pause
    from cairn.store.store import iso_utc

    pause = read_pause(settings.home)
    if pause is None:
        return None
    if pause.kind == BUDGET:
        over = not (await budget_state(db, settings, now)).exhausted
    else:
        over = await db.fetchone(_APPLIED_SINCE, (iso_utc(pause.last_failure), pause.model)) is not None
    return None if over else _shown(pause, now)


def read_pause_state(conn: sqlite3.Connection, settings: Settings, now: datetime) -> IndexingPause | None:
    """The recorded pause, unless the store shows it is over: an applied run of its model after its last
    failure (the daemon stopped while paused, and a command's run worked since), or, for a budget pause, a
    budget no longer spent (a new day, or a raised budget)."""
    from cairn.agent.budget import read_budget_state
    from cairn.daemon.pause import BUDGET, read_pause
    from cairn.store.store import iso_utc

    pause = read_pause(settings.home)
    if pause is None:
        return None
    if pause.kind == BUDGET:
        over = not read_budget_state(conn, settings, now).exhausted
    else:
        over = conn.execute(_APPLIED_SINCE, (iso_utc(pause.last_failure), pause.model)).fetchone() is not None
    return None if over else _shown(pause, now)


def _read(conn: sqlite3.Connection, state: Status, recent: int, now: datetime, settings: Settings) -> None:
    rows = conn.execute("SELECT status, count(*) FROM work_queue GROUP BY status").fetchall()
    found = {str(status): int(n) for status, n in rows}
    state.queue = {status: found.get(status, 0) for status in STATUSES}
    state.parked = [
        ParkedItem(*row)
        for row in conn.execute(
            "SELECT id, path, session_id, attempts, last_error, enqueued_at FROM work_queue "
            "WHERE status = 'parked' ORDER BY id DESC"
        )
    ]
    state.retrying = [
        RetryingItem(*row)
        for row in conn.execute(
            "SELECT id, path, attempts, next_try_at, last_error FROM work_queue "
            "WHERE status = 'pending' AND attempts > 0 ORDER BY next_try_at, id"
        )
    ]
    state.recent_runs = [
        RecentRun(
            id=int(row[0]),
            started_at=str(row[1]),
            model=str(row[2]),
            mode=str(row[3]),
            outcome=row[4],
            input_tokens=int(row[5]),
            output_tokens=int(row[6]),
            ideas_applied=_ideas_applied(row[7]),
            error=row[8],
        )
        for row in conn.execute(
            "SELECT id, started_at, model, mode, outcome, input_tokens, output_tokens, applied, error "
            "FROM index_runs ORDER BY id DESC LIMIT ?",
            (recent,),
        )
    ]
    # Stored timestamps are ISO-8601 UTC text, so "today" is a string comparison against midnight.
    date = now.astimezone(UTC).date().isoformat()
    runs, failed, tokens_in, tokens_out = conn.execute(
        "SELECT count(*), coalesce(sum(outcome NOT IN ('ok', 'tool_budget') OR outcome IS NULL), 0), "
        "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
        "FROM index_runs WHERE started_at >= ?",
        (date,),
    ).fetchone()
    state.today = Today(date, int(runs), int(failed), int(tokens_in), int(tokens_out))
    if budget_applies(settings):
        state.budget = read_budget(conn, settings, now)
    state.pause = read_pause_state(conn, settings, now)
    state.ideas = int(conn.execute("SELECT count(*) FROM ideas").fetchone()[0])
    state.messages = int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    injections, hits = conn.execute(
        "SELECT count(idea_id), count(CASE WHEN idea_id IS NOT NULL THEN hit_at END) FROM recall_injections"
    ).fetchone()
    state.recall.injections, state.recall.hits = int(injections), int(hits)
    state.recall.hit_rate = round(hits / injections, 4) if injections else None


def read_status(settings: Settings, *, recent: int = RECENT_RUNS, now: datetime | None = None) -> Status:
    """Read the daemon's state and the store without locking anything; never raises for a bad store.

    A store that cannot be read (older schema, corrupt file, locked past the busy timeout) is
    reported in `error` next to whatever the daemon state says, because a status command that
    crashes is useless exactly when something is wrong.
    """
    state = Status(home=str(settings.home), store=settings.db_path.exists(), daemon=process.status(settings))
    drops = read_drops(settings.home)
    state.recall = Recall(drops=drops["total"], drops_by_reason=drops["by_reason"], last_drop=drops["last"])
    if not state.store:
        return state
    from cairn.store.db import read_only_uri

    try:
        uri = read_only_uri(settings.db_path)  # a read-only home needs `immutable`, see there
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            conn.execute(f"PRAGMA busy_timeout = {settings.sqlite_busy_timeout_ms}")
            _read(conn, state, recent, now if now is not None else datetime.now(UTC), settings)
    except sqlite3.Error as exc:
        state.error = f"cannot read {settings.db_path}: {exc}"
    return state
