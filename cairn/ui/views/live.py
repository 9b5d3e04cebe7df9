"""The live feed: what was captured and indexed, newest first, refreshed by the page every 2 s; each
item dated by when it was said (a backfill indexes months of work in minutes)."""

from __future__ import annotations

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


routes = [
    Route("/feed", feed_page),
    Route("/feed/items", feed_items),
]
