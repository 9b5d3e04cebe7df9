"""The home and health pages rendered in process over a real store: what the daemon panel says about a
batch in progress, parked and retrying transcripts and the last failed run; the chart's geometry; and
no raw keys or Python values on the health page. (`test_home.py` drives the same pages in Chromium.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cairn.config import Settings
from cairn.daemon.pause import MODEL, Pause, write_pause
from cairn.store.store import Store, iso_utc
from cairn.store.vectors import VectorIndex
from cairn.ui.app import create_app
from cairn.ui.views.home import MAX_LABELS, daemon_now, remembered_chart

TOKEN = "t" * 43
HOSTILE = "<script>alert(1)</script>"


async def _troubles(settings: Settings, embedding_function: Any) -> None:
    """A queue with a parked and a retrying transcript, a failed run, a finished one and one in progress."""
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        soon = iso_utc(datetime.now(UTC) + timedelta(minutes=5))
        async with store.db.write() as conn:
            await conn.execute(
                "INSERT INTO work_queue (path, status, attempts, last_error) VALUES (?, 'parked', 5, ?)",
                ("/t/parked.jsonl", f"the model refused {HOSTILE}"),
            )
            await conn.execute(
                "INSERT INTO work_queue (path, status, attempts, next_try_at, last_error) "
                "VALUES ('/t/retrying.jsonl', 'pending', 2, ?, 'rate limited')",
                (soon,),
            )
            for outcome, error in (("failed", "output did not validate"), ("ok", None), (None, None)):
                await conn.execute(
                    "INSERT INTO index_runs (model, prompt_version, mode, outcome, error, input_tokens, "
                    "output_tokens) VALUES ('anthropic:claude-haiku-4-5', 'v1', 'continuous', "
                    "?, ?, 12345, 678)",
                    (outcome, error),
                )
    finally:
        await store.close()


@pytest.fixture
def client(settings: Settings, embedding_function: Any) -> Iterator[TestClient]:
    asyncio.run(_troubles(settings, embedding_function))
    app = create_app(settings, token=TOKEN, port=8377)
    with TestClient(app, base_url="http://127.0.0.1:8377", headers={"x-cairn-token": TOKEN}) as started:
        yield started


def test_the_daemon_panel_says_what_runs_and_what_went_wrong(client: TestClient) -> None:
    page = client.get("/")

    assert page.status_code == 200
    html = page.text
    assert 'id="empty-memory"' in html  # no session yet: the page says how to fill the memory
    doing = html.split('id="daemon-doing">', 1)[1].split("</dd>", 1)[0]
    assert "indexing: run #3" in doing and "continuous" in doing
    last = html.split('id="daemon-last-run">', 1)[1].split("</dd>", 1)[0]
    assert last.startswith("#2 ") and "12.3K in / 678 out tokens" in last
    problems = html.split('id="daemon-problems">', 1)[1].split("</ul>", 1)[0]
    assert "/t/parked.jsonl" in problems and "after 5 attempts" in problems
    assert "the model refused &lt;script&gt;alert(1)&lt;/script&gt;" in problems
    assert HOSTILE not in html
    assert "/t/retrying.jsonl" in problems and "rate limited" in problems and "in 4 min" in problems
    assert "last failed run</b> #1 (failed" in problems and "output did not validate" in problems
    queue = html.split('id="daemon-queue">', 1)[1].split("</dd>", 1)[0]
    assert 'data-queue="parked" data-value="1"' in queue and 'data-queue="pending" data-value="1"' in queue


def test_the_health_page_has_no_raw_keys(client: TestClient) -> None:
    page = client.get("/health")

    assert page.status_code == 200
    for raw in ("db size bytes", "db_size_bytes", "True", "False", "None", ">enabled<"):
        assert raw not in page.text, raw
    assert "Switched on</dt><dd>yes" in page.text
    assert "the model refused &lt;script&gt;" in page.text and HOSTILE not in page.text


def test_the_daemon_panel_and_health_page_say_indexing_is_paused_and_the_budget(
    cairn_home: Path, embedding_function: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded pause shows as its one line (escaped), and today's tokens against the daily budget
    in words: the three runs of `_troubles` spent 3 times (12,345 + 678) tokens of a model the budget
    holds."""
    monkeypatch.setenv("CAIRN_MODEL", "anthropic:claude-haiku-4-5")
    settings = Settings.load(cairn_home)
    asyncio.run(_troubles(settings, embedding_function))
    now = datetime.now(UTC)
    write_pause(
        settings.home,
        Pause(
            kind=MODEL,
            reason=f"Claude Code is not logged in {HOSTILE}",
            model="anthropic:claude-haiku-4-5",
            since=now - timedelta(minutes=10),
            until=now + timedelta(minutes=5),
            last_failure=now + timedelta(minutes=1),  # after every run above: the pause still holds
            failures=3,
        ),
    )
    app = create_app(settings, token=TOKEN, port=8377)
    with TestClient(app, base_url="http://127.0.0.1:8377", headers={"x-cairn-token": TOKEN}) as client:
        home, health = client.get("/").text, client.get("/health").text
    pause = home.split('id="daemon-pause"', 1)[1].split("</dd>", 1)[0]
    assert "indexing paused: Claude Code is not logged in &lt;script&gt;" in pause and "; resumes " in pause
    assert "capture goes on" in pause and HOSTILE not in home
    budget = home.split('id="daemon-budget"', 1)[1].split("</dd>", 1)[0]
    assert "39,069 of 2,000,000 tokens today (2%); resets 00:00 local" in budget
    assert "indexing paused: Claude Code is not logged in &lt;script&gt;" in health and HOSTILE not in health
    assert "39,069 of 2,000,000 tokens today" in health.split('id="health-budget">', 1)[1]


