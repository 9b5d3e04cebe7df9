"""The live feed (newest first, refreshed by the page every 2 s) and the health page (`cairn status`
and `cairn stats` figures)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cairn.ui.viewer import viewer_of

FEED_LIMIT = 80


async def feed_page(request: Request) -> Response:
    viewer = viewer_of(request)
    events = await viewer.ops.call("feed", {"limit": FEED_LIMIT})
    return viewer.page(request, "feed.html", events=events)


async def feed_items(request: Request) -> Response:
    """The feed's list alone: what the page's script swaps in while the daemon works."""
    viewer = viewer_of(request)
    return viewer.fragment("feed_items.html", events=await viewer.ops.call("feed", {"limit": FEED_LIMIT}))


async def health_page(request: Request) -> Response:
    from dataclasses import asdict

    from cairn.daemon.status import read_status

    viewer = viewer_of(request)
    # `cairn status` reads through a read-only SQLite connection, never the lock: the same here.
    status = asdict(await asyncio.to_thread(read_status, viewer.settings))
    stats = await viewer.ops.call("stats")
    learner = await viewer.ops.call("learner_stats")
    runs = list(reversed(status.get("recent_runs") or []))
    return viewer.page(
        request, "health.html", status=status, stats=stats, learner=learner, chart=_run_chart(runs)
    )


def _run_chart(runs: list[dict[str, Any]]) -> dict[str, Any]:
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
                "failed": run["outcome"] not in (None, "ok"),
                "title": f"run {run['id']} · {run['model']} · {tokens} tokens · {run['outcome']}",
            }
        )
    return {"bars": bars, "width": width, "height": height, "top": top}


routes = [
    Route("/", feed_page),
    Route("/feed/items", feed_items),
    Route("/health", health_page),
]
