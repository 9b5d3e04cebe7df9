"""Fixing the memory: forget an idea, a session or a project — confirm first (a dry run says what goes),
then an undo window (`cairn.ui.forgets`) before the `forget` op runs; mark an idea superseded by another
— confirm first, undo from the idea's page (the `supersede` op); correct an idea on its page — answered,
done, declined, open again, its importance (the `correct` op, at once: each is one click to take back).

Every change is a POST carrying this start's token in the form, from a page the `Guard` let through
(its Origin, when the browser sends one, is the viewer's own)."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from cairn.ui.security import TOKEN_HEADER, token_matches
from cairn.ui.urls import url
from cairn.ui.viewer import Viewer, viewer_of

#: An idea number as the viewer takes one: ASCII digits, at most 18 (a SQLite integer). `str.isdigit`
#: also passes "²" and other Unicode digits that `int()` refuses, and 5,000 digits are past Python's limit
#: for `int()` of a string: both were HTTP 500s.
_IDEA_NUMBER = re.compile(r"[0-9]{1,18}")


def _is_idea_number(text: str) -> bool:
    return _IDEA_NUMBER.fullmatch(text) is not None


def _selection(values: Any) -> tuple[str, dict[str, Any]] | None:
    """(what, forget-op args) from `idea`, `session` or `project` (exactly one), else None."""
    idea = str(values.get("idea") or "").strip().lstrip("#")
    session = str(values.get("session") or "").strip()
    project = str(values.get("project") or "").strip()
    given = [v for v in (idea, session, project) if v]
    if len(given) != 1:
        return None
    if idea:
        return (f"idea #{idea}", {"ideas": [int(idea)]}) if _is_idea_number(idea) else None
    if session:
        return f"session {session[:8]}", {"sessions": [session]}
    return f"project {project}", {"project": project}


async def confirm_page(request: Request) -> Response:
    viewer = viewer_of(request)
    chosen = _selection(request.query_params)
    if chosen is None:
        return viewer.refusal(request, "name one idea (a number), session or project to forget")
    what, args = chosen
    preview = await viewer.ops.call("forget", {**args, "dry_run": True})
    return viewer.page(
        request,
        "forget.html",
        what=what,
        fields=request.query_params,
        preview=preview,
        undo_seconds=viewer.forgets.undo_seconds,
    )


async def _posted(request: Request, viewer: Viewer) -> Any | None:
    """The posted form when it carries this start's token (form field or header), else None."""
    form = await request.form()
    supplied = form.get("token") or request.headers.get(TOKEN_HEADER)
    return form if token_matches(str(supplied) if supplied else None, viewer.token) else None


async def forget_post(request: Request) -> Response:
    viewer = viewer_of(request)
    form = await _posted(request, viewer)
    if form is None:
        return viewer.refusal(request, "refused: a forget must be posted from the viewer's own page", 403)
    chosen = _selection(form)
    if chosen is None:
        return viewer.refusal(request, "name one idea (a number), session or project to forget")
    viewer.forgets.schedule(*chosen)
    return RedirectResponse("/forgets", status_code=303)


async def undo_post(request: Request) -> Response:
    viewer = viewer_of(request)
    form = await _posted(request, viewer)
    if form is None:
        return viewer.refusal(request, "refused: an undo must be posted from the viewer's own page", 403)
    try:
        forget_id = int(str(form.get("forget")))
    except ValueError:
        return viewer.refusal(request, "no such forget")
    if not viewer.forgets.undo(forget_id):
        return viewer.refusal(request, "too late to undo: that forget was already applied (or never made)")
    return RedirectResponse("/forgets", status_code=303)


async def correct_post(request: Request) -> Response:
    """Apply one correction from an idea's page and show the page again with it."""
    viewer = viewer_of(request)
    form = await _posted(request, viewer)
    if form is None:
        return viewer.refusal(request, "refused: a change must be posted from the viewer's own page", 403)
    idea = str(form.get("idea") or "").strip().lstrip("#")
    if not _is_idea_number(idea):
        return viewer.refusal(request, "name the idea to correct by number")
    args: dict[str, Any] = {"id": idea}
    if state := str(form.get("state") or "").strip():
        args["state"] = state
    if importance := str(form.get("importance") or "").strip():
        try:
            args["importance"] = float(importance)
        except ValueError:
            return viewer.refusal(
                request, f"importance must be a number from 0 to 1, not {importance[:40]!r}"
            )
    if len(args) == 1:
        return viewer.refusal(request, "nothing to correct: choose a state or give an importance")
    await viewer.ops.call("correct", args)
    return RedirectResponse(url("/item", idea), status_code=303)


def _idea_ids(values: Any) -> tuple[str, str] | None:
    """(idea, by) when both are idea numbers (`#` allowed), else None."""
    idea, by = (str(values.get(k) or "").strip().lstrip("#") for k in ("idea", "by"))
    return (idea, by) if _is_idea_number(idea) and _is_idea_number(by) else None


async def supersede_confirm(request: Request) -> Response:
    viewer = viewer_of(request)
    ids = _idea_ids(request.query_params)
    if ids is None:
        return viewer.refusal(request, "name the idea and the idea that supersedes it, by number")
    old = await viewer.ops.call("show", {"id": ids[0]})
    new = await viewer.ops.call("show", {"id": ids[1]})
    return viewer.page(request, "supersede.html", old=old, new=new)


async def supersede_post(request: Request) -> Response:
    viewer = viewer_of(request)
    form = await _posted(request, viewer)
    if form is None:
        return viewer.refusal(request, "refused: a change must be posted from the viewer's own page", 403)
    ids = _idea_ids(form)
    if ids is None:
        return viewer.refusal(request, "name the idea and the idea that supersedes it, by number")
    idea, by = ids
    await viewer.ops.call("supersede", {"id": idea, "by": by, "undo": form.get("undo") == "1"})
    return RedirectResponse(url("/item", idea), status_code=303)


async def forgets_page(request: Request) -> Response:
    viewer = viewer_of(request)
    return viewer.page(request, "forgets.html", undo_seconds=viewer.forgets.undo_seconds)


routes = [
    Route("/forget", confirm_page, methods=["GET"]),
    Route("/forget", forget_post, methods=["POST"]),
    Route("/forget/undo", undo_post, methods=["POST"]),
    Route("/forgets", forgets_page),
    Route("/supersede", supersede_confirm, methods=["GET"]),
    Route("/supersede", supersede_post, methods=["POST"]),
    Route("/correct", correct_post, methods=["POST"]),
]
