"""The home page's figures (`overview` op): totals that agree with `cairn stats`, per-project figures that
agree with `cairn projects`, open items as the board counts them, and ideas bucketed by when they were
said — not when they were indexed — in at most 60 bars; plus the feed's said times."""

from __future__ import annotations

from datetime import date
from typing import Any

import aiosqlite

from cairn.daemon.recall_drops import count_drop
from cairn.daemon.server import run_op
from cairn.search.browse import feed
from cairn.search.overview import INTENTS, MAX_BARS, bucket_start, buckets, choose_unit, next_bucket, overview
from cairn.store.memory import list_ideas, list_projects
from cairn.store.store import Store, message_hash
from tests.tools.memory import add_idea, insert

#: The index time every idea below shares unless it says otherwise: one backfill stored them all.
INDEXED = "2025-04-20T08:00:00.000Z"


async def _message(
    conn: aiosqlite.Connection, session: str, file_id: int, line: int, at: str | None, end: int | None = None
) -> None:
    text = f"line {line} of {session}"
    await conn.execute(
        "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, text, "
        "content_hash, timestamp) VALUES (?, ?, ?, ?, 0, 1, 'assistant', 'text', ?, ?, ?)",
        (session, file_id, line, end or line, text, message_hash("assistant", "text", text), at),
    )


async def _world(store: Store) -> dict[str, int]:
    """Two projects and a session with none; ideas said over five weeks, all stored at `INDEXED`."""
    ids: dict[str, int] = {}
    async with store.db.write() as conn:
        alpha = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/alpha', 'alpha')")
        beta = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/beta', 'beta')")
        sessions = [
            ("a1", alpha, "2025-03-01T09:00:00.000Z", "2025-03-01T11:00:00.000Z"),
            ("a2", alpha, "2025-03-20T09:00:00.000Z", "2025-03-21T10:00:00.000Z"),
            ("b1", beta, "2025-04-02T09:00:00.000Z", "2025-04-02T12:00:00.000Z"),
            ("loose", None, "2025-03-10T09:00:00.000Z", "2025-03-10T09:30:00.000Z"),
        ]
        files = {}
        for session, project, started, last in sessions:
            await conn.execute(
                "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
                (session, project, started, last),
            )
            files[session] = await insert(
                conn,
                "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)",
                (f"/t/{session}", session),
            )
        await _message(conn, "a1", files["a1"], 1, "2025-03-01T09:00:00.000Z")
        await _message(conn, "a1", files["a1"], 2, "2025-03-01T10:00:00.000Z")
        await _message(conn, "a1", files["a1"], 3, None)  # a summary line: no time
        await _message(conn, "a2", files["a2"], 1, "2025-03-20T09:00:00.000Z")
        await _message(conn, "a2", files["a2"], 10, "2025-03-21T10:00:00.000Z", end=14)  # five lines long
        await _message(conn, "b1", files["b1"], 1, "2025-04-02T09:00:00.000Z")
        await _message(conn, "loose", files["loose"], 1, "2025-03-10T09:00:00.000Z")

        def idea(name: str, session: str | None, intent: str, line: int, **columns: Any) -> Any:
            async def add() -> None:
                ids[name] = await add_idea(
                    conn,
                    session,  # type: ignore[arg-type]
                    intent,
                    f"{name}: an idea said in {session}",
                    line,
                    file_id=files[session] if session else None,
                    created_at=INDEXED,
                    **columns,
                )

            return add()

        await idea("decided", "a1", "decision", 1)
        await idea("asked", "a1", "question", 2)  # open
        await idea("undated", "a1", "context", 3)  # its message has no time
        await idea("answered", "a2", "question", 1, answered_at="2025-03-20T09:05:00.000Z")
        await idea("inside", "a2", "todo", 12)  # line 12 lies inside the message of lines 10-14: open
        await idea("done", "a2", "todo", 1, completed_at="2025-03-21T10:00:00.000Z")
        await idea("problem", "b1", "problem", 1)  # open
        await idea("replaced", "b1", "problem", 1)
        await idea("loose", "loose", "solution", 1)
        await idea("sessionless", None, "conclusion", 7)
        await conn.execute(
            "UPDATE ideas SET superseded_by = ? WHERE id = ?", (ids["problem"], ids["replaced"])
        )
        for idea_id, hit in (
            (ids["decided"], "2025-04-03T00:00:00.000Z"),
            (ids["asked"], None),
            (ids["done"], None),
        ):
            await conn.execute(
                "INSERT INTO recall_injections (session_id, idea_id, event, hit_at) VALUES ('cc', ?, "
                "'UserPromptSubmit', ?)",
                (idea_id, hit),
            )
        await conn.execute("INSERT INTO recall_injections (session_id, event) VALUES ('cc', 'SessionStart')")
    return ids


