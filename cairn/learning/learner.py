"""The search feedback loop's state machine: weak cairn searches and the reads that followed them.

Seed 000's `SearchLearner` watches a live session with wall-clock time. This one is fed the tool events
of a transcript (`cairn.transcripts.tool_events`) and measures every window in *transcript* time, so a
backfill of last month's transcripts learns exactly what live indexing would have. It is pure — no
database, no file system — so the rules can be tested on their own and the loop
(`cairn.learning.loop`) only has to load the sessions left open by the previous read of a file, feed
the new events, and store what changed.

A session's life:

- a call of a search tool opens it *pending* (a call that only pages with a continuation token is not
  a new search);
- its result (matched by tool_use id, possibly in a later read of the file) gives the best score: at or
  above the threshold the search worked and the session is *dismissed*; below it the session is
  *active*. A result that cannot be read, an error result, or no result before the turn ended counts as
  a search that found nothing (best 0.0) and records why;
- while active and inside the window (`timeout` transcript seconds after the search), `Read` paths
  and `Grep`/`Glob` patterns are recorded — only after the result, because a read issued before the
  agent saw the answer is not a fallback from it;
- at the next real user message, active sessions with reads are *resolved* (learned from) and those
  without *time out*. A session whose window has passed is settled as soon as any event shows it: its
  reads can no longer change, and a subagent's transcript has no user messages at all.

Replays are harmless: a search the store already settled is passed in `seen` and ignored, and a search
replayed while still open adds nothing new (reads and patterns are kept once each).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from cairn.config import Settings
from cairn.transcripts.tool_events import ToolEvent, ToolOutput, ToolUse, UserTurn

SessionStatus = Literal["pending", "active", "dismissed", "resolved", "timed_out"]
OPEN_STATUSES: tuple[SessionStatus, ...] = ("pending", "active")

#: cairn's own search tools; `Settings.learn_tools` adds more.
SEARCH_TOOLS = frozenset({"mcp__cairn__search", "mcp__cairn__search_content"})
READ_TOOLS = frozenset({"Read"})
PATTERN_TOOLS = frozenset({"Grep", "Glob"})

#: How much of an unreadable result an error message quotes: enough to recognise it, not a payload.
ERROR_SNIPPET_CHARS = 120
MISSING_RESULT = "search result missing"

SessionKey = tuple[str, str]
"""(transcript session id, tool_use id) of a search; the store knows a search by the tool_use id alone."""


@dataclass
class SearchSession:
    """One search call and what the agent did after it. `started_at` is transcript time (None: unknown)."""

    session_id: str
    tool_use_id: str
    tool_name: str
    query: str
    started_at: datetime | None
    status: SessionStatus = "pending"
    best_score: float | None = None
    result_count: int | None = None
    reads: list[str] = field(default_factory=list)
    greps: list[str] = field(default_factory=list)
    error: str | None = None
    ended_at: datetime | None = None

    @property
    def key(self) -> SessionKey:
        return (self.session_id, self.tool_use_id)

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


@dataclass(frozen=True)
class LearnerConfig:
    """The knobs the state machine needs, taken from `Settings` once per run."""

    tools: frozenset[str] = SEARCH_TOOLS
    threshold: float = 0.65
    timeout: float = 60.0

    @classmethod
    def from_settings(cls, settings: Settings) -> LearnerConfig:
        return cls(
            tools=SEARCH_TOOLS | frozenset(settings.learn_tools),
            threshold=settings.learn_threshold,
            timeout=settings.learn_timeout,
        )


class SearchLearner:
    """Feeds tool events through the sessions of one transcript file; reports what changed."""

    def __init__(
        self,
        config: LearnerConfig,
        *,
        open_sessions: Iterable[SearchSession] = (),
        seen: Collection[SessionKey] = (),
        default_session_id: str | None = None,
    ) -> None:
        self.config = config
        self._window = timedelta(seconds=max(config.timeout, 0.0))
        self._sessions: dict[SessionKey, SearchSession] = {s.key: s for s in open_sessions if s.is_open}
        self._by_tool_use: dict[str, SearchSession] = {s.tool_use_id: s for s in self._sessions.values()}
        self._seen = seen
        self._closed: set[SessionKey] = set()
        self._default_session_id = default_session_id or ""
        self._changed: dict[SessionKey, SearchSession] = {}
        self._last_at: datetime | None = None

    # What the run produced

    @property
    def changed(self) -> list[SearchSession]:
        """Sessions created or modified by the events fed so far, in the order they first changed."""
        return list(self._changed.values())

    @property
    def resolved(self) -> list[SearchSession]:
        """Sessions resolved by the events fed so far: the ones to learn associations from."""
        return [s for s in self._changed.values() if s.status == "resolved"]

    @property
    def open_sessions(self) -> list[SearchSession]:
        return [s for s in self._sessions.values() if s.is_open]

    # Events

    def feed(self, events: Iterable[ToolEvent]) -> SearchLearner:
        for event in events:
            self.on_event(event)
        return self

    def on_event(self, event: ToolEvent) -> None:
        at = _utc(event.at)
        if at is not None:
            self._last_at = at
        self._expire(at)
        if isinstance(event, ToolUse):
            self._on_tool_use(event, at)
        elif isinstance(event, ToolOutput):
            self._on_output(event, at)
        elif isinstance(event, UserTurn):
            self._on_turn(at)

    def _on_tool_use(self, use: ToolUse, at: datetime | None) -> None:
        if use.name in self.config.tools:
            self._open(use, at)
        elif use.name in READ_TOOLS:
            path = _string(use.input.get("file_path"))
            if path:
                self._record(at, read=_absolute(path, use.cwd))
        elif use.name in PATTERN_TOOLS:
            pattern = _string(use.input.get("pattern"))
            if pattern:
                self._record(at, grep=pattern)

    def _open(self, use: ToolUse, at: datetime | None) -> None:
        query = search_query(use.input)
        if query is None:
            return  # paging through an earlier search, or nothing asked: not a search of its own
        key = (use.session_id or self._default_session_id, use.id)
        if key in self._sessions or key in self._closed or key in self._seen:
            return  # replayed: this search is known already
        session = SearchSession(
            session_id=key[0],
            tool_use_id=use.id,
            tool_name=use.name,
            query=query,
            started_at=at or self._last_at,
        )
        self._sessions[key] = session
        self._by_tool_use[use.id] = session
        self._changed[key] = session

    def _on_output(self, output: ToolOutput, at: datetime | None) -> None:
        session = self._by_tool_use.get(output.tool_use_id)
        if session is None or session.status != "pending":
            return
        if output.is_error:
            self._settle(session, 0.0, 0, f"search failed: {_snippet(output.text)}")
        else:
            parsed = read_scores(output.text, output.structured)
            if isinstance(parsed, str):
                self._settle(session, 0.0, 0, f"unreadable search result: {parsed}")
            else:
                self._settle(session, *parsed, None)
        self._expire(at)
        self._forget_closed()

    def _settle(self, session: SearchSession, best: float, count: int, error: str | None) -> None:
        session.best_score = best
        session.result_count = count
        session.error = error
        session.status = "dismissed" if best >= self.config.threshold else "active"
        self._changed[session.key] = session

    def _record(self, at: datetime | None, *, read: str | None = None, grep: str | None = None) -> None:
        """Add a fallback read or pattern to every active session whose window covers `at`."""
        for session in self._sessions.values():
            if session.status != "active" or not self._within(session, at):
                continue
            target, item = (session.reads, read) if read is not None else (session.greps, grep)
            if item is not None and item not in target:
                target.append(item)
                self._changed[session.key] = session

    def _on_turn(self, at: datetime | None) -> None:
        """A real user message: every open session of the turn ends."""
        when = at or self._last_at
        for session in list(self._sessions.values()):
            if session.status == "pending":
                self._settle(session, 0.0, 0, MISSING_RESULT)
            if session.status == "active":
                self._end(session, "resolved" if session.reads else "timed_out", when)
        self._forget_closed()

    def _expire(self, at: datetime | None) -> None:
        """End the active sessions whose window closed before `at`: nothing can be added to them now."""
        if at is None:
            return
        ended = False
        for session in self._sessions.values():
            if session.status == "active" and not self._within(session, at):
                assert session.started_at is not None  # _within says so
                status: SessionStatus = "resolved" if session.reads else "timed_out"
                self._end(session, status, session.started_at + self._window)
                ended = True
        if ended:
            self._forget_closed()

    def _end(self, session: SearchSession, status: SessionStatus, when: datetime | None) -> None:
        session.status = status
        session.ended_at = when
        self._changed[session.key] = session

    def _forget_closed(self) -> None:
        for key in [k for k, s in self._sessions.items() if not s.is_open]:
            session = self._sessions.pop(key)
            self._by_tool_use.pop(session.tool_use_id, None)
            self._closed.add(key)

    def _within(self, session: SearchSession, at: datetime | None) -> bool:
        """Whether `at` falls in the session's window; an unknown time on either side counts as inside."""
        if at is None or session.started_at is None:
            return True
        return at <= session.started_at + self._window


