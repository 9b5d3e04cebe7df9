"""Search (every filter `cairn search` has, paging, score parts) and one item in full with its context."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cairn.ui.backend import Refusal
from cairn.ui.viewer import INTENTS, viewer_of

MODES = ("hybrid", "semantic", "keyword")
KINDS = ("all", "ideas", "spans", "messages")
SCORE_PARTS = ("bm25", "vector", "fusion", "recency", "importance", "usage", "boost", "learned", "answers")


def _form(request: Request) -> dict[str, Any]:
    """The search form's fields as the page sent them (text as typed, for refilling the form)."""
    q = request.query_params
    return {
        "q": q.get("q", ""),
        "mode": q.get("mode", "hybrid") if q.get("mode") in MODES else "hybrid",
        "kind": q.get("kind", "all") if q.get("kind") in KINDS else "all",
        "project": q.get("project", "").strip(),
        "session": q.get("session", "").strip(),
        "intents": [i for i in q.getlist("intent") if i in INTENTS],
        "since": q.get("since", "").strip(),
        "until": q.get("until", "").strip(),
        "superseded": q.get("superseded") == "1",
        "min_score": q.get("min_score", "").strip(),
        "limit": q.get("limit", "20").strip() or "20",
        "page_token": q.get("page_token", "").strip(),
    }


def search_args(form: dict[str, Any]) -> dict[str, Any]:
    """The `search` op's arguments for a form, as `cairn search` builds them; a bad field is a `Refusal`."""
    from cairn.dates import DateError, parse_when_iso

    try:
        since = parse_when_iso(form["since"] or None, "since")
        until = parse_when_iso(form["until"] or None, "until")
    except DateError as exc:
        raise Refusal(str(exc)) from exc
    try:
        limit = int(form["limit"])
        min_score = float(form["min_score"]) if form["min_score"] else None
    except ValueError as exc:
        raise Refusal(f"limit and min score must be numbers ({exc})") from exc
    return {
        "query": form["q"],
        "mode": form["mode"],
        "kind": form["kind"],
        "project": form["project"] or None,
        "session": form["session"] or None,
        "intents": form["intents"],
        "since": since,
        "until": until,
        "include_superseded": form["superseded"],
        "min_score": min_score,
        "limit": limit,
        "continuation": form["page_token"] or None,
        "record_usage": True,
    }


async def search_page(request: Request) -> Response:
    viewer = viewer_of(request)
    form = _form(request)
    page = None
    if form["q"].strip() or form["page_token"]:
        page = await viewer.ops.call("search", search_args(form))
    return viewer.page(
        request, "search.html", form=form, page=page, modes=MODES, kinds=KINDS, score_parts=SCORE_PARTS
    )


async def item_page(request: Request) -> Response:
    """An idea, span or message in full; for an idea also the messages it came from and what was said
    around it (`timeline`)."""
    viewer = viewer_of(request)
    item_id = request.path_params["item_id"]
    detail = await viewer.ops.call("show", {"id": item_id})
    context = None
    nearby = None
    if detail.get("kind") == "idea":
        context = await viewer.ops.call("source_context", {"id": detail["id"], "around": 2})
        nearby = await viewer.ops.call("timeline", {"id": detail["id"], "before": 3, "after": 3})
    return viewer.page(request, "item.html", item=detail, context=context, nearby=nearby)


routes = [
    Route("/search", search_page),
    Route("/item/{item_id}", item_page),
]