def _status(runs: list[dict[str, Any]], running: bool) -> dict[str, Any]:
    return {
        "daemon": {
            "running": running,
            "pid": 42 if running else None,
            "uptime_seconds": 60.0 if running else None,
        },
        "queue": {"pending": 0, "running": 0, "parked": 0, "done": 3},
        "recent_runs": runs,
        "parked": [],
        "retrying": [],
    }


def _run(run_id: int, outcome: str | None, started: datetime) -> dict[str, Any]:
    return {
        "id": run_id,
        "started_at": iso_utc(started),
        "model": "m",
        "mode": "continuous",
        "outcome": outcome,
        "input_tokens": 1,
        "output_tokens": 1,
        "ideas_applied": 0,
        "error": None,
    }


def test_a_run_without_outcome_is_the_current_batch_unless_it_was_interrupted() -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    fresh = [_run(5, None, now - timedelta(seconds=30)), _run(4, "ok", now - timedelta(minutes=3))]
    old = [_run(5, None, now - timedelta(hours=3)), _run(4, "ok", now - timedelta(hours=4))]

    busy = daemon_now(_status(fresh, running=False), None, now)  # a `cairn backfill` runs without a daemon
    assert busy["current"]["id"] == 5 and not busy["interrupted"] and busy["busy"]
    assert busy["last"]["id"] == 4
    stale = daemon_now(_status(old, running=False), None, now)
    assert stale["interrupted"] and not stale["busy"]
    assert not daemon_now(_status(old, running=True), None, now)["interrupted"]  # a long batch, still going
    idle = daemon_now(_status([_run(4, "ok", now)], running=True), None, now)
    assert idle["current"] is None and not idle["busy"]


def _bucket(start: str, end: str, **by_intent: int) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "ideas": sum(by_intent.values()),
        "by_intent": by_intent,
        "sessions": 1,
        "messages": 10,
    }


def test_the_chart_stacks_intents_on_a_round_scale() -> None:
    days = [f"2025-09-{d:02d}" for d in range(1, 31)]
    buckets = [_bucket(d, d) for d in days]
    buckets[2] = _bucket(days[2], days[2], decision=3, problem=4)
    buckets[20] = _bucket(days[20], days[20], todo=1)

    chart = remembered_chart({"unit": "day", "buckets": buckets})

    assert len(chart["bars"]) == 30 and chart["top"] == 8  # 7 rounded up to a figure with a whole half
    tall = chart["bars"][2]
    assert [s["intent"] for s in tall["segments"]] == ["decision", "problem"]  # INTENTS order, bottom up
    assert tall["segments"][0]["y"] > tall["segments"][1]["y"]
    height = chart["base"] - tall["segments"][1]["y"]
    assert height == pytest.approx(7 / 8 * (chart["base"] - 12), abs=0.2)
    assert tall["title"] == "3 Sep 2025: 7 ideas (3 decision, 4 problem) · 1 session started · 10 messages"
    assert chart["bars"][0]["segments"] == [] and chart["bars"][0]["title"].startswith("1 Sep 2025: 0 ideas")
    assert 1 < len(chart["labels"]) <= MAX_LABELS
    assert chart["labels"][0]["text"] == "1 Sep 2025" and chart["labels"][1]["text"] == "5 Sep"
    assert [t["text"] for t in chart["ticks"]] == ["0", "4", "8"]
    assert remembered_chart({"unit": "day", "buckets": []})["bars"] == []


def test_week_and_month_buckets_are_named_as_people_say_them() -> None:
    weeks = remembered_chart({"unit": "week", "buckets": [_bucket("2025-09-29", "2025-10-05", context=2)]})
    assert weeks["bars"][0]["title"].startswith("29 Sep \u2013 5 Oct 2025: 2 ideas")
    months = remembered_chart(
        {
            "unit": "month",
            "buckets": [_bucket("2025-12-01", "2025-12-31"), _bucket("2026-01-01", "2026-01-31")],
        }
    )
    assert months["bars"][1]["title"].startswith("January 2026: 0 ideas")
    assert [label["text"] for label in months["labels"]] == ["Dec 2025", "Jan 2026"]


def test_every_figure_the_health_page_claims_to_label_it_shows() -> None:
    """A key in `LABELLED_STATS`/`LABELLED_LEARNER` is left out of "Other figures": the template must
    show it, or it would vanish from the page unseen."""
    from importlib import resources

    from cairn.ui.views.home import LABELLED_LEARNER, LABELLED_STATS

    template = resources.files("cairn.ui").joinpath("templates", "health.html").read_text(encoding="utf-8")
    missing = [f"stats.{k}" for k in LABELLED_STATS if f"stats.{k}" not in template]
    missing += [f"learner.{k}" for k in LABELLED_LEARNER if f"learner.{k}" not in template]
    assert missing == []
