"""The MCP server `cairn mcp` runs: cairn's memory tools, and what the model sees of their results.

Results follow progressive disclosure, because every token a tool returns is a token of the agent's
context: `search` answers with one compact line per result (id, kind, intent, date, score, preview, and
for a message its origin and call) and the agent calls `show(id)` for the few worth reading in full, or
`timeline(id)` for what was said around one. `search_content` is the exception by design:
it returns the passages' text at once, since its caller wants the passage itself, not a pointer to it.
No reply passes `sizing.REPLY_CHARS` (8K characters), whatever its arguments: pages end early and
say how many results they left out, long texts come in parts, and bad or unknown arguments are
refused in one line (`sizing`).

The model reads parameter descriptions, not docstring `Args:` (the SDK ignores those), so every
parameter carries an `Annotated[..., Field(description=...)]`; tool docstrings are the tool
descriptions the model sees. Each tool returns JSON text only — no structured copy beside it, which
some clients would put in the context a second time.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Tool, ToolAnnotations
from pydantic import Field, ValidationError

from cairn import __version__
from cairn.config import Settings
from cairn.dates import ACCEPTED, DateError, parse_when_iso
from cairn.mcp.backend import Backend
from cairn.mcp.sizing import (
    CONTENT_PASSAGE_CHARS,
    OMITTED_ROOM,
    REPLY_CHARS,
    fit,
    fitting,
    omitted_hint,
    one_line,
    size,
    text_part,
    unknown_arguments,
)
from cairn.store.vocab import Intent
from cairn.transcripts.origin import Origin

SHOW_HINT = "call show(id) for the full item, timeline(id) for what was said around it"
NEXT_HINT = "pass next_cursor as cursor for more"
EMPTY_HINT = "nothing matched: try other words, mode semantic, or fewer filters"
LONG_QUERY_HINT = "the query is too long to page through: a shorter one gives a next_cursor"
OPEN_OMITTED_HINT = "the oldest were left out; pass project or session to narrow the list"
TIMELINE_OMITTED_HINT = (
    "the farthest from the item were left out; timeline(id) of the first idea before it, or of the "
    "last after it, goes on from there"
)
SHOW_OMITTED_HINT = "the last entries of each list were left out; timeline(id) lists the ideas said around it"
CUT_HINT = "a passage with omitted_chars was cut to fit: show(chunk_id) returns all of it"

INSTRUCTIONS = """\
cairn remembers this user's past coding-agent sessions: the decisions, conclusions, questions, \
problems, solutions, todos and context said in them (ideas), the topics sessions went through (spans), \
and the messages themselves.

Search it before re-deciding or re-investigating something that may have come up before: search(query) \
returns compact results; call show(id) for one in full and timeline(id) for what was said around it. \
open_questions lists what is still unanswered or undone. search_content finds passages — of past sessions \
and of the project files read in them — by concepts and exact identifiers and returns their full text; when \
a search finds nothing useful and you find the answer by other means, cairn learns from that for next \
time. Pass your working directory as `project` to stay in the \
current project. An idea marked superseded was replaced by a later one: prefer the replacement."""

#: A `search` limit at most this large is read once: its page fits `REPLY_CHARS` in practice.
FITS_ANYWAY = 10
#: Room for a cursor a shortened search page gains: its request and the ids returned, compressed.
CURSOR_ROOM = 1_000

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

ItemId = Annotated[
    str,
    Field(
        description="An item id as results give it: 123 for an idea, s12 for a topic span, m456 for a "
        "message, c78 for a file chunk from search_content (show only).",
        min_length=1,
        max_length=64,
    ),
]
Project = Annotated[
    str | None,
    Field(
        description="Only this project: its path or name. Pass your current working directory to stay in "
        "the project you are working on; leave out for all projects."
    ),
]
Session = Annotated[str | None, Field(description="Only this session id (as show() reports it).")]
Cursor = Annotated[
    str | None,
    Field(
        description="The next_cursor of an earlier answer of this tool, for its next page (the query "
        "and filters come from the cursor)."
    ),
]

log = logging.getLogger("cairn.mcp")


def cairn_version() -> str:
    """cairn's installed version, as the server reports it in its initialize result."""
    try:
        return importlib.metadata.version("cairn-memory")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return __version__


