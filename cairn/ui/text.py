"""How the viewer shows what sessions said: Markdown rendered safely, long tool output folded.

Ideas and messages are mostly Markdown (backticked names, lists, code fences), and shown raw they read
as noise. They are also hostile input: anything a session saw (a web page, a file, a tool's output)
can be in them. So the renderer is CommonMark (plus tables and strikethrough) with raw HTML off (a tag
in the text is shown as text, escaped), no images (nothing remote is ever fetched: the alt text is
shown instead), links only to http, https, mailto or relative addresses, and `rel="noopener
noreferrer"` on every link. A link to anything else is not made at all: markdown-it leaves
`[text](javascript:...)` as that text, and a reference definition to one as a line of text. The
renderer's output is the only transcript text the pages mark safe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

#: Schemes a link may have; a link with no scheme (`/item/3`, `#x`, `docs/a.md`) is relative, and kept.
LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_PATH_START = re.compile(r"[/?#]")
#: A message longer than this many lines is folded behind its first line.
FOLD_LINES = 20
#: The summary line of a folded message is cut to this many characters.
SUMMARY_CHARS = 120


def link_allowed(url: str) -> bool:
    """True for an address whose scheme is in `LINK_SCHEMES`, or a relative one with no colon before
    its first `/`, `?` or `#` (so nothing a browser, or a reader, could take for another scheme).

    `url` is what markdown-it made of the destination (entities decoded, then percent-encoded), so
    `&#106;avascript:` arrives as `javascript:` and `<java script:…>` as `java%20script:…`.
    """
    head = _PATH_START.split(url.strip(), maxsplit=1)[0]
    return ":" not in head or head.split(":", 1)[0].lower() in LINK_SCHEMES


class _SafeMarkdown(MarkdownIt):
    """markdown-it with `link_allowed` as its link check. Its own refuses only javascript, vbscript,
    file and data (bar `data:image/...`): a list of what to refuse misses the next scheme a browser
    or an installed app answers to, a list of what to allow does not."""

    def validateLink(self, url: str) -> bool:
        return link_allowed(url)


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A link that gives the page it opens no handle on the viewer and no referrer."""
    tokens[idx].attrSet("rel", "noopener noreferrer")
    rendered: str = self.renderToken(tokens, idx, options, env)
    return rendered


def _image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """An image's alt text, never the image: a remote one would tell its server the viewer was opened."""
    alt = self.renderInlineAsText(tokens[idx].children or [], options, env)
    return f'<span class="image-alt" title="image not loaded">{escapeHtml(alt or "image")}</span>'


def _renderer() -> MarkdownIt:
    # `breaks`: a transcript's line breaks are the writer's (chat, lists typed by hand, a call on its line).
    md = _SafeMarkdown("commonmark", {"html": False, "linkify": False, "typographer": False, "breaks": True})
    md.enable(["table", "strikethrough"])  # what agents write most beyond CommonMark
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


_MD = _renderer()


def markdown(text: Any) -> Markup:
    """`text` as HTML from the safe renderer: its escaping is what makes the `Markup` true."""
    return Markup(_MD.render(str(text or "")))


def markdown_inline(text: Any) -> Markup:
    """A one-line preview's inline Markdown (code, emphasis, links) by the same safe renderer, with no
    paragraph or block around it, so a preview in a list reads `like this` instead of with backticks."""
    return Markup(_MD.renderInline(str(text or "")))


@dataclass(frozen=True)
class Part:
    """A run of a message's lines: tool output (shown as printed) or prose (rendered as Markdown)."""

    tool: bool
    text: str


