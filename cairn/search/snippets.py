"""A result's snippet and preview: its text as a person reads it, cut around the words that matched.

The snippet is plain text (`cairn.search.plain`), never markup: the matched words travel beside it
as character offsets (`Snippet.highlights`), so each face marks them its own way — bold in the
terminal, `<mark>` in the viewer — and no character of a transcript can pose as a marker. (Matched
words used to be `**bold**` inside the text, with the text's own `*` escaped as `\\*`: every face had to
undo it, and the JSON showed `\\*\\*much more musical\\*\\*`.)

A text that fits the budget (`SNIPPET_CHARS`) is shown whole. A longer one is cut around the passage
holding the most distinct key terms, a little context before its first match, at spaces: never inside
a word, `…` where something was left out. A tool result starts with its call (`$ npm run build → exit
1: …`, `Read src/app.py → …`, `cairn.search.plain.result_head`), a tool call with the call itself.

Only the page shown is cut, so this runs on at most `MAX_LIMIT` results a search; one compiled
pattern finds the key terms, and Python looks only at the matches, not at every word of a long text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from cairn.search.models import preview
from cairn.search.plain import Part, call_head, readable, result_head, within
from cairn.search.query import FtsQuery
from cairn.search.tiers import SUFFIXES, stem
from cairn.transcripts.origin import Origin

#: Characters of text a snippet shows (its head aside): about the 24 words it showed before.
SNIPPET_CHARS = 180
#: Context before the first matched word of a cut snippet.
LEAD_CHARS = 40
#: How far a cut looks for a space beyond the budget before it cuts a long token (a hash, a path).
SLACK_CHARS = 40
#: A preview reads at most this much of a long content whose passage was the snippet.
PREVIEW_SOURCE_CHARS = 2000
#: Stems at least this long match as prefixes (FTS5's `"term"*`); shorter ones only as whole words.
MIN_PREFIX_STEM = 3
ELLIPSIS = "…"
#: What a cut should not end on: a separator standing alone, whose other side was cut off (`Grep x —…`).
_DANGLING = re.compile(r"(?:\s+[—·→|:(\[{-]+)+\s*$")


@dataclass(frozen=True)
class Snippet:
    text: str
    highlights: list[tuple[int, int]] = field(default_factory=list)
    """(start, end) character offsets of the matched words in `text`."""


@lru_cache(maxsize=32)
def _matcher(terms: tuple[str, ...]) -> Matcher:
    """One compiled matcher per query, not per result."""
    return Matcher(terms)


class Matcher:
    """Where a query's key terms occur in a text.

    One compiled pattern finds them (a word that starts with a term's stem, as FTS5's `"term"*`
    prefix query does; stems shorter than `MIN_PREFIX_STEM` only as whole words with a plural or
    -ed/-ing ending).
    """

    def __init__(self, terms: tuple[str, ...]) -> None:
        self.terms = [stem(term) for term in terms]
        self._terms = re.compile(
            "|".join(f"(?<!\\w)({_term_pattern(term)})" for term in self.terms), re.IGNORECASE
        )

    def matches(self, text: str) -> list[tuple[int, int, int]]:
        """(start, end, term index) of every key-term occurrence, in order."""
        if not self.terms:
            return []
        return [(m.start(), m.end(), (m.lastindex or 1) - 1) for m in self._terms.finditer(text)]


def _term_pattern(term: str) -> str:
    if len(term) >= MIN_PREFIX_STEM:
        return re.escape(term) + r"\w*"
    return re.escape(term) + "(?:" + "|".join(SUFFIXES) + r")?(?!\w)"


@dataclass(frozen=True)
class ResultText:
    """How one result reads: its origin and call, when a message (`cairn.transcripts.origin`)."""

    origin: Origin | None = None
    tool: str | None = None
    argument: str | None = None
    failed: bool = False
    root: str | None = None
    """The project's directory: paths under it are shown relative to it in a call."""

    @property
    def _unmarked(self) -> Part:
        """What a passage from the middle of the message is, before any marker of its own."""
        if self.origin == "tool_call":
            return "input"
        return "output" if self.origin == "tool_result" else "prose"  # a subagent reports in prose

    def _read(self, text: str) -> tuple[str, str]:
        """(head, body) of `text` as a person reads it."""
        body = readable(text, self._unmarked)
        if self.origin == "tool_call":
            body = within(body, self.root) or ""
        return result_head(self.origin, self.tool, within(self.argument, self.root), self.failed, body)

    def shown(self, query: FtsQuery | None, matched: str, content: str) -> tuple[Snippet, str]:
        """The snippet of `matched` (the whole content, or the passage of it that matched) for `query`,
        and the preview of `content`: each text read once."""
        whole = self._read(content if matched == content else content[:PREVIEW_SOURCE_CHARS])
        part = whole if matched == content else self._read(matched)
        return self._snippet(query, *part), self._preview(*whole)

    def _snippet(self, query: FtsQuery | None, head: str, body: str) -> Snippet:
        if self.origin == "tool_call":
            # The text starts with the call in full: the head is shown only when the cut leaves it out.
            return cut(query, body, head, covered=len(call_head(self.tool, self.argument, limit=None)))
        return cut(query, body, head)

    def _preview(self, head: str, body: str) -> str:
        """At most `PREVIEW_CHARS` of the text as read, its head first, cut at a word."""
        if self.origin == "tool_call" or not head:
            return preview(body)
        return preview(f"{head} {body}")


