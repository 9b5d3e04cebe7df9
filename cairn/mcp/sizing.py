"""Keeping every MCP reply within a coding agent's means: a character bound, and errors on one line.

Each character a tool returns lands in the agent's context, so no tool's reply may grow with the
store. `search` and `search_content` are bounded by their pages (the op fits `search_content`'s
passages to a budget, and the cursor goes on from there). `show` reads a long item in parts
(`offset`), and a reply still too long — a hub idea's hundreds of relations, a long list of open
questions — keeps the first entries of its longest lists and says how many it left out, in
`omitted`. The counts beside those lists (`question_count`, a span's `idea_count`) stay whole.

A caller's bad argument is the model's mistake to correct, so its error is one line naming the
argument, what was wrong and the value given — not pydantic's three-line text with a documentation
link, which costs tokens and teaches the model nothing.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

#: The most characters any tool returns with its default arguments.
REPLY_CHARS = 8_000
#: The part of a long item's text one `show` reply carries; `next_offset` reads on.
SHOW_TEXT_CHARS = 6_000
#: What `search_content` asks its passages to fit in, leaving room for its statistics and hints.
CONTENT_PASSAGE_CHARS = 6_000
#: A value quoted back in a validation error is cut to this (it may be a 40K-character query).
QUOTED_CHARS = 60


def size(data: Any) -> int:
    """The characters `data` takes as the JSON text a tool returns."""
    return len(json.dumps(data, ensure_ascii=False))


def text_part(item: dict[str, Any], offset: int, max_chars: int = SHOW_TEXT_CHARS) -> dict[str, Any]:
    """`item` with its `content` from `offset`, at most `max_chars` of it, and where the rest starts."""
    content = item.get("content")
    if not isinstance(content, str) or (offset == 0 and len(content) <= max_chars):
        return item
    part = content[offset : offset + max_chars]
    end = offset + len(part)
    bounded = {**item, "content": part, "content_chars": len(content), "content_offset": offset}
    if end < len(content):
        bounded["next_offset"] = end
    return bounded


def fit(data: dict[str, Any], max_chars: int = REPLY_CHARS) -> dict[str, Any]:
    """`data` with its longest lists shortened from the end until it fits `max_chars`, and what each
    lost counted under `omitted`. Lists are cut, never the fields that identify the item."""
    if size(data) <= max_chars:
        return data
    fitted = dict(data)
    omitted: dict[str, int] = dict(fitted.get("omitted") or {})
    while size(fitted) > max_chars:
        lists = [(size(value), key) for key, value in fitted.items() if isinstance(value, list) and value]
        if not lists:
            break
        _, key = max(lists)
        entries = fitted[key]
        keep = len(entries) // 2
        fitted[key] = entries[:keep]
        omitted[key] = omitted.get(key, 0) + len(entries) - keep
        fitted["omitted"] = omitted
    return fitted


def one_line(tool: str, error: ValidationError) -> str:
    """A validation error as the one line a model can act on: each argument, what is wrong, what came."""
    problems = []
    for detail in error.errors(include_url=False):
        name = ".".join(str(part) for part in detail["loc"]) or "arguments"
        given = "" if detail["type"] == "missing" else f" (got {_quoted(detail.get('input'))})"
        problems.append(f"{name}: {detail['msg']}{given}")
    return f"{tool}: bad arguments: " + "; ".join(problems)


def _quoted(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"
