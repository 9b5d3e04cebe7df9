"""`overview`: the figures of the viewer's home page — what the memory holds overall and per project, and
how it grew, by the time things were *said*.

A backfill indexes months of transcripts in minutes, so the time an idea was stored says nothing about
the work; the time its source message was written does. Ideas are therefore dated by `said_at` (the
source message's timestamp, which an insert trigger fills in), by the timestamp of the message whose
lines hold the idea when that trigger found no message starting at its line, and by the index time
only when neither exists — those are counted in `remembered.undated`, so the chart never hides them.

"Open" is the one definition every face uses (`cairn.store.open_ideas`): the home page counts what
the `open_questions` op, `cairn projects`, the board and recall list.

Everything is read in a few grouped queries — the ideas table once, the messages through their
`(session_id, timestamp)` index, the sessions once — and folded in Python, so a store of 10K ideas and
100K messages answers in tens of milliseconds.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from cairn.search.errors import SearchError
from cairn.store.injections import stats as recall_stats
from cairn.store.open_ideas import OPEN_QUESTION, OPEN_TODO

if TYPE_CHECKING:
    from cairn.store.store import Store

INTENTS = ("decision", "conclusion", "question", "problem", "solution", "todo", "context")
#: Bucket sizes, finest first: the finest that keeps the chart within `MAX_BARS` bars is used.
UNITS = ("day", "week", "month", "year")
MAX_BARS = 60
MAX_PROJECTS = 500

#: When an idea was said: its `said_at` unless that is only its index time (the trigger found no
#: message starting at its source line), else the message whose lines hold that line; NULL when
#: neither says (then the index time stands in, counted as undated).
_SAID = """
    CASE WHEN i.said_at IS NOT NULL AND i.said_at <> i.created_at THEN i.said_at
         ELSE (SELECT m.timestamp FROM messages AS m
               WHERE m.file_id = i.source_file_id AND m.line <= i.source_line
                 AND m.end_line >= i.source_line AND m.timestamp IS NOT NULL
               ORDER BY m.line DESC LIMIT 1)
    END
"""

_IDEAS = f"""
    SELECT project, intent, substr(coalesce(said, created_at), 1, 10) AS day, count(*) AS n,
           sum(open_question) AS open_questions, sum(open_todo) AS open_todos,
           sum(said IS NULL) AS undated
    FROM (
        SELECT se.project_id AS project, i.intent, i.created_at, {_SAID} AS said,
               {OPEN_QUESTION} AS open_question, {OPEN_TODO} AS open_todo
        FROM ideas AS i LEFT JOIN sessions AS se ON se.id = i.session_id
    )
    GROUP BY project, intent, day
"""

# Grouped per session first, through the covering (session_id, timestamp) index, then per project.
_MESSAGES = """
    SELECT se.project_id AS project, g.day, sum(g.n) AS n
    FROM (SELECT session_id, substr(timestamp, 1, 10) AS day, count(*) AS n
          FROM messages GROUP BY session_id, day) AS g
    LEFT JOIN sessions AS se ON se.id = g.session_id
    GROUP BY se.project_id, g.day
"""

_SESSIONS = """
    SELECT project_id AS project, substr(started_at, 1, 10) AS day, count(*) AS n, max(last_at) AS last_at
    FROM sessions GROUP BY project_id, day
"""

_LAST_FAILED_RUN = """
    SELECT id, started_at, finished_at, model, mode, outcome, error FROM index_runs
    WHERE outcome IS NOT NULL AND outcome NOT IN ('ok', 'tool_budget') ORDER BY id DESC LIMIT 1
"""


def _day(text: Any) -> date | None:
    """The date of a stored `YYYY-MM-DD...` timestamp's first ten characters; None for anything else."""
    try:
        return date.fromisoformat(str(text)) if text is not None and len(str(text)) == 10 else None
    except ValueError:
        return None


def bucket_start(day: date, unit: str) -> date:
    """The first day of the `unit` (day, week from Monday, month, year) that holds `day`."""
    if unit == "day":
        return day
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    return day.replace(month=1, day=1)


