"""What search takes and returns: the request, one result with its score parts, a page of results.

These are the contracts every face shares — the CLI prints them, the daemon sends them over its socket,
the MCP server hands them to the coding agent — so their field names are the JSON users see. Item ids
are strings that name their kind: ideas are plain numbers (`"123"`, what hooks show as `#123`), topic
spans `"s12"`, messages `"m456"`, and the file chunks `search_content` returns `"c78"` (only `show`
takes those); `parse_item_id` also accepts `#123`, `i123` and `idea:123`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from cairn.errors import Refusal
from cairn.store.vocab import Intent
from cairn.transcripts.origin import Origin
from cairn.transcripts.redact import redact

Kind = Literal["idea", "span", "message"]
#: What an id can name: the kinds search ranks, and file chunks (found by `search_content`, shown by `show`).
ItemKind = Literal["idea", "span", "message", "chunk"]
KindFilter = Literal["ideas", "spans", "messages", "all"]
Mode = Literal["hybrid", "semantic", "keyword"]
MatchType = Literal["keyword", "semantic", "both"]

PREVIEW_CHARS = 200
MAX_QUERY_CHARS = 10_000
MAX_LIMIT = 100

KIND_OF_FILTER: dict[str, tuple[Kind, ...]] = {
    "ideas": ("idea",),
    "spans": ("span",),
    "messages": ("message",),
    "all": ("idea", "span", "message"),
}

_PREFIX: dict[ItemKind, str] = {"idea": "", "span": "s", "message": "m", "chunk": "c"}
_ID = re.compile(
    r"^\s*(?:#|i|idea:?|(?P<span>s|span:?)|(?P<message>m|msg:?|message:?)|(?P<chunk>c|chunk:?))?"
    r"(?P<n>\d{1,18})\s*$",
    re.I,
)


class BadItemIdError(Refusal):
    """An item id that names no kind cairn knows."""


def item_id(kind: ItemKind, row_id: int) -> str:
    """The public id of a row: `123` (idea), `s12` (span), `m456` (message), `c78` (file chunk)."""
    return f"{_PREFIX[kind]}{row_id}"


def parse_item_id(value: str | int) -> tuple[ItemKind, int]:
    """`(kind, row id)` of a public id; raises `BadItemIdError` with the accepted forms."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise BadItemIdError(f"no item has id {value}")
        return "idea", value
    match = _ID.match(str(value))
    if match is None:
        raise BadItemIdError(
            f"{str(value)[:40]!r} is not an item id: use 123 or #123 for an idea, s12 for a topic span, "
            "m456 for a message, c78 for a file chunk"
        )
    kind: ItemKind = (
        "span" if match["span"] else "message" if match["message"] else "chunk" if match["chunk"] else "idea"
    )
    return kind, int(match["n"])


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (with `…` when cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"


class SearchRequest(BaseModel):
    """One search. With `continuation` set, the query and filters come from the token instead."""

    query: str = Field(default="", max_length=MAX_QUERY_CHARS * 4)
    mode: Mode = "hybrid"
    kind: KindFilter = "all"
    project: str | None = Field(default=None, description="Project path or name.")
    session: str | None = None
    intents: list[Intent] = Field(default_factory=list, description="Only ideas with these intents.")
    origins: list[Origin] = Field(
        default_factory=list,
        description="Only messages from these origins (prompt, reply, tool_call, tool_result, subagent, "
        "summary, system).",
    )
    since: datetime | None = Field(default=None, description="Only items said at or after this time.")
    until: datetime | None = Field(default=None, description="Only items said before this time.")
    include_superseded: bool = False
    min_score: float | None = Field(default=None, ge=0, le=1, description="Default: search_min_score.")
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    continuation: str | None = None

    @field_validator("query")
    @classmethod
    def _clip(cls, value: str) -> str:
        # A pasted log can be any size; the first 10K characters say what it is about.
        return value[:MAX_QUERY_CHARS]


class ScoreParts(BaseModel):
    """What a score is made of, each in [0, 1] (None: that signal did not see the item)."""

    bm25: float | None = Field(default=None, description="Keyword match strength (phrase 1, near 0.85...).")
    vector: float | None = Field(
        default=None, description="Semantic similarity, calibrated against this query's other candidates."
    )
    fusion: float = Field(
        description="Relevance: keyword_share x keyword part + the rest x vector part (README 'Search')."
    )
    recency: float = Field(description="0.5 ** (age / half-life).")
    importance: float | None = Field(default=None, description="The idea's importance (ideas only).")
    usage: int = Field(default=0, description="How often the item was returned before.")
    boost: float = Field(default=1.0, description="Intent/kind factor times the superseded penalty.")
    learned: float | None = Field(
        default=None,
        description="Weight of the learned search association that lifted this idea (relevance x (1 + it)).",
    )
    answers: str | None = Field(
        default=None,
        description="The question idea whose place this answer took: the question matched the query "
        "better than its answer does (README 'Search').",
    )


class SessionInfo(BaseModel):
    id: str
    project: str | None = None
    project_name: str | None = None
    started_at: str | None = None
    topic: str | None = Field(default=None, description="The topic span the item falls in.")
    topic_id: str | None = None


class SupersededBy(BaseModel):
    id: str
    preview: str
    said_at: str | None = None


class SourceLocation(BaseModel):
    file: str | None = None
    """The transcript, redacted: the store keeps its real path to read it again, and Claude Code names
    its directory after the session's cwd, so a token in the cwd is in it (every face shows this)."""
    line: int | None = None

    @field_validator("file")
    @classmethod
    def _redacted(cls, value: str | None) -> str | None:
        return None if value is None else redact(value)


class ExchangeEnd(BaseModel):
    """One end of an exchange: a message's id and its first words."""

    id: str
    preview: str


class Exchange(BaseModel):
    """The turn a result sits in (`cairn.search.exchanges`): the person's prompt that started it and the
    assistant's reply that ended it; either may be missing (a turn before the first prompt, a turn cut
    off before any reply)."""

    prompt: ExchangeEnd | None = None
    reply: ExchangeEnd | None = None


class SearchResult(BaseModel):
    id: str
    kind: Kind
    intent: str | None = Field(default=None, description="Idea intent; a message's role; None for spans.")
    content: str = Field(description="The whole text, as stored (a tool call or result in its rendering).")
    preview: str = Field(
        description="At most 200 characters of the text as a person reads it, plain (no markdown, escapes or "
        "tool JSON); a tool result starts with its call, `$ npm test → exit 1: ...`."
    )
    score: float
    scores: ScoreParts
    match: MatchType
    snippet: str = Field(
        description="The best-matching passage as plain text, cut at word boundaries (… where cut); a tool "
        "result or call starts with the call, `$ npm run build → exit 1: ...`, `Read src/app.py → ...`. "
        "The matched words are in `highlights`."
    )
    highlights: list[tuple[int, int]] = Field(
        default_factory=list,
        description="The matched words of `snippet`: [start, end) character offsets into it.",
    )
    said_at: str | None = None
    session: SessionInfo | None = None
    superseded: bool = False
    superseded_by: SupersededBy | None = None
    answered_at: str | None = Field(default=None, description="A question or problem: when it was answered.")
    completed_at: str | None = Field(default=None, description="A todo: when it was done.")
    declined_at: str | None = Field(
        default=None,
        description="When the person declined the idea (a suggestion turned down): kept as history, left "
        "out of recall and open items.",
    )
    related: int = Field(default=0, description="Ideas related to this one (for spans: ideas in it).")
    origin: Origin | None = Field(
        default=None,
        description="A message: the person's prompt, the assistant's reply, a tool call, a tool result, a "
        "subagent's report, a compaction summary or system output. None for ideas and spans.",
    )
    call: str | None = Field(
        default=None, description="A tool call, result or subagent report: its call, e.g. `Bash: npm test`."
    )
    failed: bool = Field(default=False, description="A tool result: the call failed.")
    source: SourceLocation = Field(default_factory=SourceLocation)
    learned_from: str | None = Field(
        default=None,
        description="When a learned search association lifted this idea: the earlier weak search's query, "
        "after which the agent found the file the idea is about.",
    )
    repeats: int = Field(
        default=1,
        ge=1,
        description="How many times this text was said within the search's filters: the same todo list, "
        "file read or command output stored again is one result (README 'Search').",
    )
    last_said_at: str | None = Field(
        default=None, description="With repeats > 1: when the last of them was said."
    )
    exchange: Exchange | None = Field(
        default=None,
        description="A message or idea: the prompt that started its turn and the reply that ended it.",
    )


class SearchPage(BaseModel):
    query: str
    mode: Mode
    results: list[SearchResult]
    total: int = Field(description="Results over all pages (stable across pages).")
    next_token: str | None = Field(default=None, description="Pass as `continuation` for the next page.")
    vector_skipped: bool = Field(default=False, description="Keyword matches were decisive.")
    vectors_unavailable: str | None = Field(
        default=None,
        description="Why meaning took no part though the mode asked for it (no vector index here, the "
        "vector store failed): the results are keyword matches only. None when vectors were searched, "
        "skipped as decisive, or the mode is keyword.",
    )
    notices: list[str] = Field(default_factory=list)
    took_ms: float = 0.0
