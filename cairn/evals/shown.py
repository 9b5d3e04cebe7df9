"""What a person sees in a top 10: results that repeat an earlier result, and snippets they cannot read.

Recall counts whether the evidence is somewhere in the top 10; it says nothing of what the page looks
like. A coding session's top 10 can hold the same todo snapshot three times, or a snippet that reads
`\\*\\*much more musical\\*\\*`, `cd x\\nnpm test` or `{"id":"2","status":"completed"` — found, and
unreadable. Two figures per search group, over every question's top 10:

- **repeats**: results whose text (snippet or content, whitespace collapsed, case folded) is the text
  of a higher result of the same top 10;
- **unreadable**: snippets holding a backslash escape (`\\n`, `\\t`, `\\"`, `\\*`, any backslash
  before a punctuation mark or one of `nrtu`) or raw tool JSON (`{"`, `":`, `[tool_use`,
  `[tool_result`); `escapes` and `raw_json` count each cause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A backslash before a letter of a string escape or before punctuation: `\n`, `\"`, `\*`, `\\`, `\u00e9`.
# Not a backslash before other letters or digits (`C:\Users`, a regex `\d` a file holds is its text).
_ESCAPE = re.compile(r"\\[nrtu\"'*_`#\[\](){}<>|~.!+\-\\/]")
_RAW_JSON = re.compile(r'\{"|":|\[tool_use\b|\[tool_result\b')


def has_escape(snippet: str) -> bool:
    return _ESCAPE.search(snippet) is not None


def has_raw_json(snippet: str) -> bool:
    return _RAW_JSON.search(snippet) is not None


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Shown:
    """One question's top 10 as a person sees it: how many results, repeats and unreadable snippets."""

    results: int = 0
    repeats: int = 0
    escapes: int = 0
    raw_json: int = 0
    unreadable: int = 0


def shown(results: Sequence[tuple[str, str]]) -> Shown:
    """The figures of one ranking, each result given as (snippet, content), best first."""
    seen: set[str] = set()
    repeats = escapes = raw = unreadable = 0
    for snippet, content in results:
        texts = {_normal(snippet), _normal(content)} - {""}
        if texts & seen:
            repeats += 1
        seen |= texts
        escaped, json_like = has_escape(snippet), has_raw_json(snippet)
        escapes += escaped
        raw += json_like
        unreadable += escaped or json_like
    return Shown(len(results), repeats, escapes, raw, unreadable)


def summed(rankings: Iterable[Shown]) -> dict[str, float]:
    """The figures over many rankings: counts, and each as a share of the results shown."""
    total = Shown()
    for one in rankings:
        total = Shown(
            total.results + one.results,
            total.repeats + one.repeats,
            total.escapes + one.escapes,
            total.raw_json + one.raw_json,
            total.unreadable + one.unreadable,
        )
    figures: dict[str, float] = {"results": total.results}
    for name in ("repeats", "unreadable", "escapes", "raw_json"):
        count = getattr(total, name)
        figures[name] = count
        figures[f"{name}_share"] = round(count / total.results, 4) if total.results else 0.0
    return figures