def _when(value: str | None, what: str) -> str | None:
    """A `since`/`until` argument by cairn's one date parser, as ISO; a bad one is a tool error."""
    try:
        return parse_when_iso(value, what)
    except DateError as exc:
        raise ToolError(str(exc)) from None


def _text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


def _pruned(value: Any) -> Any:
    """`value` without null fields and empty lists/objects: what does not apply costs tokens, says nothing."""
    if isinstance(value, dict):
        pruned = {key: _pruned(item) for key, item in value.items()}
        return {key: item for key, item in pruned.items() if item is not None and item != [] and item != {}}
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    return value


def compact_result(result: dict[str, Any]) -> dict[str, Any]:
    """One search result as the model first sees it: enough to decide whether to `show` it."""
    said_at = result.get("said_at")
    compact: dict[str, Any] = {
        "id": result["id"],
        "kind": result["kind"],
        "intent": result.get("intent"),
        "date": said_at[:10] if isinstance(said_at, str) else None,
        "score": round(float(result["score"]), 2),
        "preview": result["preview"],
    }
    # What a message is (a prompt, a reply, a tool call or result…) and its call, only when it has one.
    for key in ("origin", "call"):
        if result.get(key):
            compact[key] = result[key]
    if result.get("failed"):
        compact["failed"] = True
    if result.get("superseded"):
        compact["superseded"] = True
        replacement = result.get("superseded_by")
        if isinstance(replacement, dict) and replacement.get("id"):
            compact["superseded_by"] = replacement["id"]
    if int(result.get("repeats") or 1) > 1:
        # The same text said again (a todo list, a file read, a command's output): one result.
        compact["repeats"] = int(result["repeats"])
        last = result.get("last_said_at")
        compact["last_date"] = last[:10] if isinstance(last, str) else None
    reply = ((result.get("exchange") or {}).get("reply") or {}).get("id")
    if reply and reply != result["id"]:
        compact["reply"] = reply  # the reply that ended this result's turn: what came of it
    return compact


def compact_page(page: dict[str, Any], omitted: int = 0) -> dict[str, Any]:
    """A search page with compact results, its total, next cursor, notices and what to do next;
    `omitted` results the caller asked for were left out to keep the reply within its bound."""
    results = [compact_result(result) for result in page["results"]]
    hints = [SHOW_HINT if results else EMPTY_HINT]
    if omitted:
        hints.append(omitted_hint({"results": omitted}, "pass next_cursor as cursor for them"))
    elif page.get("next_token"):
        hints.append(NEXT_HINT)
    compact = {
        "results": results,
        "total": page["total"],
        "next_cursor": page.get("next_token"),
        "notices": page.get("notices") or [],
        "hint": "; ".join(hints),
    }
    if omitted:
        compact["omitted"] = {"results": omitted}
    return compact


def content_page(result: dict[str, Any]) -> dict[str, Any]:
    """A search_content answer with the paging every tool uses: `next_cursor` instead of the op's
    `continuation` object, and hints that name it (and say how to read a passage cut to fit)."""
    page = _pruned(result)
    continuation = page.pop("continuation", None) or {}
    page["next_cursor"] = continuation.get("next_token") if continuation.get("has_more") else None
    hints = page.get("navigation_hints")
    if isinstance(hints, dict):
        actions = [
            str(action).replace("Use continuation_token", "Pass next_cursor as cursor")
            for action in hints.get("next_actions") or []
        ]
        if any(passage.get("omitted_chars") for passage in page.get("results") or []):
            actions.insert(0, CUT_HINT)
        page["navigation_hints"] = {**hints, "next_actions": actions}
    return page


