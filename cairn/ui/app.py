"""The viewer's Starlette app: the pages' routes, static assets, the security guard, refusals as pages.

`create_app` is what `cairn ui` serves and what tests build; the pages live in `cairn.ui.views.*`, each
reading the store only through `Ops` (the socket ops every face uses), and what they share (the
`Viewer`, its autoescaped templates) in `cairn.ui.viewer`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from cairn.config import Settings
from cairn.ui.backend import Refusal
from cairn.ui.forgets import DEFAULT_UNDO_SECONDS
from cairn.ui.security import Guard
from cairn.ui.viewer import Viewer, viewer_of
from cairn.ui.views import fix, graph, home, live, projects, search


async def _refused(request: Request, exc: Exception) -> Response:
    return viewer_of(request).refusal(request, str(exc))


def create_app(
    settings: Settings, *, token: str, port: int, undo_seconds: float = DEFAULT_UNDO_SECONDS
) -> Starlette:
    """The viewer for `settings`' store, answering only at 127.0.0.1/localhost:`port` with `token`."""
    viewer = Viewer(settings, token, port, undo_seconds)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await viewer.forgets.close()
        await viewer.ops.close()

    static = StaticFiles(directory=str(resources.files("cairn.ui").joinpath("static")))
    routes = [
        *home.routes,
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
