"""The daemon's pause, cycle by cycle in process with a clock the test moves.

`Daemon.cycle` over claimed queue items, with a `FunctionModel` that fails the way a model adapter does
(a `ModelAPIError` subclass carrying `resume_at`, as the Claude Code adapter's errors may) or answers
with a known usage. What must hold: the model's `resume_at` sets the pause's end, a failure without
one backs off (doubling), the budget pauses until local midnight, items are deferred without an
attempt, the first successful run lifts the pause, and a new daemon takes an earlier pause over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from cairn.agent.budget import day_window
from cairn.agent.models import ModelChoice, request_settings
from cairn.config import Settings
from cairn.daemon import loop, queue
from cairn.daemon.loop import Daemon
from cairn.daemon.pause import BUDGET, MODEL, read_pause
from cairn.store.store import Store, iso_utc
from tests.helpers.indexer import CONVERSATION, SESSION, _entry, write_transcript

LINE = "Claude Code is not logged in: run `claude` and log in"


class NotLoggedIn(ModelAPIError):
    """What a model adapter raises: an API error with one clear line and, maybe, when to come back."""

    def __init__(self, resume_at: datetime | None) -> None:
        super().__init__("claude-code:claude-haiku-4-5", LINE)
        self.resume_at = resume_at


class Model:
    """Fails with `failure` while it is set, else answers with no ideas and 1,000 tokens of usage."""

    def __init__(self) -> None:
        self.failure: Callable[[], Exception] | None = None
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        if self.failure is not None:
            raise self.failure()
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {})],
            usage=RequestUsage(input_tokens=900, output_tokens=100),
        )


class Clock:
    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.at


async def _claim(store: Store, clock: Clock) -> list[queue.QueueItem]:
    return await queue.claim(store.db, clock(), 10)


async def _rows(store: Store) -> list[tuple[Any, ...]]:
    rows = await store.db.fetchall("SELECT status, attempts, event, next_try_at FROM work_queue ORDER BY id")
    return [tuple(row) for row in rows]


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return write_transcript(tmp_path / "projects" / "-home-dev-acme", SESSION, CONVERSATION)


def _daemon(settings: Settings, store: Store, model: Model, clock: Clock) -> Daemon:
    choice = ModelChoice("claude-code:claude-haiku-4-5", FunctionModel(model), request_settings(settings))
    return Daemon(settings, store, choice, now=clock)


async def test_resume_at_backoff_and_the_first_success(
    store: Store, settings: Settings, transcript: Path
) -> None:
    model, clock = Model(), Clock()
    daemon = _daemon(settings, store, model, clock)
    soon = clock() + timedelta(minutes=7)
    model.failure = lambda: NotLoggedIn(soon)
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")

    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.deferred, report.retried, report.paused) == (1, 1, 0, LINE)
    assert report.messages_added == len(CONVERSATION), "captured though not indexed"
    assert await _rows(store) == [("pending", 0, queue.PAUSED_EVENT, iso_utc(soon))]
    pause = read_pause(settings.home)
    assert pause is not None and (pause.kind, pause.reason, pause.until) == (MODEL, LINE, soon)
    assert pause.model == "claude-code:claude-haiku-4-5" and pause.failures == 1
    first_failure = pause.since

    # Before `resume_at` nothing is due; a notification makes the item due: captured, no run, deferred.
    assert await _claim(store, clock) == []
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.deferred, model.calls) == (0, 1, 1)

    # At `resume_at` one run probes; it fails without a time of its own: the backoff, doubled per failure.
    model.failure = lambda: NotLoggedIn(None)
    for failures, wait in ((2, 2 * settings.pause_backoff_seconds), (3, 4 * settings.pause_backoff_seconds)):
        clock.at = daemon.pause.until if daemon.pause else clock.at
        report = await daemon.cycle(await _claim(store, clock))
        assert (report.runs, report.deferred) == (1, 1)
        pause = read_pause(settings.home)
        assert pause is not None and pause.failures == failures and pause.since == first_failure
        assert pause.until == clock.at + timedelta(seconds=wait)
    # One row all along: the notification made the deferred row due rather than adding one.
    assert [row[:3] for row in await _rows(store)] == [("pending", 0, queue.PAUSED_EVENT)]

    model.failure = None
    clock.at = daemon.pause.until if daemon.pause else clock.at
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.deferred, report.done, report.paused) == (1, 0, 1, None)
    assert daemon.pause is None and read_pause(settings.home) is None
    assert await store.db.scalar("SELECT indexed_line FROM transcript_files") == len(CONVERSATION)


async def test_a_spent_budget_pauses_until_local_midnight_then_goes_on(
    store: Store, transcript: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = store.settings.model_copy(update={"daily_token_budget": 1_000})
    model, clock = Model(), Clock()
    daemon = _daemon(settings, store, model, clock)
    other = write_transcript(
        tmp_path / "projects" / "-home-dev-acme", "0b7c5e2a-3d41-4c8e-9f6a-cafe000000cc", CONVERSATION
    )
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.done, report.paused) == (1, 1, None)

    await queue.enqueue(store.db, str(other), None, "Stop")
    report = await daemon.cycle(await _claim(store, clock))
    _start, midnight = day_window(clock())
    assert (report.runs, report.deferred) == (0, 1) and report.paused is not None
    assert report.paused.startswith("daily indexing budget spent: 1,000 of 1,000 tokens today")
    pause = read_pause(settings.home)
    assert pause is not None and (pause.kind, pause.until) == (BUDGET, midnight)
    assert [row[:3] for row in await _rows(store)][-1] == ("pending", 0, queue.PAUSED_EVENT)

    clock.at = midnight.astimezone(UTC) + timedelta(minutes=1)
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.done, report.paused) == (1, 1, None)
    assert read_pause(settings.home) is None and model.calls == 2


async def test_raising_the_budget_lifts_its_pause_without_a_restart(
    store: Store, transcript: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget line says "raise daily_token_budget to go on now": a daemon in a budget pause reads
    the setting again from config.toml and goes on with the deferred items."""
    monkeypatch.setattr(loop, "BUDGET_RECHECK_SECONDS", 0.0)
    settings = store.settings.model_copy(update={"daily_token_budget": 1_000})
    model, clock = Model(), Clock()
    daemon = _daemon(settings, store, model, clock)
    async with store.db.write() as conn:
        await conn.execute(
            "INSERT INTO index_runs (model, prompt_version, mode, input_tokens, output_tokens, outcome) "
            "VALUES ('claude-code:claude-haiku-4-5', 'v1', 'continuous', 1000, 0, 'ok')"
        )
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.deferred) == (0, 1) and daemon.pause is not None
    assert await _claim(store, clock) == []

    settings.config_path.write_text("daily_token_budget = 1500\n")  # 1,000 spent < 1,500: go on
    await daemon._recheck_budget()
    assert daemon.pause is None and read_pause(settings.home) is None
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.done) == (1, 1)

    # Spent again (2,000 of 1,500); raised too little (1,800): the pause stays, with the new figures.
    with transcript.open("a") as out:
        out.write(_entry(SESSION, 99, "user", "One more question about the budget") + "\n")
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    report = await daemon.cycle(await _claim(store, clock))
    assert (report.runs, report.deferred) == (0, 1)
    settings.config_path.write_text("daily_token_budget = 1800\n")
    await daemon._recheck_budget()
    pause = read_pause(settings.home)
    assert pause is not None and pause.reason.startswith("daily indexing budget spent: 2,000 of 1,800 tokens")


