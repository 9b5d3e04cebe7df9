"""Browsing ops for the viewer (`cairn ui`): the live feed, a project's timeline, an idea's source messages.

They are socket ops like `search` and `show` (registered in `cairn.daemon.server.OPS`), so the viewer
asks the daemon when it runs and opens the store itself only when it does not, and gets the same JSON
either way. Everything here reads; nothing is cached, so each answer is what the store holds now.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cairn.search.errors import SearchError
from cairn.search.filters import SPAN_SAID_AT
from cairn.search.models import parse_item_id, preview

if TYPE_CHECKING:
    from cairn.store.store import Store

MAX_FEED = 200
MAX_SESSIONS = 50
# A tool result can be megabytes; the context around an idea shows its start.
MAX_MESSAGE_CHARS = 4000
MAX_AROUND = 10


def _moment(value: Any) -> datetime:
    """A stored timestamp (SQLite's `...Z` or Python's `+00:00`) as an aware datetime, for merging."""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _limit(value: Any, top: int, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
        raise SearchError(f"bad arguments: {name} must be a whole number from 1 to {top}")
    return value


_IDEA_WHERE = """
    FROM ideas i
    LEFT JOIN sessions se ON se.id = i.session_id
    LEFT JOIN projects p ON p.id = se.project_id
