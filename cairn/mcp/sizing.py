"""Keeping every MCP reply within a coding agent's means: a character bound, and errors on one line.

Each character a tool returns lands in the agent's context, so no tool's reply may grow with the
store or with its arguments: `REPLY_CHARS` holds for every call, `limit` at its largest included.
`search` fills its page with results until the bound and asks for fewer when they do not fit, so its
cursor goes on from the first result left out; `search_content` fits its passages to a budget the
same way. `show` reads a long item in parts (`offset`), and a reply still too long — a hub idea's
hundreds of relations, a long list of open questions, a wide timeline — keeps as many entries of its
longest lists as fit and counts the rest in `omitted`, with a hint saying how to reach them. The
counts beside those lists (`question_count`, a span's `idea_count`) stay whole.

A caller's bad argument is the model's mistake to correct, so its error is one line naming the
argument, what was wrong and the value given — not pydantic's three-line text with a documentation
link, which costs tokens and teaches the model nothing. An argument the tool does not take is refused
the same way, with the names it does take: silently ignoring it would let the model believe a filter
it misspelled was applied.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

from pydantic import ValidationError

#: The most characters any tool returns, whatever its arguments.
REPLY_CHARS = 8_000
#: Room kept for the `omitted` counts and the hint a shortened reply adds.
OMITTED_ROOM = 300
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


def fitting(entries: list[Any], room: int) -> int:
    """How many of `entries`, from the first, fit in `room` characters of a JSON list."""
    used = 0
    for count, entry in enumerate(entries):
        used += size(entry) + 2
        if used > room:
            return count
    return len(entries)


def fit(
    data: dict[str, Any],
    max_chars: int = REPLY_CHARS,
    *,
    keep_last: Collection[str] = (),
    how: str | None = None,
) -> dict[str, Any]:
    """`data` with its longest lists shortened until it fits `max_chars`, and what each lost counted
    under `omitted` — with a `hint` saying `how` to get it, when given. Lists lose entries from their
    end — from their start for the keys in `keep_last`, whose last entries matter most (the ideas said
    just before an item). Lists are cut, never the fields that identify the item, and only by as much
    as the reply is over."""
    if size(data) <= max_chars:
        return data
    fitted = dict(data)
    omitted: dict[str, int] = dict(fitted.get("omitted") or {})
    while (excess := size(fitted) - max_chars) > 0:
        lists = sorted(
            ((size(value), key) for key, value in fitted.items() if isinstance(value, list) and value),
            reverse=True,
        )
        if not lists:
            break
        longest, key = lists[0]
        # Down to the next longest list at most, so that lists of a kind (before and after) share the cut.
        to_free = min(excess, longest - lists[1][0]) if len(lists) > 1 else excess
        entries = fitted[key]
        from_start = key in keep_last
        dropped = freed = 0
        for entry in entries if from_start else reversed(entries):
            dropped += 1
            freed += size(entry) + 2
            if freed >= to_free:
                break
        fitted[key] = entries[dropped:] if from_start else entries[: len(entries) - dropped]
        omitted[key] = omitted.get(key, 0) + dropped
        fitted["omitted"] = omitted
        if how is not None:
            fitted["hint"] = omitted_hint(omitted, how)
    return fitted


def omitted_hint(omitted: dict[str, int], how: str) -> str:
    """The line a shortened reply carries: what it left out, and `how` to get it."""
    counts = ", ".join(f"{count} {key}" for key, count in omitted.items())
    return f"{counts} left out to stay within {REPLY_CHARS:,} characters: {how}"


def one_line(tool: str, error: ValidationError) -> str:
    """A validation error as the one line a model can act on: each argument, what is wrong, what came."""
    problems = []
    for detail in error.errors(include_url=False):
        name = ".".join(str(part) for part in detail["loc"]) or "arguments"
        given = "" if detail["type"] == "missing" else f" (got {_quoted(detail.get('input'))})"
        problems.append(f"{name}: {detail['msg']}{given}")
    return f"{tool}: bad arguments: " + "; ".join(problems)


def unknown_arguments(tool: str, unknown: Iterable[str], accepted: Iterable[str]) -> str:
    """The one line refusing arguments `tool` does not take, with the ones it does."""
    names = ", ".join(sorted(unknown))
    takes = ", ".join(accepted) or "no arguments"
    return f"{tool}: bad arguments: {names}: not an argument of {tool}, which takes {takes}"


def _quoted(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"
