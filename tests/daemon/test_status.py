"""`cairn status` read from a store written by hand: what it counts, what "today" means, no store at all."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from datetime import UTC, datetime

from typer.testing import CliRunner

from cairn.cli import app
from cairn.config import Settings
from cairn.daemon.status import read_status
from cairn.store.store import Store

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
RUN = (
    "INSERT INTO index_runs (started_at, model, prompt_version, mode, input_tokens, output_tokens, outcome, "
    "error, applied) VALUES (?, ?, 'v1', 'continuous', ?, ?, ?, ?, ?)"
)


def _store(settings: Settings) -> None:
    async def create() -> None:
        await (await Store.open(settings)).close()

    asyncio.run(create())
    with contextlib.closing(sqlite3.connect(settings.db_path)) as conn, conn:
        conn.executemany(
            "INSERT INTO work_queue (path, status, attempts, next_try_at, last_error) VALUES (?, ?, ?, ?, ?)",
            [
                ("/p/a.jsonl", "pending", 0, None, None),
                ("/p/b.jsonl", "pending", 2, "2026-03-04T12:05:00.000Z", "FAILED: 500"),
                ("/p/c.jsonl", "running", 0, None, None),
                ("/p/d.jsonl", "parked", 5, None, "ModelHTTPError: status_code: 400"),
                ("/p/e.jsonl", "done", 0, None, None),
            ],
        )
        conn.executemany(
            RUN,
            [
                # Yesterday's run counts among the recent runs but not in today's spend.
                (
                    "2026-03-03T23:59:59.999Z",
                    "offline",
                    900,
                    90,
                    "ok",
                    None,
                    '{"ideas_by_intent": {"todo": 7}}',
                ),
                ("2026-03-04T00:00:00.000Z", "anthropic:claude-haiku-4-5", 1000, 100, "failed", "boom", "{}"),
                (
                    "2026-03-04T11:00:00.000Z",
                    "anthropic:claude-haiku-4-5",
                    2000,
                    200,
                    "ok",
                    None,
                    '{"ideas_by_intent": {"decision": 2, "todo": 1}}',
                ),
            ],
        )


def test_status_without_a_store_says_so(settings: Settings) -> None:
    state = read_status(settings)
    assert not state.store and not state.daemon.running and state.today is None and state.error is None
    result = CliRunner().invoke(app, ["status"])
    assert result.exit_code == 0 and "no cairn store" in result.stdout
    assert not settings.db_path.exists(), "status never creates the store"


def test_status_reads_queue_parked_runs_and_todays_spend(settings: Settings) -> None:
    _store(settings)
    state = read_status(settings, recent=2, now=NOW)
    assert state.error is None and state.store
    assert state.queue == {"pending": 2, "running": 1, "parked": 1, "done": 1} and state.depth == 3
    [parked] = state.parked
    assert (parked.path, parked.attempts, parked.last_error) == (
        "/p/d.jsonl",
        5,
        "ModelHTTPError: status_code: 400",
    )
    [retrying] = state.retrying
    assert (retrying.path, retrying.attempts, retrying.next_try_at) == (
        "/p/b.jsonl",
        2,
        "2026-03-04T12:05:00.000Z",
    )
    assert [(r.outcome, r.ideas_applied) for r in state.recent_runs] == [("ok", 3), ("failed", 0)]
    assert state.today is not None
    assert (state.today.date, state.today.runs, state.today.failed_runs) == ("2026-03-04", 2, 1)
    assert (state.today.input_tokens, state.today.output_tokens) == (3000, 300)
    assert (state.ideas, state.messages) == (0, 0)


def test_status_json_and_table(settings: Settings) -> None:
    _store(settings)
    runner = CliRunner()
    result = runner.invoke(app, ["status", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["daemon"]["running"] is False and data["depth"] == 3
    assert [item["path"] for item in data["parked"]] == ["/p/d.jsonl"]
    assert len(data["recent_runs"]) == 3

    table = runner.invoke(app, ["status"], env={"COLUMNS": "300"})
    assert table.exit_code == 0, table.output
    assert (
        "not running" in table.stdout and "/p/d.jsonl" in table.stdout and "status_code: 400" in table.stdout
    )
    assert "3 waiting" in table.stdout and "recent index runs" in table.stdout


def test_status_reads_while_the_store_is_locked(settings: Settings) -> None:
    """The daemon holds the store lock for its whole life; status must not need it."""
    _store(settings)

    async def locked() -> int:
        store = await Store.open(settings)
        try:
            return read_status(settings, now=NOW).depth
        finally:
            await store.close()

    assert asyncio.run(locked()) == 3