"""


async def feed(store: Store, *, limit: int = 60) -> list[dict[str, Any]]:
    """What was captured and indexed, newest first: ideas stored (by intent), topic spans opened,
    questions answered, todos completed and indexing runs (tokens, outcome, error).

    Each event is `{at, type, ...}`; `type` is `idea`, `span`, `answered`, `completed` or `run`. The
    newest `limit` of each kind are read and merged, so the merged list holds the newest `limit` overall.
    `at` orders the feed: when an idea or span was stored, when a run ended, and for an answer or a
    completion when it was said. `said_at` is when the item was said in its session (an idea's source
    message, a span's first timed line, the answer's message): after a backfill every idea was stored
    within minutes, but said over months, and that is the time a person recognises.
    """
    n = _limit(limit, MAX_FEED, "limit")
    db = store.db
    events: list[dict[str, Any]] = []
    for row in await db.fetchall(
        f"SELECT i.id, i.intent, i.content, i.created_at, i.said_at, i.superseded_by, i.session_id, "
        f"p.name AS project "
        f"{_IDEA_WHERE} ORDER BY i.id DESC LIMIT ?",
        (n,),
    ):
        events.append(
            {
                "type": "idea",
                "at": row["created_at"],
                "said_at": row["said_at"],
                "id": str(row["id"]),
                "intent": row["intent"],
                "preview": preview(row["content"]),
                "superseded": row["superseded_by"] is not None,
                "session": row["session_id"],
                "project": row["project"],
            }
        )
    for row in await db.fetchall(
        f"""
        SELECT t.id, t.name, t.created_at, {SPAN_SAID_AT} AS said_at, t.session_id, t.start_line,
               p.name AS project
        FROM topic_spans t LEFT JOIN sessions se ON se.id = t.session_id
        LEFT JOIN projects p ON p.id = se.project_id
        ORDER BY t.id DESC LIMIT ?
        """,
        (n,),
    ):
        events.append(
            {
                "type": "span",
                "at": row["created_at"],
                "said_at": row["said_at"],
                "id": f"s{row['id']}",
                "name": row["name"],
                "session": row["session_id"],
                "project": row["project"],
            }
        )
    for column, kind in (("answered_at", "answered"), ("completed_at", "completed")):
        for row in await db.fetchall(
            f"SELECT i.id, i.intent, i.content, i.{column} AS at, i.resolution, i.answered_by, "
            f"i.session_id, p.name AS project {_IDEA_WHERE} WHERE i.{column} IS NOT NULL "
            f"ORDER BY i.{column} DESC LIMIT ?",
            (n,),
        ):
            events.append(
                {
                    "type": kind,
                    "at": row["at"],
                    "said_at": row["at"],
                    "id": str(row["id"]),
                    "intent": row["intent"],
                    "preview": preview(row["content"]),
                    "resolution": row["resolution"],
                    "by": None if row["answered_by"] is None else str(row["answered_by"]),
                    "session": row["session_id"],
                    "project": row["project"],
                }
            )
    for row in await db.fetchall(
        """
        SELECT id, coalesce(finished_at, started_at) AS at, model, mode, input_tokens, output_tokens,
               seconds, outcome, error, rejected_items
        FROM index_runs ORDER BY id DESC LIMIT ?
        """,
        (n,),
    ):
        events.append(
            {
                "type": "run",
                "at": row["at"],
                "id": str(row["id"]),
                "model": row["model"],
                "mode": row["mode"],
                "input_tokens": row["input_tokens"],
                "output_tokens": row["output_tokens"],
                "seconds": row["seconds"],
                "outcome": row["outcome"],
                "error": row["error"],
                "failed": row["outcome"] not in (None, "ok", "tool_budget"),
            }
        )
    events.sort(key=lambda e: (_moment(e["at"]), e["type"] == "idea"), reverse=True)
    return events[:n]


async def project_timeline(store: Store, *, project: str, limit: int = 20) -> dict[str, Any]:
    """A project's sessions, newest first, each with its topic spans and ideas placed by transcript line:
    what the viewer draws as lanes (sessions), bars (spans) and marks (ideas by intent)."""
    from cairn.search.projects import resolve_projects

    n = _limit(limit, MAX_SESSIONS, "limit")
    found = await resolve_projects(store.db, project)
    if not found:
        raise SearchError(f"no project {project!r} is stored (`cairn projects` lists them)")
    ids = [pid for pid, _ in found]
    marks = ",".join("?" * len(ids))
    names = await store.db.fetchall(f"SELECT id, name, path FROM projects WHERE id IN ({marks})", ids)
    sessions = [
        dict(row)
        for row in await store.db.fetchall(
            f"""
            SELECT s.id, s.started_at, s.last_at, s.message_count, s.git_branch,
                   (SELECT max(m.end_line) FROM messages m WHERE m.session_id = s.id) AS last_line
            FROM sessions s WHERE s.project_id IN ({marks})
            ORDER BY s.last_at IS NULL, s.last_at DESC LIMIT ?
            """,
            (*ids, n),
        )
    ]
    for session in sessions:
        spans = await store.db.fetchall(
            "SELECT id, name, start_line, end_line, depth FROM topic_spans WHERE session_id = ? "
            "ORDER BY start_line, depth",
            (session["id"],),
        )
        session["spans"] = [{**dict(row), "id": f"s{row['id']}"} for row in spans]
        ideas = await store.db.fetchall(
            "SELECT id, intent, content, source_line, superseded_by FROM ideas WHERE session_id = ? "
            "ORDER BY source_line, id",
            (session["id"],),
        )
        session["ideas"] = [
            {
                "id": str(row["id"]),
                "intent": row["intent"],
                "line": row["source_line"],
                "preview": preview(row["content"]),
                "superseded": row["superseded_by"] is not None,
            }
            for row in ideas
        ]
        ends = [s["end_line"] or s["start_line"] for s in session["spans"]]
        lines = [i["line"] for i in session["ideas"] if i["line"] is not None]
        session["last_line"] = max([session["last_line"] or 0, *ends, *lines, 1])
    return {"projects": [dict(row) for row in names], "sessions": sessions}


async def source_context(store: Store, *, id: str | int, around: int = 2) -> dict[str, Any]:
    """The transcript messages an idea was drawn from, with `around` messages either side, in line order;
    the source message (the one whose lines hold the idea's `source_line`) has `source: true`."""
    kind, row_id = parse_item_id(id)
    if kind != "idea":
        raise SearchError(f"{id!r} is not an idea id; source context is kept for ideas")
    if not isinstance(around, int) or isinstance(around, bool) or not 0 <= around <= MAX_AROUND:
        raise SearchError(f"bad arguments: around must be a whole number from 0 to {MAX_AROUND}")
    idea = await store.db.fetchone(
        "SELECT id, source_file_id, source_line FROM ideas WHERE id = ?", (row_id,)
    )
    if idea is None:
        raise SearchError(f"no idea #{row_id}")
    if idea["source_file_id"] is None or idea["source_line"] is None:
        return {"id": str(row_id), "messages": []}
    file_id, line = idea["source_file_id"], idea["source_line"]
    columns = "id, line, end_line, role, kind, text, timestamp"
    before = await store.db.fetchall(
        f"SELECT {columns} FROM messages WHERE file_id = ? AND line <= ? ORDER BY line DESC LIMIT ?",
        (file_id, line, around + 1),
    )
    after = await store.db.fetchall(
        f"SELECT {columns} FROM messages WHERE file_id = ? AND line > ? ORDER BY line LIMIT ?",
        (file_id, line, around),
    )
    messages = []
    for row in [*reversed(before), *after]:
        text = str(row["text"])
        messages.append(
            {
                "id": f"m{row['id']}",
                "line": row["line"],
                "end_line": row["end_line"],
                "role": row["role"],
                "kind": row["kind"],
                "timestamp": row["timestamp"],
                "text": text[:MAX_MESSAGE_CHARS] + ("…" if len(text) > MAX_MESSAGE_CHARS else ""),
                "source": row["line"] <= line <= row["end_line"],
            }
        )
    return {"id": str(row_id), "messages": messages}
