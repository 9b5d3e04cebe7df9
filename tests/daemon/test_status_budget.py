"""`cairn status` and `cairn stats` on the daily token budget and the daemon's indexing pause.

The store is written by hand: runs of a paid model today (local day), one yesterday, one of the offline
model, and a pause file as the daemon records it. What must hold: the budget is shown whenever one
applies (spent / limit today, when it resets), the pause as its one line while it holds, in the table
and in `--json`, and a pause the store shows to be over (a run of its model applied since, a new day
for a budget pause) is not shown, even with the daemon stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cairn.agent.budget import day_window
from cairn.cli import app
from cairn.config import Settings
from cairn.daemon.pause import BUDGET, MODEL, Pause, write_pause
from cairn.daemon.status import read_status
from cairn.store.store import Store, iso_utc

MODEL_NAME = "anthropic:claude-haiku-4-5"
RUN = (
    "INSERT INTO index_runs (started_at, model, prompt_version, mode, input_tokens, output_tokens, outcome) "
    "VALUES (?, ?, 'v1', 'continuous', ?, ?, ?)"
)


@pytest.fixture
def budgeted(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, datetime]:
    """A store with 1,100 + 2,200 tokens of a paid model spent today under a budget of 3,000."""
    monkeypatch.setenv("CAIRN_MODEL", MODEL_NAME)
    monkeypatch.setenv("CAIRN_DAILY_TOKEN_BUDGET", "3000")
    settings = Settings.load(cairn_home)
    now = datetime.now(UTC)
    midnight = day_window(now)[0]

    async def create() -> None:
        await (await Store.open(settings)).close()

    asyncio.run(create())
    with contextlib.closing(sqlite3.connect(settings.db_path)) as conn, conn:
        conn.executemany(
            RUN,
            [
                (iso_utc(midnight - timedelta(seconds=1)), MODEL_NAME, 50_000, 5_000, "ok"),  # yesterday
                (iso_utc(midnight), MODEL_NAME, 1_000, 100, "failed"),
                (iso_utc(midnight + timedelta(seconds=1)), MODEL_NAME, 2_000, 200, "ok"),
                (iso_utc(midnight + timedelta(seconds=2)), "offline", 9_000, 900, "ok"),  # free
            ],
        )
    return settings, now


def test_status_shows_the_budget_spent_and_the_budget_pause(budgeted: tuple[Settings, datetime]) -> None:
    settings, now = budgeted
    state = read_status(settings, now=now)
    assert state.budget is not None and state.pause is None
    _start, reset = day_window(now)
    assert (state.budget.spent, state.budget.limit, state.budget.remaining) == (3_300, 3_000, 0)
    assert state.budget.exhausted and state.budget.resets_at == reset.isoformat(timespec="seconds")
    assert (
        state.budget.words == "3,300 of 3,000 tokens today (110%): spent, indexing waits; resets 00:00 local"
    )

    line = (
        "daily indexing budget spent: 3,300 of 3,000 tokens today; indexing resumes after midnight "
        "(00:00 local) — raise daily_token_budget to go on now"
    )
    write_pause(
        settings.home,
        Pause(
            kind=BUDGET, reason=line, model=MODEL_NAME, since=now, until=reset, last_failure=now, failures=0
        ),
    )
    runner = CliRunner()
    result = runner.invoke(app, ["status", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["pause"]["kind"] == "budget" and data["pause"]["reason"] == line
    assert data["pause"]["line"] == f"indexing paused: {line}", "the time is said once"
    assert data["budget"]["spent"] == 3_300 and data["budget"]["exhausted"] is True

    table = runner.invoke(app, ["status"], env={"COLUMNS": "400"})
    assert table.exit_code == 0, table.output
    assert f"indexing paused: {line}" in table.stdout and "; resumes" not in table.stdout
    [budget_row] = [
        row for row in table.stdout.splitlines() if "indexing budget" in row and "paused" not in row
    ]
    assert "3,300 of 3,000 tokens today (110%): spent, indexing waits; resets 00:00 local" in budget_row

    # The next day the budget pause is over, whatever the file says: the daemon may be stopped.
    tomorrow = read_status(settings, now=reset.astimezone(UTC) + timedelta(hours=1))
    assert tomorrow.pause is None and tomorrow.budget is not None and tomorrow.budget.spent == 0


def test_a_model_pause_shows_until_a_run_of_its_model_is_applied(budgeted: tuple[Settings, datetime]) -> None:
    settings, now = budgeted
    reason = "ModelHTTPError: status_code: 401, model_name: claude-haiku-4-5, body: invalid x-api-key"
    pause = Pause(
        kind=MODEL,
        reason=reason,
        model=MODEL_NAME,
        since=now - timedelta(minutes=30),
        until=now + timedelta(minutes=8),
        last_failure=now - timedelta(minutes=2),
        failures=5,
    )
    write_pause(settings.home, pause)
    state = read_status(settings, now=now)
    assert state.pause is not None
    assert state.pause.line == f"indexing paused: {reason}; resumes {pause.until.astimezone():%H:%M} local"

    with contextlib.closing(sqlite3.connect(settings.db_path)) as conn, conn:  # another model's run: no
        conn.execute(RUN, (iso_utc(now - timedelta(minutes=1)), "offline", 10, 1, "ok"))
    assert read_status(settings, now=now).pause is not None
    with contextlib.closing(sqlite3.connect(settings.db_path)) as conn, conn:  # its own model's: over
        conn.execute(RUN, (iso_utc(now - timedelta(minutes=1)), MODEL_NAME, 10, 1, "ok"))
    assert read_status(settings, now=now).pause is None


def test_stats_show_todays_tokens_against_the_budget_and_the_pause(
    budgeted: tuple[Settings, datetime],
) -> None:
    settings, now = budgeted
    write_pause(
        settings.home,
        Pause(
            kind=MODEL,
            reason="Claude Code is not logged in: run `claude` and log in",
            model=MODEL_NAME,
            since=now,
            until=now + timedelta(minutes=1),
            last_failure=now + timedelta(seconds=5),
        ),
    )
    runner = CliRunner()
    result = runner.invoke(app, ["stats", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    today = data["indexing_today"]
    assert (today["spent"], today["limit"], today["exhausted"], today["applies"]) == (
        3_300,
        3_000,
        True,
        True,
    )
    assert data["indexing_paused"].startswith(
        "indexing paused: Claude Code is not logged in: run `claude` and log in; resumes "
    )
    table = runner.invoke(app, ["stats"], env={"COLUMNS": "400"})
    assert table.exit_code == 0, table.output
    [row] = [line for line in table.stdout.splitlines() if "indexing today" in line]
    assert "3,300 of 3,000 tokens today (110%): spent, indexing waits" in row
    assert "indexing paused: Claude Code is not logged in" in table.stdout


def test_offline_has_no_budget_in_status_and_says_so_in_stats(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    settings = Settings.load(cairn_home)

    async def create() -> None:
        await (await Store.open(settings)).close()

    asyncio.run(create())
    assert read_status(settings).budget is None
    table = CliRunner().invoke(app, ["stats"], env={"COLUMNS": "400"})
    assert table.exit_code == 0, table.output
    assert "0 tokens today (the offline model indexes: no budget applies)" in table.stdout