def message_parts(text: Any, kind: str | None = None) -> list[Part]:
    """A message cut into prose and tool output. A tool result is tool output whole; in other messages
    each `[tool_use NAME] input` line (one line each: the capture renders a call's input on one line)
    is tool output and the lines between them prose."""
    text = str(text or "")
    if kind in ("tool_result", "tool_use") or text.startswith("[tool_result"):
        return [Part(True, text)]
    parts: list[Part] = []
    for line in text.split("\n"):
        tool = line.startswith("[tool_use ")
        if parts and parts[-1].tool == tool:
            parts[-1] = Part(tool, parts[-1].text + "\n" + line)
        else:
            parts.append(Part(tool, line))
    return [p for p in parts if p.tool or p.text.strip()]


def is_tool_output(text: Any, kind: str | None = None) -> bool:
    """A tool's result, or a message of tool calls alone."""
    parts = message_parts(text, kind)
    return bool(parts) and all(p.tool for p in parts)


@dataclass(frozen=True)
class Fold:
    """How a message is shown folded: its first line, and how many lines the fold hides."""

    first: str
    more: int


def fold(text: Any, kind: str | None = None) -> Fold | None:
    """The fold of a message that is tool output (of more than one short line) or longer than
    `FOLD_LINES` lines; None for one short enough to show open."""
    lines = str(text or "").strip("\n").splitlines()
    if not lines:
        return None
    tool = is_tool_output(text, kind)
    if len(lines) <= FOLD_LINES and not (tool and (len(lines) > 1 or len(lines[0]) > SUMMARY_CHARS)):
        return None
    first = next((line.strip() for line in lines if line.strip()), "")
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - 1].rstrip() + "…"
    return Fold(first, len(lines) - 1)


# Widths of characters in em, a little over DejaVu Sans's (what Debian's Chromium draws system-ui with,
# and among the widest sans fonts): an SVG cannot shrink or clip its text to a box, so the server
# estimates how much room a label takes, and must not underestimate it.
_EM = {
    **dict.fromkeys("WMm%@…", 1.0),
    **dict.fromkeys("w#+<=>^~&OQGDHNU", 0.84),
    **dict.fromkeys('*_`\u2013"?', 0.54),
    **dict.fromkeys("rt()[]!-f/:;\\|,.·IJijl' ", 0.41),
}
_UPPER, _OTHER, _WIDE, _MONO = 0.74, 0.65, 1.2, 0.62
#: How much wider bold (600) text runs, and the margin every estimate keeps.
_BOLD, _SAFETY = 1.12, 1.04


def _em(char: str) -> float:
    import unicodedata

    if char in _EM:
        return _EM[char]
    if unicodedata.east_asian_width(char) in ("W", "F"):  # CJK, emoji: a full em and more
        return _WIDE
    if char.isupper():
        return _UPPER
    if char.isalnum() or char in "${}":
        return _OTHER
    return 1.0 if not char.isascii() else _OTHER


def text_width(text: str, size: float, *, monospace: bool = False, bold: bool = False) -> float:
    """An upper estimate of `text`'s width in px at `size` px."""
    em = sum(_MONO * (2 if _em(c) == _WIDE else 1) if monospace else _em(c) for c in text)
    return em * size * _SAFETY * (_BOLD if bold else 1.0)


def fit_text(text: str, room: float, size: float, *, monospace: bool = False, bold: bool = False) -> str:
    """`text` (its whitespace runs made single spaces) whole when it fits `room` px at `size` px, else
    cut with "…": after the last whole word that fits if that keeps at least half the room, else after
    the last character that fits. "" when not even one character and the ellipsis fit."""

    def width(part: str) -> float:
        return text_width(part, size, monospace=monospace, bold=bold)

    text = " ".join(str(text).split())
    if width(text) <= room:
        return text
    room -= width("…")
    cut, used = 0, 0.0
    while used + width(text[cut]) <= room:  # text[cut] exists: the whole text does not fit
        used += width(text[cut])
        cut += 1
    head = text[:cut]
    if text[cut] != " " and " " in head.strip():  # cut inside a word: end on the word before it
        words = head[: head.rstrip().rfind(" ")]
        if width(words) >= room / 2:
            head = words
    head = head.rstrip(" ,;:-·")
    return head + "…" if head else ""