class _Server(MCPServer):
    """The SDK's server, with a caller's invalid arguments refused in one line (`sizing.one_line`).

    The SDK validates arguments with a pydantic model that ignores names it does not declare, and
    offers no setting to forbid them; so the names are checked here, against the input schema the
    client was given, and that schema says `additionalProperties: false` so a client can know it.
    """

    #: Each tool's argument names, read from the schemas at the first call (`_accepted`).
    _accepted_by_tool: dict[str, list[str]] | None = None

    async def list_tools(self) -> list[Tool]:
        return [
            tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
            for tool in await super().list_tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        accepted = await self._accepted(name)
        if accepted is not None and (unknown := set(arguments) - set(accepted)):
            raise ToolError(unknown_arguments(name, unknown, accepted))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(one_line(name, exc.__cause__)) from exc.__cause__
            raise

    async def _accepted(self, name: str) -> list[str] | None:
        """The argument names tool `name` declares, in their order; None for a tool it does not have
        (the SDK answers that one). Read from the tools' schemas once: they are all registered before
        the server answers its first call."""
        accepted = self._accepted_by_tool
        if accepted is None:
            accepted = {
                tool.name: list(tool.input_schema.get("properties") or {})
                for tool in await super().list_tools()
            }
            self._accepted_by_tool = accepted
        return accepted.get(name)


def build_server(backend: Backend, *, learner_stats: bool | None = None) -> MCPServer:
    """The MCP server with cairn's tools, answering through `backend`.

    `learner_stats` (default: the `mcp_learner_stats` setting) offers that admin tool too: about a
    thousand characters of counters in every session's tool list are a cost the coding agent pays
    for a tool it has no use for, so it is off unless someone asks for it.
    """
    if learner_stats is None:
        learner_stats = backend.settings.mcp_learner_stats
    server = _Server("cairn", version=cairn_version(), instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """`server.tool` with the docstring dedented into the description the model reads (Python
        3.11 keeps a docstring's indentation, which would cost tokens and look broken)."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            described = inspect.cleandoc(fn.__doc__ or "")
            register_tool = server.tool(
                description=described, annotations=READ_ONLY, structured_output=False, **options
            )
            return register_tool(fn)

        return register

    @tool()
    async def search(
        query: Annotated[
            str,
            Field(
                description="What to look for: words, a question, an identifier or a pasted error message. "
                "May be empty when `cursor` is given.",
                max_length=40_000,
            ),
        ] = "",
        mode: Annotated[
            Literal["hybrid", "semantic", "keyword"],
            Field(
                description="hybrid (default): keywords and meaning combined; semantic: meaning only, for "
                "paraphrases and concepts; keyword: exact words, for identifiers, error codes, file names."
            ),
        ] = "hybrid",
        kind: Annotated[
            Literal["ideas", "spans", "messages", "all"],
            Field(
                description="ideas: decisions, conclusions, questions, problems, solutions, todos, context; "
                "spans: topics a session went through; messages: what was said verbatim; all (default)."
            ),
        ] = "all",
        project: Project = None,
        session: Session = None,
        intents: Annotated[
            list[Intent] | None,
            Field(description='Only ideas with these intents, e.g. ["decision", "problem"].'),
        ] = None,
        origins: Annotated[
            list[Origin] | None,
            Field(
                description="Only messages from these origins: prompt (the person's), reply (the "
                'assistant\'s), tool_call, tool_result, subagent, summary, system; e.g. ["prompt", "reply"].'
            ),
        ] = None,
        since: Annotated[
            str | None,
            Field(description=f"Only items said at or after this time: {ACCEPTED}."),
        ] = None,
        until: Annotated[
            str | None,
            Field(description="Only items said before this time, in the same forms as since."),
        ] = None,
        include_superseded: Annotated[
            bool,
            Field(description="Also return ideas replaced by later ones (marked superseded). Default false."),
        ] = False,
        limit: Annotated[
            int,
            Field(
                description="Results per page, 1 to 100; a page also ends when it reaches about 8K "
                "characters (omitted says how many it left out).",
                ge=1,
                le=100,
            ),
        ] = 10,
        cursor: Cursor = None,
    ) -> str:
        """Search cairn's memory of past sessions; compact results, best first.

        Each result is {id, kind, intent, date, score, preview}; a message also has its origin, and a
        tool call or result its call (`Bash: npm test`, failed: true when it failed). A text said several
        times is one result with repeats and last_date; reply is the id of the reply that ended the
        result's turn (what came of it). Call show(id) for the full item.
        """
        args = {
            "query": query,
            "mode": mode,
            "kind": kind,
            "project": project,
            "session": session,
            "intents": intents,
            "origins": origins,
            "since": _when(since, "since"),
            "until": _when(until, "until"),
            "include_superseded": include_superseded,
            "continuation": cursor,
        }
        args = {k: v for k, v in args.items() if v is not None}

        async def page_of(count: int, record_usage: bool) -> dict[str, Any]:
            return await backend.call("search", {**args, "limit": count, "record_usage": record_usage})

        return _text(await _bounded_search(page_of, limit))

    @tool()
    async def show(
        id: ItemId,
        offset: Annotated[
            int,
            Field(
                description="Where in the content to start, for the rest of a long item: the next_offset "
                "of an earlier show of it. Default 0.",
                ge=0,
            ),
        ] = 0,
    ) -> str:
        """One idea, topic span, message or file chunk in full: content, when and where it was said, what
        superseded or answered it, its relations and entities (a span: its ideas; a message: the ideas taken
        from it; a file chunk: its file, lines, keywords and the searches that learned to find it). A long
        content comes in parts: next_offset says where the rest starts."""
        # An id the agent expands may be one recall injected: that injection was worth its tokens.
        item = _pruned(await backend.call("show", {"id": id, "record_hit": offset == 0}))
        return _text(fit(text_part(item, offset), how=SHOW_OMITTED_HINT))

    @tool()
    async def timeline(
        id: ItemId,
        before: Annotated[
            int, Field(description="How many ideas said just before the item, 0 to 50.", ge=0, le=50)
        ] = 5,
        after: Annotated[
            int, Field(description="How many ideas said just after it, 0 to 50.", ge=0, le=50)
        ] = 5,
    ) -> str:
        """The ideas said just before and after an item, in its project (or session), oldest first: the
        context a search result came from."""
        result = await backend.call("timeline", {"id": id, "before": before, "after": after})
        # The ideas nearest the item are the context asked for: `before` is oldest first, so it
        # loses its first entries.
        return _text(fit(_pruned(result), keep_last={"before"}, how=TIMELINE_OMITTED_HINT))

    @tool()
    async def open_questions(
        project: Project = None,
        session: Session = None,
        include_todos: Annotated[
            bool, Field(description="Also list todos not yet done (default true).")
        ] = True,
        limit: Annotated[int, Field(description="At most this many of each, 1 to 200.", ge=1, le=200)] = 50,
    ) -> str:
        """Questions, problems and todos their sessions left open — raised at a session's end and not
        answered, put off on purpose (state "deferred"), or failing until the work moved on (state
        "given_up") — newest first; other failed tool calls are not listed. A long list
        keeps its newest entries and counts the rest in omitted; pass project or session to narrow it."""
        args = {"project": project, "session": session, "include_todos": include_todos, "limit": limit}
        result = await backend.call("open_questions", {k: v for k, v in args.items() if v is not None})
        return _text(fit(_pruned(result), how=OPEN_OMITTED_HINT))

    @tool()
    async def search_content(
        semantic_concepts: Annotated[
            list[str] | None,
            Field(
                description='Concepts to match by meaning, e.g. ["retry with backoff", "rate limits"]. '
                "Give this, exact_terms, or both."
            ),
        ] = None,
        exact_terms: Annotated[
            list[str] | None,
            Field(
                description="Terms that must appear as written: identifiers, versions, error codes, e.g. "
                '["useState", "HTTP 429"]. Each one found boosts a passage\'s score.'
            ),
        ] = None,
        min_score: Annotated[
            float | None, Field(description="Leave out passages scoring below this (0 to 1).", ge=0, le=1)
        ] = None,
        limit: Annotated[
            int | None,
            Field(
                description="At most this many passages per page, 1 to 50 (default 10); a page also ends "
                "when its text reaches about 6K characters.",
                ge=1,
                le=50,
            ),
        ] = None,
        cursor: Cursor = None,
        project: Project = None,
        session: Session = None,
    ) -> str:
        """Find passages of past sessions and of the project files you touched (ids c<n>, with their file
        path and lines) by concepts and exact terms; returns their text with scores, so no follow-up call
        is needed. A long passage is cut to fit the page (omitted_chars says by how much)."""
        args = {
            "semantic_concepts": semantic_concepts,
            "exact_terms": exact_terms,
            "min_score": min_score,
            "limit": limit,
            "continuation_token": cursor,
            "project": project,
            "session": session,
        }
        args = {k: v for k, v in args.items() if v is not None}
        budget = CONTENT_PASSAGE_CHARS
        page = content_page(await backend.call("search_content", {**args, "max_chars": budget}))
        # Statistics and hints are short, but a page of long paths could still pass the bound: ask
        # again with less room for passages (rare; the search is read-only apart from usage counts).
        while size(page) > REPLY_CHARS and budget > 1_000:
            budget = max(1_000, budget - (size(page) - REPLY_CHARS) - 200)
            page = content_page(await backend.call("search_content", {**args, "max_chars": budget}))
        return _text(page)

    if learner_stats:
        _learner_stats_tool(tool, backend)
    return server


async def _bounded_search(
    page_of: Callable[[int, bool], Awaitable[dict[str, Any]]], limit: int
) -> dict[str, Any]:
    """The compact search page of up to `limit` results that fits `REPLY_CHARS`.

    Results that do not fit are asked for again with a smaller limit rather than cut from the page:
    the cursor records the results a page returned, so a cut page's cursor would skip the ones left
    out. A page that may not fit is first read without counting its results as used, since only
    what the agent is shown is a use; the default page fits, so it is read once.
    """
    counted = limit <= FITS_ANYWAY
    reply = compact_page(await page_of(limit, counted))
    asked = len(reply["results"])
    for _ in range(3):
        results = reply["results"]
        over = size(reply) > REPLY_CHARS
        if not results or (counted and not over):
            break
        # A page that leaves results out gains a cursor (if it had none) and the line saying so.
        cursor_room = 0 if reply["next_cursor"] else CURSOR_ROOM
        room = REPLY_CHARS - size({**reply, "results": []}) - OMITTED_ROOM - cursor_room
        keep = max(1, fitting(results, room)) if over else len(results)
        reply = compact_page(await page_of(keep, not counted), asked - keep)
        counted = True
    if size(reply) > REPLY_CHARS and reply["next_cursor"]:
        # Only a cursor carrying a query of many thousand characters gets here: no page size helps.
        reply["next_cursor"] = None
        reply["hint"] = f"{SHOW_HINT}; {LONG_QUERY_HINT}"
    return reply


def _learner_stats_tool(tool: Callable[..., Any], backend: Backend) -> None:
    """Register `learner_stats`, the admin view of learning from weak searches (`mcp_learner_stats`)."""

    @tool()
    async def learner_stats() -> str:
        """How cairn learns from searches that found nothing useful. A cairn search whose best score is
        under `threshold` starts a session; files read within `timeout_seconds` after it are learned, when
        the turn ends, as an association (query → file) that lifts the file in later similar searches.
        Figures: searches_seen (cairn search calls read), sessions_started (weak ones), sessions_resolved
        (followed by reads: learned), sessions_timed_out (no reads), active_sessions (awaiting a result or
        the turn's end), files_learned, associations_created (learned), associations_from_agent (proposed
        by the indexer), association_repeats (learned again), association_hits (results lifted), errors
        (unreadable search results, failed file indexing) and recent_errors. enabled: false means learning
        is off; what was learned before still counts."""
        return _text(await backend.call("learner_stats", {}))


def serve(settings: Settings) -> None:
    """Serve cairn's tools on stdin/stdout until the client hangs up."""
    log.info("cairn MCP server for %s", settings.home)
    build_server(Backend(settings)).run()