async def test_a_new_daemon_takes_over_an_earlier_pause_and_tries_at_once(
    store: Store, settings: Settings, transcript: Path
) -> None:
    model, clock = Model(), Clock()
    first = _daemon(settings, store, model, clock)
    model.failure = lambda: NotLoggedIn(clock() + timedelta(hours=2))
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    await first.cycle(await _claim(store, clock))
    assert await _claim(store, clock) == []

    second = _daemon(settings, store, model, clock)
    assert second.pause is not None and second.pause.reason == LINE
    await second.take_over()  # what `serve` does first: the deferred items are due at once
    [item] = await _claim(store, clock)
    model.failure = None
    report = await second.cycle([item])
    assert (report.runs, report.done) == (1, 1) and read_pause(settings.home) is None


async def test_a_daemon_whose_items_all_wait_on_a_long_pause_exits_when_idle(
    store: Store, transcript: Path, tmp_path: Path
) -> None:
    """A spent budget defers items to midnight: the daemon does not sit up for them. It exits after
    `idle_exit_seconds` with the item still queued, and the next daemon tries it at once."""
    settings = store.settings.model_copy(update={"daily_token_budget": 1_000, "idle_exit_seconds": 0.3})
    model, clock = Model(), Clock()
    daemon = _daemon(settings, store, model, clock)
    other = write_transcript(
        tmp_path / "projects" / "-home-dev-acme", "0b7c5e2a-3d41-4c8e-9f6a-cafe000000dd", CONVERSATION
    )
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    await daemon.cycle(await _claim(store, clock))  # 1,000 tokens: the budget is spent
    await queue.enqueue(store.db, str(other), None, "Stop")
    await daemon.cycle(await _claim(store, clock))  # captured, deferred to midnight
    assert daemon.pause is not None and daemon.pause.kind == BUDGET
    waiting = [("pending", 0, queue.PAUSED_EVENT)]
    assert [row[:3] for row in await _rows(store) if row[0] == "pending"] == waiting

    await asyncio.wait_for(daemon.serve(), timeout=60)  # returns: idle, though an item waits

    assert [row[:3] for row in await _rows(store) if row[0] == "pending"] == waiting
    assert model.calls == 1
    clock.at = day_window(clock())[1].astimezone(UTC) + timedelta(minutes=1)
    again = _daemon(settings, store, model, clock)
    await again.take_over()  # the next daemon (a hook starts it) after midnight makes the item due
    assert [item.path for item in await _claim(store, clock)] == [str(other)]


async def test_a_new_daemon_leaves_a_budget_pause_alone_while_the_budget_is_still_spent(
    store: Store, transcript: Path, tmp_path: Path
) -> None:
    """Waking the deferred items of a spent budget would only capture, plan and defer them again."""
    settings = store.settings.model_copy(update={"daily_token_budget": 1_000})
    model, clock = Model(), Clock()
    first = _daemon(settings, store, model, clock)
    other = write_transcript(
        tmp_path / "projects" / "-home-dev-acme", "0b7c5e2a-3d41-4c8e-9f6a-cafe000000ee", CONVERSATION
    )
    await queue.enqueue(store.db, str(transcript), SESSION, "Stop")
    await first.cycle(await _claim(store, clock))  # 1,000 tokens: the budget is spent
    await queue.enqueue(store.db, str(other), None, "Stop")
    await first.cycle(await _claim(store, clock))  # deferred to midnight
    _start, midnight = day_window(clock())

    second = _daemon(settings, store, model, clock)
    await second.take_over()
    assert second.pause is not None and (second.pause.kind, second.pause.until) == (BUDGET, midnight)
    assert await _claim(store, clock) == [], "still spent today: the item waits for midnight"

    clock.at = midnight.astimezone(UTC) + timedelta(minutes=1)
    third = _daemon(settings, store, model, clock)
    await third.take_over()
    [item] = await _claim(store, clock)
    report = await third.cycle([item])
    assert (report.runs, report.done) == (1, 1) and model.calls == 2