def next_bucket(start: date, unit: str) -> date:
    if unit == "day":
        return start + timedelta(days=1)
    if unit == "week":
        return start + timedelta(days=7)
    if unit == "month":
        return date(start.year + start.month // 12, start.month % 12 + 1, 1)
    return date(start.year + 1, 1, 1)


def _bars(first: date, last: date, unit: str) -> int:
    if unit == "day":
        return (last - first).days + 1
    if unit == "week":
        return (bucket_start(last, unit) - bucket_start(first, unit)).days // 7 + 1
    if unit == "month":
        return (last.year - first.year) * 12 + last.month - first.month + 1
    return last.year - first.year + 1


def choose_unit(first: date, last: date, max_bars: int = MAX_BARS) -> str:
    """The finest bucket size that draws `first`..`last` in at most `max_bars` bars (years, past that)."""
    for unit in UNITS:
        if _bars(first, last, unit) <= max_bars:
            return unit
    return UNITS[-1]


def buckets(first: date, last: date, unit: str) -> list[tuple[date, date]]:
    """Every bucket from `first`'s to `last`'s, empty ones included: (first day, last day)."""
    out = []
    start = bucket_start(first, unit)
    while start <= last:
        following = next_bucket(start, unit)
        out.append((start, following - timedelta(days=1)))
        start = following
    return out


def _project_row(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "path": row["path"],
        "sessions": 0,
        "messages": 0,
        "ideas": 0,
        "ideas_by_intent": dict.fromkeys(INTENTS, 0),
        "open_questions": 0,
        "open_todos": 0,
        "open_items": 0,
        "last_active": None,
    }


async def overview(store: Store, *, limit: int = 100) -> dict[str, Any]:
    """Overall and per project (the `limit` most recently active): sessions, messages, ideas by intent,
    open items; ideas remembered over time by when they were said (`remembered`: at most `MAX_BARS`
    buckets of a day, week, month or year, each with ideas by intent, sessions started and messages);
    recall's injections and hits; the last failed indexing run."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PROJECTS:
        raise SearchError(f"bad arguments: limit must be a whole number from 1 to {MAX_PROJECTS}")
    db = store.db
    projects = {
        row["id"]: _project_row(row) for row in await db.fetchall("SELECT id, name, path FROM projects")
    }
    # Sessions, messages or ideas with no project (a session without a cwd, an idea without a session).
    loose = _project_row({"id": None, "name": None, "path": None})
    totals = _project_row({"id": None, "name": None, "path": None})

    def owner(project_id: Any) -> dict[str, Any]:
        return projects.get(project_id, loose)

    ideas_by_day: dict[date, dict[str, int]] = defaultdict(lambda: dict.fromkeys(INTENTS, 0))
    project_days: dict[Any, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    undated = 0
    for row in await db.fetchall(_IDEAS):
        n, intent = int(row["n"]), str(row["intent"])
        for target in (owner(row["project"]), totals):
            target["ideas"] += n
            target["ideas_by_intent"][intent] = target["ideas_by_intent"].get(intent, 0) + n
            target["open_questions"] += int(row["open_questions"] or 0)
            target["open_todos"] += int(row["open_todos"] or 0)
        undated += int(row["undated"] or 0)
        day = _day(row["day"])
        if day is not None:
            ideas_by_day[day][intent] = ideas_by_day[day].get(intent, 0) + n
            project_days[row["project"]][day] += n
    messages_by_day: dict[date, int] = defaultdict(int)
    for row in await db.fetchall(_MESSAGES):
        n = int(row["n"])
        owner(row["project"])["messages"] += n
        totals["messages"] += n
        if (day := _day(row["day"])) is not None:
            messages_by_day[day] += n
    sessions_by_day: dict[date, int] = defaultdict(int)
    for row in await db.fetchall(_SESSIONS):
        n = int(row["n"])
        for target in (owner(row["project"]), totals):
            target["sessions"] += n
            if row["last_at"] is not None and (target["last_active"] or "") < row["last_at"]:
                target["last_active"] = row["last_at"]
        if (day := _day(row["day"])) is not None:
            sessions_by_day[day] += n
    for entry in (*projects.values(), loose, totals):
        entry["open_items"] = entry["open_questions"] + entry["open_todos"]

    remembered = _remembered(ideas_by_day, sessions_by_day, messages_by_day, project_days)
    # As `cairn projects` lists them: most recently active first, then by name (a stable sort, twice).
    listed = sorted(projects.values(), key=lambda p: p["name"])
    listed.sort(key=lambda p: p["last_active"] or "", reverse=True)
    listed = listed[:limit]
    for project in listed:
        project["remembered"] = remembered["per_project"].get(project["id"], [])
    failed = await db.fetchone(_LAST_FAILED_RUN)
    return {
        "totals": {
            "projects": len(projects),
            **{k: totals[k] for k in ("sessions", "messages", "ideas", "ideas_by_intent")},
            **{k: totals[k] for k in ("open_questions", "open_todos", "open_items", "last_active")},
        },
        "projects": listed,
        "projects_total": len(projects),
        "unassigned": {k: loose[k] for k in ("sessions", "messages", "ideas", "open_items")}
        if loose["sessions"] or loose["messages"] or loose["ideas"]
        else None,
        "remembered": {
            "unit": remembered["unit"],
            "buckets": remembered["buckets"],
            "top": max((b["ideas"] for b in remembered["buckets"]), default=0),
            "undated": undated,
        },
        "recall": await recall_stats(db),
        "last_failed_run": None if failed is None else dict(failed),
    }


def _remembered(
    ideas: dict[date, dict[str, int]],
    sessions: dict[date, int],
    messages: dict[date, int],
    per_project: dict[Any, dict[date, int]],
) -> dict[str, Any]:
    days = [*ideas, *sessions, *messages]
    if not days:
        return {"unit": "day", "buckets": [], "per_project": {}}
    first, last = min(days), max(days)
    unit = choose_unit(first, last)
    spans = buckets(first, last, unit)
    index = {start: n for n, (start, _) in enumerate(spans)}
    out = [
        {
            "start": start.isoformat(),
            "end": end.isoformat(),
            "ideas": 0,
            "by_intent": dict.fromkeys(INTENTS, 0),
            "sessions": 0,
            "messages": 0,
        }
        for start, end in spans
    ]
    for day, counts in ideas.items():
        bucket = out[index[bucket_start(day, unit)]]
        for intent, n in counts.items():
            bucket["by_intent"][intent] = bucket["by_intent"].get(intent, 0) + n
            bucket["ideas"] += n
    for day, n in sessions.items():
        out[index[bucket_start(day, unit)]]["sessions"] += n
    for day, n in messages.items():
        out[index[bucket_start(day, unit)]]["messages"] += n
    series = {}
    for project, counts in per_project.items():
        bars = [0] * len(spans)
        for day, n in counts.items():
            bars[index[bucket_start(day, unit)]] += n
        series[project] = bars
    return {"unit": unit, "buckets": out, "per_project": series}