def cut(query: FtsQuery | None, text: str, head: str = "", *, covered: int = 0) -> Snippet:
    """`text` (already readable) cut around its best passage for `query`, after `head`; the head is
    left out when the cut starts within the first `covered` characters, which say it already."""
    matcher = _matcher(query.terms) if query is not None else None
    matches = matcher.matches(text) if matcher is not None else []
    start, end = _window(text, matches)
    if start < covered:
        head, start = "", 0
    prefix = f"{head} " if head else ""
    before = ELLIPSIS if start > 0 else ""
    after = ELLIPSIS if end < len(text) else ""
    if after:
        end = start + len(_DANGLING.sub("", text[start:end]))  # no `Grep x —…`
    highlights = [(s, e) for s, e, _ in matcher.matches(head)] if matcher is not None and head else []
    offset = len(prefix) + len(before) - start
    highlights += [(s + offset, e + offset) for s, e, _ in matches if s >= start and e <= end]
    return Snippet(prefix + before + text[start:end] + after, highlights)


def _window(text: str, matches: list[tuple[int, int, int]]) -> tuple[int, int]:
    """The part of `text` to show: all of it when it fits, else the `SNIPPET_CHARS` around the
    matches holding the most distinct key terms (then the most matches; the earliest of equals),
    cut at spaces."""
    if len(text) <= SNIPPET_CHARS:
        return 0, len(text)
    anchor = _best(matches)
    first = matches[anchor][0] if matches else 0
    start = _word_start(text, max(0, first - LEAD_CHARS), first)
    limit = max(start + SNIPPET_CHARS, matches[anchor][1] if matches else 0)
    return start, _word_end(text, limit, matches[anchor][1] if matches else start)


def _best(matches: list[tuple[int, int, int]]) -> int:
    """The match whose window holds the most distinct terms, then the most matches."""
    best, best_key = 0, (-1, -1)
    last = 0
    for i, (start, _, _) in enumerate(matches):
        reach = start + SNIPPET_CHARS - LEAD_CHARS
        last = max(last, i)
        while last + 1 < len(matches) and matches[last + 1][1] <= reach:
            last += 1
        found = matches[i : last + 1]
        key = (len({term for _, _, term in found}), len(found))
        if key > best_key:
            best, best_key = i, key
    return best


def _word_start(text: str, at: int, anchor: int) -> int:
    """A start at or after `at` (at most `anchor`) where a word begins: after a space."""
    if at == 0:
        return 0
    if text[at - 1].isspace():
        return at
    space = text.find(" ", at, anchor)
    if space >= 0:
        return space + 1
    space = text.rfind(" ", max(0, at - SLACK_CHARS), at)
    return space + 1 if space >= 0 else anchor


def _word_end(text: str, at: int, floor: int) -> int:
    """An end at or before `at` (not before `floor`) where a word ends: before a space; past `at`
    to the next space when the word at `at` began before `floor`; hard at `at` beyond the slack."""
    if at >= len(text):
        return len(text)
    if text[at].isspace():
        return len(text[:at].rstrip())
    space = text.rfind(" ", floor, at)
    if space >= 0:
        return len(text[:space].rstrip())
    space = text.find(" ", at, at + SLACK_CHARS)
    return space if space >= 0 else at