def _bucket(data: dict[str, Any], day: str) -> dict[str, Any]:
    for bucket in data["remembered"]["buckets"]:
        if bucket["start"] <= day <= bucket["end"]:
            return bucket
    raise AssertionError(f"no bucket holds {day}")


async def test_totals_agree_with_stats_and_projects_with_cairn_projects(store: Store) -> None:
    await _world(store)

    data = await overview(store)

    stats = await store.stats()
    totals = data["totals"]
    assert (totals["sessions"], totals["messages"], totals["ideas"]) == (
        stats.sessions,
        stats.messages,
        stats.ideas,
    )
    assert {k: v for k, v in totals["ideas_by_intent"].items() if v} == stats.ideas_by_intent
    assert totals["projects"] == stats.projects == 2
    listed = {p["path"]: p for p in await list_projects(store.db)}
    assert [p["path"] for p in data["projects"]] == list(listed)  # the same order: latest active first
    for project in data["projects"]:
        expected = listed[project["path"]]
        assert (project["sessions"], project["ideas"], project["open_questions"]) == (
            expected["sessions"],
            expected["ideas"],
            expected["open_questions"],
        )
        assert project["last_active"] == expected["last_active"]
    alpha = next(p for p in data["projects"] if p["name"] == "alpha")
    assert alpha["messages"] == 5
    assert alpha["ideas_by_intent"] == {
        "decision": 1,
        "conclusion": 0,
        "question": 2,
        "problem": 0,
        "solution": 0,
        "todo": 2,
        "context": 1,
    }
    # What no project holds is counted overall and shown apart.
    assert data["unassigned"] == {"sessions": 1, "messages": 1, "ideas": 2, "open_items": 0}


async def test_open_items_are_what_the_board_lists(store: Store) -> None:
    await _world(store)

    data = await overview(store)

    open_ideas = await list_ideas(store.db, open_only=True, limit=1000)
    questions = [i for i in open_ideas if i["intent"] in ("question", "problem")]
    todos = [i for i in open_ideas if i["intent"] == "todo"]
    totals = data["totals"]
    assert (totals["open_questions"], totals["open_todos"]) == (len(questions), len(todos)) == (2, 1)
    assert totals["open_items"] == 3
    by_name = {p["name"]: p for p in data["projects"]}
    assert (by_name["alpha"]["open_questions"], by_name["alpha"]["open_todos"]) == (1, 1)
    assert (by_name["beta"]["open_questions"], by_name["beta"]["open_items"]) == (1, 1)  # not the superseded


async def test_ideas_are_bucketed_by_when_they_were_said_not_when_indexed(store: Store) -> None:
    await _world(store)

    data = await overview(store)

    remembered = data["remembered"]
    assert remembered["unit"] == "day"  # 2025-03-01 .. 2025-04-20: 51 days
    starts = [b["start"] for b in remembered["buckets"]]
    assert starts == sorted(starts) and len(starts) == len(set(starts)) <= MAX_BARS
    # Every idea was stored on 2025-05-01, but they land on the days they were said.
    assert _bucket(data, "2025-03-01")["by_intent"]["decision"] == 1
    assert _bucket(data, "2025-03-01")["by_intent"]["question"] == 1
    assert _bucket(data, "2025-03-20")["by_intent"] == {**dict.fromkeys(INTENTS, 0), "question": 1, "todo": 1}
    # Line 12 is inside the message of lines 10-14: its time, not the index time.
    assert _bucket(data, "2025-03-21")["by_intent"]["todo"] == 1
    assert _bucket(data, "2025-04-02")["ideas"] == 2
    # The idea whose message has no time (and the one with no message) stand at their index time.
    assert remembered["undated"] == 2
    assert _bucket(data, INDEXED[:10])["ideas"] == 2
    assert sum(b["ideas"] for b in remembered["buckets"]) == data["totals"]["ideas"]
    for intent, n in data["totals"]["ideas_by_intent"].items():
        assert sum(b["by_intent"][intent] for b in remembered["buckets"]) == n
    assert remembered["top"] == max(b["ideas"] for b in remembered["buckets"])
    # Sessions by the day they started, messages by their own time.
    assert _bucket(data, "2025-03-10")["sessions"] == 1
    assert _bucket(data, "2025-03-01")["messages"] == 2
    assert _bucket(data, "2025-03-15") == {
        "start": "2025-03-15",
        "end": "2025-03-15",
        "ideas": 0,
        "by_intent": dict.fromkeys(INTENTS, 0),
        "sessions": 0,
        "messages": 0,
    }
    # Each project's ideas per bucket, on the same buckets.
    alpha = next(p for p in data["projects"] if p["name"] == "alpha")
    assert len(alpha["remembered"]) == len(starts)
    assert sum(alpha["remembered"]) == alpha["ideas"]
    assert alpha["remembered"][starts.index("2025-03-21")] == 1


