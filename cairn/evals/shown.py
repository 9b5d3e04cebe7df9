"""What a person sees in a top 10: results that repeat an earlier result, and snippets they cannot read.

Recall counts whether the evidence is somewhere in the top 10; it says nothing of what the page looks
like. A coding session's top 10 can hold the same todo snapshot three times, or a snippet that reads
`\\*\\*much more musical\\*\\*`, `cd x\\nnpm test` or `{"id":"2","status":"completed"` — found, and
unreadable. Two figures per search group, over every question's top 10:

- **repeats**: results whose text (snippet or content, whitespace collapsed, case folded) is the text
  of a higher result of the same top 10;
- **unreadable**: snippets holding a backslash escape (`\\n`, `\\t`, `\\"`, `\\*`, any backslash
  before a punctuation mark or one of `nrtu`) or raw tool JSON (`{"`, `":`, `[tool_use`,
  `[tool_result`) that the text as its author wrote it does not hold (`written`): an escape cairn
  added or failed to decode, a tool input shown as JSON. `escapes` and `raw_json` count each cause.
  What the text itself holds is shown as written and counted apart (`as_written`): a Go string's
  `"%s\\n"` in a file read, a regex `\\.worktrees` a search was given, `if __name__ == "__main__":`
  in an edited file, JSON quoted in backticks in a reply or an idea. JSON outside backticks in prose
  (a reply or an idea pasting a tool call) stays unreadable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cairn.transcripts.origin import fields_of

# A backslash before a letter of a string escape or before punctuation: `\n`, `\"`, `\*`, `\\`, `\u00e9`.
# Not a backslash before other letters or digits (`C:\Users`, a regex `\d` a file holds is its text).
_ESCAPE = re.compile(r"\\[nrtu\"'*_`#\[\](){}<>|~.!+\-\\/]")
_RAW_JSON = re.compile(r'\{"|":|\[tool_use\b|\[tool_result\b')
_MARKER = re.compile(r"\[tool_(?:use|result)\b")
#: JSON's own marks: an object opening on a key, a key followed by a value (`"a": "b"`, `"n": 1`),
#: not a quoted phrase before a colon in prose (`"peaceful water": pentatonic scale`).
_JSON_MARK = re.compile(r'\{"|":\s*(?:["{\[\d-]|true\b|false\b|null\b)')
#: A rendered tool input, one line: `[tool_use Bash] command="ls -la" description="…"`.
_RENDERED_CALL = re.compile(r"\[tool_use [^\]\n]*\] ?([^\n]*)")
_RESULT_MARK = re.compile(r"\[tool_result [^\]\n]*\] ?")
_CODE_SPAN = re.compile(r"`[^`]+`")
_DOUBLED = re.compile(r'\\([\\"])')
_TOOL_ORIGINS = frozenset({"tool_call", "tool_result"})


def has_escape(snippet: str) -> bool:
    return _ESCAPE.search(snippet) is not None


def has_raw_json(snippet: str) -> bool:
    return _RAW_JSON.search(snippet) is not None


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def written(content: str) -> str:
    """A stored text as its author wrote it: each rendered tool input read back as its decoded string
    values (a list or object value, such as a todo list, is left out: shown as JSON it is unreadable),
    cairn's `[tool_…]` markers left out, whitespace collapsed."""

    def values(call: re.Match[str]) -> str:
        return " ".join(v for v in fields_of(call.group(1)).values() if not v.startswith(("[", "{")))

    return " ".join(_RESULT_MARK.sub("", _RENDERED_CALL.sub(values, content)).split())


def _tokens(snippet: str, pattern: re.Pattern[str]) -> list[str]:
    """Each match of `pattern` in `snippet` with the rest of the words it touches (from the space
    before it to the space after it, a cut's `…` dropped): what to look for in the text as written."""
    words = []
    for m in pattern.finditer(snippet):
        start, end = snippet.rfind(" ", 0, m.start()) + 1, snippet.find(" ", m.end())
        words.append(snippet[start : len(snippet) if end < 0 else end].strip("…"))
    return words


def causes(snippet: str, content: str, origin: str | None) -> tuple[bool, bool, bool]:
    """(escaped, raw JSON, as written) of one snippet of `content`: whether it holds an escape, or raw
    JSON, that the text as written does not, and whether it holds either only as the text wrote it.
    Tool output and input are as written wherever the text holds them; JSON in prose only inside a
    code span."""
    if not (_ESCAPE.search(snippet) or _MARKER.search(snippet) or _JSON_MARK.search(snippet)):
        return False, False, False
    text = written(content)
    spans = [" ".join(span.split()) for span in _CODE_SPAN.findall(text)]
    # A file written with its escapes doubled (`print(f\\"\\\\n…`) is shown decoded once: no escape added.
    once = _DOUBLED.sub(r"\1", text)
    escaped = any(token not in text and token not in once for token in _tokens(snippet, _ESCAPE))
    in_place = spans if origin not in _TOOL_ORIGINS else [text, once]
    json_like = _MARKER.search(snippet) is not None or any(
        not any(token in place for place in in_place) for token in _tokens(snippet, _JSON_MARK)
    )
    return escaped, json_like, not (escaped or json_like)


@dataclass(frozen=True)
class Shown:
    """One question's top 10 as a person sees it: how many results, repeats and unreadable snippets,
    and the snippets whose escapes or JSON are the text's own (`as_written`)."""

    results: int = 0
    repeats: int = 0
    escapes: int = 0
    raw_json: int = 0
    unreadable: int = 0
    as_written: int = 0


def shown(results: Sequence[tuple[str, str, str | None]]) -> Shown:
    """The figures of one ranking, each result given as (snippet, content, origin), best first; origin
    is a message's (`cairn.transcripts.origin`), None for an idea or a span."""
    seen: set[str] = set()
    figures = dict.fromkeys(("repeats", "escapes", "raw_json", "unreadable", "as_written"), 0)
    for snippet, content, origin in results:
        texts = {_normal(snippet), _normal(content)} - {""}
        figures["repeats"] += bool(texts & seen)
        seen |= texts
        escaped, json_like, as_written = causes(snippet, content, origin)
        figures["escapes"] += escaped
        figures["raw_json"] += json_like
        figures["unreadable"] += escaped or json_like
        figures["as_written"] += as_written
    return Shown(len(results), **figures)


def summed(rankings: Iterable[Shown]) -> dict[str, float]:
    """The figures over many rankings: counts, and each as a share of the results shown."""
    names = ("repeats", "unreadable", "escapes", "raw_json", "as_written")
    totals = dict.fromkeys(("results", *names), 0)
    for one in rankings:
        for name in totals:
            totals[name] += getattr(one, name)
    figures: dict[str, float] = {"results": totals["results"]}
    for name in names:
        figures[name] = totals[name]
        figures[f"{name}_share"] = round(totals[name] / totals["results"], 4) if totals["results"] else 0.0
    return figures
