"""The memory's figures: the home page (what the memory holds overall and per project, a chart of what
was remembered over time by when it was said, what the daemon is doing, what recall did) and the
health page (every figure of `cairn status` and `cairn stats`, labelled, in human units).

Store figures come through the ops (`overview`, `stats`, `learner_stats`); the daemon's state comes
from `cairn.daemon.status.read_status`, as `cairn status` reads it: a read-only SQLite connection,
never the store lock, run in a thread so the page does not block the event loop.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cairn.ui.units import compact, number, parse_time
from cairn.ui.viewer import INTENTS, viewer_of

CHART_WIDTH = 960
CHART_HEIGHT = 230
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 8, 12, 38
MAX_LABELS = 8
SPARK_WIDTH, SPARK_HEIGHT = 120, 22
#: A run with no outcome that started longer ago than this, with no daemon running, was interrupted.
STALE_RUN = timedelta(hours=1)
#: The `stats` and `learner_stats` keys health.html labels; any other is listed under "Other figures".
LABELLED_STATS = frozenset(
    {
        "schema_version",
        "db_path",
        "db_size_bytes",
        "projects",
        "sessions",
        "transcript_files",
        "messages",
        "messages_by_role",
        "message_passages",
        "first_message_at",
        "last_message_at",
        "ideas",
        "ideas_by_intent",
        "relations",
        "topic_spans",
        "entities",
        "queue_by_status",
        "index_runs",
        "pending_vectors",
        "vectors",
        "vectors_error",
        "recall_injections",
        "recall_hits",
        "recall_hit_rate",
        "file_documents",
        "file_chunks",
        "file_requests_by_status",
        "learning_sessions_by_status",
        "search_associations",
        "recall_drops",
        "recall_drops_by_reason",
        "indexing_today",
        "indexing_paused",
    }
)
LABELLED_LEARNER = frozenset(
    {
        "enabled",
        "threshold",
        "timeout_seconds",
        "searches_seen",
        "sessions_started",
        "sessions_resolved",
        "sessions_timed_out",
        "active_sessions",
        "files_learned",
        "associations_created",
        "associations_from_agent",
        "association_repeats",
        "association_hits",
        "errors",
        "recent_errors",
    }
)
_EN_DASH = "\u2013"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


async def _status(request: Request) -> dict[str, Any]:
    from cairn.daemon.status import read_status

    return asdict(await asyncio.to_thread(read_status, viewer_of(request).settings))


async def home_page(request: Request) -> Response:
    viewer = viewer_of(request)
    data = await viewer.ops.call("overview")
    status = await _status(request)
    for project in data["projects"]:
        project["spark"] = sparkline(project.get("remembered") or [])
        project["bar"] = intent_bar(project["ideas_by_intent"], 100, 8)
    return viewer.page(
        request,
        "home.html",
        data=data,
        status=status,
        daemon=daemon_now(status, data.get("last_failed_run")),
        chart=remembered_chart(data["remembered"]),
        intent_bar=intent_bar(data["totals"]["ideas_by_intent"], CHART_WIDTH, 16),
    )


async def daemon_card(request: Request) -> Response:
    """The home page's "Daemon now" card alone: what the page's script swaps in every few seconds."""
    viewer = viewer_of(request)
    data = await viewer.ops.call("overview")
    return viewer.fragment(
        "_daemon.html", daemon=daemon_now(await _status(request), data.get("last_failed_run"))
    )


async def health_page(request: Request) -> Response:
    viewer = viewer_of(request)
    status = await _status(request)
    stats = await viewer.ops.call("stats")
    learner = await viewer.ops.call("learner_stats")
    runs = list(reversed(status.get("recent_runs") or []))
    return viewer.page(
        request,
        "health.html",
        status=status,
        stats=stats,
        learner=learner,
        # A figure added to `cairn stats` later still shows, under its key, until it gets a label here.
        extra_stats={k: v for k, v in stats.items() if k not in LABELLED_STATS},
        extra_learner={k: v for k, v in learner.items() if k not in LABELLED_LEARNER},
        daemon=daemon_now(status, None),
        chart=run_chart(runs),
    )


def daemon_now(
    status: dict[str, Any], last_failed: dict[str, Any] | None, now: datetime | None = None
) -> dict[str, Any]:
    """What the daemon is doing, from `read_status`: the batch in progress (a run with no outcome yet),
    the last finished run, and what went wrong (parked and retrying items, the last failed run)."""
    now = now or datetime.now(UTC)
    runs = status.get("recent_runs") or []
    current = runs[0] if runs and runs[0]["outcome"] is None else None
    interrupted = False
    if current is not None:
        started = parse_time(current["started_at"])
        running = bool(status["daemon"]["running"])
        interrupted = not running and started is not None and now - started > STALE_RUN
    last = next((run for run in runs if run["outcome"] is not None), None)
    queue = status.get("queue") or {}
    return {
        "running": bool(status["daemon"]["running"]),
        "pid": status["daemon"]["pid"],
        "uptime": status["daemon"]["uptime_seconds"],
        "pending": queue.get("pending", 0),
        "working": queue.get("running", 0),
        "parked": queue.get("parked", 0),
        "done": queue.get("done", 0),
        "current": current,
        "interrupted": interrupted,
        "last": last,
        "last_failed": last_failed,
        "retrying": status.get("retrying") or [],
        "parked_items": status.get("parked") or [],
        "today": status.get("today"),
        # The daemon's indexing pause (one line) and today's tokens against the daily budget.
        "pause": status.get("pause"),
        "budget": status.get("budget"),
        "error": status.get("error"),
        "busy": bool(current and not interrupted) or queue.get("pending", 0) + queue.get("running", 0) > 0,
    }


def _plural(count: int, word: str) -> str:
    return f"{number(count)} {word}{'' if count == 1 else 's'}"


def _nice_top(value: int) -> int:
    """A round, even ceiling at or above `value` (at least 2): below 10 the next even number, above it
    1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten, so the bars fill most of the chart and the
    half-way line is a whole number."""
    if value < 10:
        return max(2, value + value % 2)
    power = 10 ** max(0, math.floor(math.log10(value)) - 1)
    for step in (10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100):
        if step * power >= value and (step * power) % 2 == 0:
            return step * power
    return 100 * power


def bucket_name(start: date, end: date, unit: str) -> str:
    """A bucket as a person says it: `3 Sep 2025`, `1 to 7 Sep 2025` (with an en dash), `September 2025`,
    `2025`."""
    if unit == "day":
        return f"{start.day} {_MONTHS[start.month - 1]} {start.year}"
    if unit == "week":
        if start.month == end.month:
            return f"{start.day}{_EN_DASH}{end.day} {_MONTHS[end.month - 1]} {end.year}"
        head = f"{start.day} {_MONTHS[start.month - 1]}" + (
            f" {start.year}" if start.year != end.year else ""
        )
        return f"{head} {_EN_DASH} {end.day} {_MONTHS[end.month - 1]} {end.year}"
    if unit == "month":
        return start.strftime("%B %Y")
    return str(start.year)


def _axis_label(start: date, unit: str, with_year: bool) -> str:
    if unit == "year":
        return str(start.year)
    month = _MONTHS[start.month - 1]
    text = month if unit == "month" else f"{start.day} {month}"
    return f"{text} {start.year}" if with_year else text


def remembered_chart(remembered: dict[str, Any]) -> dict[str, Any]:
    """SVG geometry of ideas remembered per bucket, stacked by intent (oldest left), with a y axis of
    round figures and at most `MAX_LABELS` date labels; every bucket gets a tooltip and a hover area."""
    buckets = remembered.get("buckets") or []
    plot_w = CHART_WIDTH - _LEFT - _RIGHT
    plot_h = CHART_HEIGHT - _TOP - _BOTTOM
    base = _TOP + plot_h
    chart: dict[str, Any] = {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "bars": [],
        "labels": [],
        "ticks": [],
    }
    if not buckets:
        return chart
    unit = remembered.get("unit", "day")
    top = _nice_top(max(b["ideas"] for b in buckets))
    slot = plot_w / len(buckets)
    width = max(1.0, min(slot * 0.8, 40.0))
    every = max(1, math.ceil(len(buckets) / MAX_LABELS))
    last_year = None
    for n, bucket in enumerate(buckets):
        start, end = date.fromisoformat(bucket["start"]), date.fromisoformat(bucket["end"])
        x = _LEFT + n * slot + (slot - width) / 2
        y = base
        segments = []
        for intent in INTENTS:
            count = bucket["by_intent"].get(intent, 0)
            if not count:
                continue
            h = count / top * plot_h
            y -= h
            segments.append({"intent": intent, "count": count, "y": round(y, 1), "h": round(h, 1)})
        parts = ", ".join(f"{number(s['count'])} {s['intent']}" for s in segments)
        title = f"{bucket_name(start, end, unit)}: {_plural(bucket['ideas'], 'idea')}"
        title += f" ({parts})" if parts else ""
        title += (
            f" · {_plural(bucket['sessions'], 'session')} started · {_plural(bucket['messages'], 'message')}"
        )
        chart["bars"].append(
            {
                "start": bucket["start"],
                "end": bucket["end"],
                "ideas": bucket["ideas"],
                "x": round(x, 1),
                "w": round(width, 1),
                "slot_x": round(_LEFT + n * slot, 1),
                "slot_w": round(slot, 1),
                "segments": segments,
                "title": title,
            }
        )
        if n % every == 0:
            label = _axis_label(start, unit, with_year=start.year != last_year and unit != "year")
            last_year = start.year
            chart["labels"].append({"x": round(x + width / 2, 1), "text": label})
    for fraction in (0, 0.5, 1):
        value = top * fraction
        if value != int(value):
            continue
        y = round(base - fraction * plot_h, 1)
        chart["ticks"].append({"y": y, "text": compact(int(value)), "x1": _LEFT, "x2": CHART_WIDTH - _RIGHT})
    chart.update(top=top, unit=unit, base=base, left=_LEFT, label_y=base + 16)
    return chart


def sparkline(values: list[int]) -> dict[str, Any]:
    """A project's ideas per bucket as a strip of tiny bars (the home page's buckets, oldest left)."""
    if not values or not any(values):
        return {"bars": [], "width": SPARK_WIDTH, "height": SPARK_HEIGHT}
    top = max(values)
    slot = SPARK_WIDTH / len(values)
    bars = []
    for n, value in enumerate(values):
        if value:
            h = max(1.5, value / top * (SPARK_HEIGHT - 2))
            bars.append(
                {
                    "x": round(n * slot, 2),
                    "w": round(max(slot * 0.8, 0.8), 2),
                    "y": round(SPARK_HEIGHT - h, 2),
                    "h": round(h, 2),
                }
            )
    return {"bars": bars, "width": SPARK_WIDTH, "height": SPARK_HEIGHT}


def intent_bar(by_intent: dict[str, int], width: float, height: float) -> dict[str, Any]:
    """One bar split by intent in proportion to the ideas of each (the order of `INTENTS`)."""
    total = sum(by_intent.get(intent, 0) for intent in INTENTS)
    parts = []
    x = 0.0
    for intent in INTENTS:
        count = by_intent.get(intent, 0)
        if not count:
            continue
        w = count / total * width
        parts.append(
            {"intent": intent, "count": count, "x": round(x, 2), "w": round(w, 2), "share": count / total}
        )
        x += w
    return {"parts": parts, "width": width, "height": height, "total": total}


def run_chart(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars of the recent runs' tokens (input + output), oldest left; failed runs marked."""
    width, height, gap = 600, 120, 4
    if not runs:
        return {"bars": [], "width": width, "height": height}
    top = max((r["input_tokens"] + r["output_tokens"]) for r in runs) or 1
    bar = max(4, (width - gap * len(runs)) // len(runs))
    bars = []
    for n, run in enumerate(runs):
        tokens = run["input_tokens"] + run["output_tokens"]
        h = max(1, round(tokens / top * (height - 20)))
        bars.append(
            {
                "x": n * (bar + gap),
                "y": height - h,
                "w": bar,
                "h": h,
                "failed": run["outcome"] not in (None, "ok", "tool_budget"),
                "title": f"run {run['id']} · {run['model']} · {_plural(tokens, 'token')} · "
                f"{run['outcome'] or 'running'}",
            }
        )
    return {"bars": bars, "width": width, "height": height, "top": top}


routes = [
    Route("/", home_page),
    Route("/home/daemon", daemon_card),
    Route("/health", health_page),
]