async def test_a_long_history_is_drawn_in_weeks_or_months(store: Store) -> None:
    await _world(store)
    async with store.db.write() as conn:
        await add_idea(conn, "a1", "decision", "said long before", 99, said_at="2023-11-20T10:00:00.000Z")

    data = await overview(store)

    assert data["remembered"]["unit"] == "month"
    assert data["remembered"]["buckets"][0]["start"] == "2023-11-01"
    assert len(data["remembered"]["buckets"]) <= MAX_BARS
    assert _bucket(data, "2023-11-20")["ideas"] == 1
    assert sum(b["ideas"] for b in data["remembered"]["buckets"]) == data["totals"]["ideas"]


def test_the_unit_is_the_finest_that_fits() -> None:
    assert choose_unit(date(2025, 1, 1), date(2025, 3, 1)) == "day"  # 60 days
    assert choose_unit(date(2025, 1, 1), date(2025, 3, 2)) == "week"
    assert choose_unit(date(2025, 1, 1), date(2026, 1, 31)) == "week"
    assert choose_unit(date(2025, 1, 1), date(2029, 12, 31)) == "month"  # 60 months
    assert choose_unit(date(2015, 1, 1), date(2025, 1, 1)) == "year"
    weeks = buckets(date(2025, 9, 3), date(2025, 9, 22), "week")
    assert weeks[0] == (date(2025, 9, 1), date(2025, 9, 7))  # weeks start on Monday
    assert weeks[-1] == (date(2025, 9, 22), date(2025, 9, 28))
    assert next_bucket(date(2025, 12, 1), "month") == date(2026, 1, 1)
    assert bucket_start(date(2025, 12, 31), "year") == date(2025, 1, 1)


async def test_the_op_adds_recalls_drops(store: Store) -> None:
    await _world(store)
    count_drop(str(store.settings.home), "UserPromptSubmit", "late", 300)
    count_drop(str(store.settings.home), "SessionStart", "no_daemon", 300)

    data = await run_op(store, "overview", {})

    recall = data["recall"]
    assert (recall["injections"], recall["hits"], recall["hit_rate"]) == (3, 1, round(1 / 3, 4))
    assert recall["drops"] == 2
    assert recall["drops_by_reason"] == {"late": 1, "failed": 0, "no_daemon": 1}
    assert recall["last_drop"]["reason"] == "no_daemon"
    stats = await run_op(store, "stats", {})
    assert (stats["recall_injections"], stats["recall_hits"], stats["recall_drops"]) == (3, 1, 2)


async def test_the_last_failed_run_is_reported(store: Store) -> None:
    async with store.db.write() as conn:
        for outcome, error in (
            ("failed", "the model refused"),
            ("ok", None),
            ("tool_budget", None),
            (None, None),
        ):
            await conn.execute(
                "INSERT INTO index_runs (model, prompt_version, mode, outcome, error) "
                "VALUES ('m', 'v', 'continuous', ?, ?)",
                (outcome, error),
            )

    data = await overview(store)

    failed = data["last_failed_run"]
    assert (failed["outcome"], failed["error"]) == ("failed", "the model refused")


async def test_an_empty_store(store: Store) -> None:
    data = await overview(store)

    assert data["totals"]["ideas"] == data["totals"]["sessions"] == data["totals"]["messages"] == 0
    assert data["projects"] == [] and data["unassigned"] is None
    assert data["remembered"]["buckets"] == [] and data["remembered"]["top"] == 0
    assert data["last_failed_run"] is None


async def test_the_feed_says_when_each_idea_was_said(store: Store) -> None:
    ids = await _world(store)

    events = await feed(store, limit=50)

    said = {e["id"]: e for e in events if e["type"] == "idea"}
    decided = said[str(ids["decided"])]
    assert decided["at"] == INDEXED  # the feed's order: when it was stored
    assert decided["said_at"] == "2025-03-01T09:00:00.000Z"


async def test_the_listed_ideas_say_when_they_were_said_or_none(store: Store) -> None:
    """`cairn ideas` and the Board show an idea's said time: its source message's, and None where the
    store could only fall back to the index time (a line with no time) — never the index time as said."""
    ids = await _world(store)

    listed = {i["id"]: i for i in await list_ideas(store.db, limit=1000)}

    assert listed[ids["decided"]]["said_at"] == "2025-03-01T09:00:00.000Z"
    assert listed[ids["undated"]]["said_at"] is None
    assert listed[ids["undated"]]["created_at"] == INDEXED
