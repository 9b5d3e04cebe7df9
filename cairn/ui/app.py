"""The viewer's Starlette app: routes, templates (autoescaped), static assets, and the security guard.

`create_app` is what `cairn ui` serves and what tests build; the pages live in `cairn.ui.views.*`, each
reading the store only through `Ops` (the socket ops every face uses).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from cairn.config import Settings
from cairn.ui.backend import Ops, Refusal
from cairn.ui.forgets import DEFAULT_UNDO_SECONDS, Forgets
from cairn.ui.security import Guard

INTENTS = ("decision", "conclusion", "question", "problem", "solution", "todo", "context")
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)


def marked(snippet: str | None) -> Markup:
    """A search snippet with its `**matched**` words in <mark>, every other character escaped."""
    text = str(snippet or "")
    out: list[str] = []
    pos = 0
    for match in _BOLD.finditer(text):
        out.append(str(escape(_unstar(text[pos : match.start()]))))
        out.append(f"<mark>{escape(_unstar(match[1]))}</mark>")
        pos = match.end()
    out.append(str(escape(_unstar(text[pos:]))))
    return Markup("".join(out))


def _unstar(text: str) -> str:
    return text.replace("\\*", "*")


def ref(item_id: Any) -> str:
    text = str(item_id)
    return f"#{text}" if text.isdigit() else text


def short_time(value: Any) -> str:
    """`YYYY-MM-DD HH:MM` of an ISO timestamp (UTC as stored); anything else as is."""
    text = str(value or "")
    return text[:16].replace("T", " ") if len(text) >= 16 and text[10] == "T" else text


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("cairn.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(marked=marked, ref=ref, when=short_time)
    env.globals["intents"] = INTENTS
    return env


class Viewer:
    """What every page needs: the ops route, the templates, this start's token, the pending forgets."""

    def __init__(self, settings: Settings, token: str, port: int, undo_seconds: float) -> None:
        self.settings = settings
        self.token = token
        self.port = port
        self.ops = Ops(settings)
        self.forgets = Forgets(self.ops, undo_seconds)
        self.env = _environment()

    def page(self, request: Request, name: str, code: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(
            request=request, token=self.token, forgets=self.forgets.listed(), **context
        )
        return HTMLResponse(html, status_code=code)

    def fragment(self, name: str, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(token=self.token, **context))

    def refusal(self, request: Request, message: str, status: int = 400) -> HTMLResponse:
        return self.page(request, "error.html", code=status, message=message)


def viewer_of(request: Request) -> Viewer:
    viewer: Viewer = request.app.state.viewer
    return viewer


async def _refused(request: Request, exc: Exception) -> Response:
    return viewer_of(request).refusal(request, str(exc))


def create_app(
    settings: Settings, *, token: str, port: int, undo_seconds: float = DEFAULT_UNDO_SECONDS
) -> Starlette:
    """The viewer for `settings`' store, answering only at 127.0.0.1/localhost:`port` with `token`."""
    from cairn.ui.views import fix, graph, live, projects, search

    viewer = Viewer(settings, token, port, undo_seconds)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await viewer.forgets.close()
        await viewer.ops.close()

    static = StaticFiles(directory=str(resources.files("cairn.ui").joinpath("static")))
    routes = [
        *live.routes,
        *search.routes,
        *projects.routes,
        *fix.routes,
        *graph.routes,
        Mount("/static", app=static, name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token, port=port)],
        exception_handlers={Refusal: _refused},
        lifespan=lifespan,
    )
    app.state.viewer = viewer
    return app
