"""The daily token budget: a budget of N tokens stops indexing at N (± one batch), and the next local day
goes on where it stopped, with nothing indexed twice.

A `FunctionModel` answers every batch with one idea at its first message and reports a known usage
per request, so the spend is exact; the clock is a parameter of `index_pending`, moved past midnight
by the test. The runs themselves are stamped with the real time (the executor's), which is why the
fake clock starts at the real now.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from cairn.agent import batches
from cairn.agent.batches import plan_batches
from cairn.agent.budget import budget_state, budget_words, day_window, spent_line, state_of
from cairn.agent.indexer import OK, index_batch, index_pending
from cairn.agent.models import ModelChoice, request_settings
from cairn.agent.schema import extract_batch
from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.store import Store
from tests.agent.fake_anthropic import idea_per_update
from tests.helpers.indexer import CONVERSATION, OTHER, SESSION, write_transcript

INPUT, OUTPUT = 900, 100
PER_RUN = INPUT + OUTPUT


class Clock:
    """A clock the test moves; starts at the real now (see the module docstring)."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.at


def one_idea_per_update(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = next(p.content for p in messages[0].parts if p.part_kind == "user-prompt")
    batch = extract_batch(str(prompt))
    ideas = idea_per_update(
        batch, lambda update: f"Batch of {update.session} from line {update.messages[0].line} was indexed"
    )
    return ModelResponse(
        parts=[ToolCallPart(info.output_tools[0].name, {"ideas": ideas})],
        usage=RequestUsage(input_tokens=INPUT, output_tokens=OUTPUT),
    )


async def cursors(store: Store) -> dict[str, int]:
    rows = await store.db.fetchall("SELECT session_id, indexed_line FROM transcript_files")
    return {row["session_id"]: int(row["indexed_line"]) for row in rows}


@pytest.fixture
def long_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    project = tmp_path / "projects" / "-home-dev-acme"
    turns = [
        ("user" if i % 2 else "assistant", f"Step {i}: " + "tuning the SQLite indexer budget " * 30)
        for i in range(12)
    ]
    monkeypatch.setattr(batches, "BACKFILL_MESSAGE_TOKENS", 600)
    return [write_transcript(project, SESSION, turns), write_transcript(project, OTHER, CONVERSATION)]


async def test_budget_stops_at_n_and_the_next_day_goes_on(
    cairn_home: Path, long_history: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = 3 * PER_RUN - PER_RUN // 2  # three runs fit under it, a fourth would start over it
    monkeypatch.setenv("CAIRN_DAILY_TOKEN_BUDGET", str(budget))
    settings = Settings.load(cairn_home)
    clock = Clock()
    choice = ModelChoice("function:budget", FunctionModel(one_idea_per_update), request_settings(settings))
    async with await Store.open(settings) as store:
        await sync_paths(store, long_history, settings, vectors=False)
        planned = await plan_batches(store.db)
        assert len(planned) >= 5, "the history needs more batches than one day's budget allows"

        first = await index_pending(store, settings, model=choice, now=clock)
        assert [run.outcome for run in first.runs] == [OK, OK, OK]
        spent = first.input_tokens + first.output_tokens
        assert budget <= spent < budget + PER_RUN, "stops at N, overrunning by at most one batch"
        state = await budget_state(store.db, settings, clock())
        assert (state.spent, state.limit, state.exhausted) == (spent, budget, True)
        _start, midnight = day_window(clock())
        assert first.paused_until == midnight == state.resets_at
        assert first.stopped == (
            f"daily indexing budget spent: {spent:,} of {budget:,} tokens today; indexing resumes after "
            "midnight (00:00 local) — raise daily_token_budget to go on now"
        )
        assert first.skipped_batches == len(planned) - 3
        # The batches not run kept their cursors: exactly the three run batches' messages are indexed.
        left = await plan_batches(store.db)
        assert [p.cursors[0].from_line for p in left] == [p.cursors[0].from_line for p in planned[3:]]
        moved = await cursors(store)
        assert moved[OTHER] == 0 and 0 < moved[SESSION] < 12

        # Same day: a new pass stops before its first batch, running nothing.
        again = await index_pending(store, settings, model=choice, now=clock)
        assert again.runs == [] and again.stopped == spent_line(state)

        # Past midnight: the rest is indexed, each batch once.
        clock.at = midnight.astimezone(UTC) + timedelta(hours=1)
        second = await index_pending(store, settings, model=choice, now=clock)
        assert second.stopped is None and len(second.runs) == len(planned) - 3
        assert all(run.ok for run in second.runs)
        assert await plan_batches(store.db) == []
        assert await cursors(store) == {SESSION: 12, OTHER: len(CONVERSATION)}
        ideas = await store.db.fetchall("SELECT source_file_id, source_line FROM ideas")
        assert len(ideas) == len(planned) == len({(r[0], r[1]) for r in ideas}), "no batch indexed twice"


async def test_offline_runs_do_not_count_and_offline_is_not_held(
    cairn_home: Path, long_history: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_DAILY_TOKEN_BUDGET", "1")
    settings = Settings.load(cairn_home)
    async with await Store.open(settings) as store:
        await sync_paths(store, long_history, settings, vectors=False)
        report = await index_pending(store, settings, model="offline")
        assert report.stopped is None and report.ok == report.batches > 0
        assert report.input_tokens > 0, "the offline model's estimate is recorded"
        assert (await budget_state(store.db, settings)).spent == 0


async def test_zero_turns_the_budget_off(
    cairn_home: Path, long_history: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_DAILY_TOKEN_BUDGET", "0")
    settings = Settings.load(cairn_home)
    choice = ModelChoice("function:budget", FunctionModel(one_idea_per_update), request_settings(settings))
    async with await Store.open(settings) as store:
        await sync_paths(store, long_history, settings, vectors=False)
        report = await index_pending(store, settings, model=choice)
        assert report.stopped is None and report.ok == report.batches
        state = await budget_state(store.db, settings)
        assert state.spent == report.batches * PER_RUN and not state.enabled and not state.exhausted


def test_the_day_is_local(monkeypatch: pytest.MonkeyPatch) -> None:
    """Midnight is the user's: with the clock at 23:30 local the reset is 30 minutes away."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        now = datetime(2026, 11, 28, 4, 30, tzinfo=UTC)  # 23:30 on the 27th in New York (UTC-5)
        start, end = day_window(now)
        assert start.astimezone(UTC) == datetime(2026, 11, 27, 5, 0, tzinfo=UTC)
        assert end - now == timedelta(minutes=30)
        state: Any = state_of(5_000, 2_000_000, now)
        assert budget_words(state) == "5,000 of 2,000,000 tokens today (0%); resets 00:00 local"
        assert not state.exhausted and state.remaining == 1_995_000
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


class RateLimited(ModelAPIError):
    """A model adapter's error: one clear line, and when the limit resets (or only `retry_after`)."""

    def __init__(self, resume_at: datetime | None, retry_after: float | None = None) -> None:
        message = "Claude usage limit reached\nresets at 15:00"
        super().__init__("claude-code:claude-haiku-4-5", message, retry_after=retry_after)
        self.resume_at = resume_at


@pytest.mark.parametrize("retry_after", [None, 30.0])
async def test_a_systemic_failure_carries_its_line_and_when_to_resume(
    cairn_home: Path, long_history: list[Path], retry_after: float | None
) -> None:
    """What the daemon's pause is built from: `systemic`, the error's own first line (`reason`), and
    `resume_at` from the error's attribute, else from its `retry_after` seconds."""
    settings = Settings.load(cairn_home)
    resets = None if retry_after else datetime.now(UTC) + timedelta(hours=2)

    def limited(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RateLimited(resets, retry_after)

    choice = ModelChoice("claude-code:claude-haiku-4-5", FunctionModel(limited), request_settings(settings))
    async with await Store.open(settings) as store:
        await sync_paths(store, long_history, settings, vectors=False)
        [planned, *_] = await plan_batches(store.db)
        before = datetime.now(UTC)
        run = await index_batch(store, planned, choice, settings)
    assert run.systemic and not run.ok and run.reason == "Claude usage limit reached"
    assert run.error is not None and run.error.startswith("RateLimited: Claude usage limit reached")
    if retry_after is None:
        assert run.resume_at == resets
    else:
        assert run.resume_at is not None
        assert before + timedelta(seconds=30) <= run.resume_at <= datetime.now(UTC) + timedelta(seconds=30)