def search_query(tool_input: dict[str, Any]) -> str | None:
    """The text a search call asked for; None for a call that only pages or asks nothing."""
    query = _string(tool_input.get("query"))
    if query:
        return query
    parts = [
        item.strip()
        for name in ("semantic_concepts", "exact_terms")
        if isinstance(tool_input.get(name), list)
        for item in tool_input[name]
        if isinstance(item, str) and item.strip()
    ]
    return "; ".join(parts) if parts else None


def read_scores(text: str, structured: Any = None) -> tuple[float, int] | str:
    """`(best score, result count)` of a search answer, or why it could not be read.

    The MCP tools answer with JSON text `{"results": [...]}`, each result carrying `score` (search) or
    `relevance_score` (search_content). Claude Code may also keep the answer as `toolUseResult`.
    """
    body: Any
    try:
        body = json.loads(text)
    except ValueError:
        body = structured if isinstance(structured, dict) else None
        if body is None:
            return f"not JSON: {_snippet(text)}"
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        return f"no results list: {_snippet(text)}"
    results: Sequence[Any] = body["results"]
    scores = [score for result in results if (score := _score(result)) is not None]
    return (max(scores) if scores else 0.0, len(results))


def _score(result: Any) -> float | None:
    if not isinstance(result, dict):
        return None
    for name in ("score", "relevance_score"):
        value = result.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


def _string(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _absolute(path: str, cwd: str | None) -> str:
    """`path` joined to the shell's directory when relative (the Read tool wants absolute paths anyway)."""
    expanded = os.path.expanduser(path)
    if os.path.isabs(expanded) or not cwd:
        return expanded
    return os.path.join(cwd, expanded)


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ERROR_SNIPPET_CHARS else flat[: ERROR_SNIPPET_CHARS - 1] + "…"


def _utc(at: datetime | None) -> datetime | None:
    """Aware UTC times only, so a naive timestamp in a transcript cannot break a comparison."""
    if at is None:
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
