"""What every page of the viewer shares: the `Viewer` (ops route, templates, token, pending forgets),
the template filters (`md`: Markdown through the safe renderer of `cairn.ui.text`), and `viewer_of` to
find it from a request.

Apart from `cairn.ui.app` so the pages (`cairn.ui.views.*`) can import it while the app imports them:
the app assembles the pages, the pages never reach back into the app.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from cairn.config import Settings
from cairn.search.labels import kind_label
from cairn.ui.backend import Ops
from cairn.ui.forgets import Forgets
from cairn.ui.text import fold, markdown, markdown_inline, message_parts
from cairn.ui.units import FILTERS as UNIT_FILTERS
from cairn.ui.urls import url

INTENTS = ("decision", "conclusion", "question", "problem", "solution", "todo", "context")


def marked(snippet: str | None, highlights: Any = ()) -> Markup:
    """A search snippet (plain text) with its matched words (`highlights`, offsets into it) in <mark>,
    every character escaped: a snippet is shown as text, never rendered as markdown."""
    text = str(snippet or "")
    out: list[str] = []
    pos = 0
    for span in sorted(highlights or ()):
        start, end = max(int(span[0]), pos), min(int(span[1]), len(text))
        if start >= end:
            continue
        out.append(str(escape(text[pos:start])))
        out.append(f"<mark>{escape(text[start:end])}</mark>")
        pos = end
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))


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
    env.filters.update(marked=marked, ref=ref, when=short_time, md=markdown, md_inline=markdown_inline)
    env.filters.update(kind=kind_label)
    env.filters.update(UNIT_FILTERS)
    env.globals.update(intents=INTENTS, fold=fold, message_parts=message_parts, url=url)
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
