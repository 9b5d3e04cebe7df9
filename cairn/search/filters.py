"""A search's filters as SQL over each kind's table and as Chroma `where` clauses.

The same filters run in two places: inside the keyword query (so FTS5's top-N are all eligible) and
inside the vector query (Chroma filters by metadata before it picks neighbours). Whatever Chroma's
metadata cannot express (time ranges, the page snapshot, message kinds older vectors lack) is checked
again in SQL when candidates are loaded, so a result never escapes a filter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cairn.search.models import Kind

# Messages worth finding: what people and tools said, and compaction summaries. Slash commands, meta
# lines and noise (hook chatter, interruptions, bare acknowledgements) only crowd results.
MESSAGE_KINDS = ("text", "tool_result", "compact_summary")
#: The stored kinds a message of each origin can have: what the vectors' metadata can filter by.
KINDS_OF_ORIGIN: dict[str, tuple[str, ...]] = {
    "prompt": ("text",),
    "reply": ("text",),
    "tool_call": ("text",),
    "tool_result": ("tool_result",),
    "subagent": ("text", "tool_result"),
    "summary": ("compact_summary", "summary"),
    "system": ("meta", "system", "command"),
}


@dataclass(frozen=True)
class KindTable:
    """Where one kind of item lives: its table, FTS table, Chroma collection and bm25 call (also as
    FTS5's `rank` function when it weighs columns), its FTS columns and the rows worth finding."""

    kind: Kind
    table: str
    fts: str
    vectors: str
    bm25: str
    said_at: str
    eligible: str = "1"
    rank: str | None = None
    columns: int = 1


# A span records its file only when the indexer knew it; otherwise its lines are the session's main
# transcript's (subagent files sort after it).
SPAN_FILE = """coalesce(t.file_id, (SELECT id FROM transcript_files WHERE session_id = t.session_id
                                    ORDER BY is_subagent, id LIMIT 1))"""
# A span starts at its first line that has a time (a summary or meta line at `start_line` may not),
# else when it was stored.
SPAN_SAID_AT = f"""coalesce(
    (SELECT m.timestamp FROM messages AS m
     WHERE m.file_id = {SPAN_FILE} AND m.line >= t.start_line AND m.timestamp IS NOT NULL
       AND (t.end_line IS NULL OR m.line <= t.end_line)
     ORDER BY m.line LIMIT 1),
    t.created_at)"""

TABLES: dict[Kind, KindTable] = {
    "idea": KindTable("idea", "ideas", "ideas_fts", "ideas", "bm25(ideas_fts)", "t.said_at"),
    # A topic's name says more than its summary: weigh a name match twice.
    "span": KindTable(
        "span",
        "topic_spans",
        "spans_fts",
        "spans",
        "bm25(spans_fts, 2.0, 1.0)",
        SPAN_SAID_AT,
        rank="bm25(2.0, 1.0)",
        columns=2,
    ),
    "message": KindTable(
        "message",
        "messages",
        "messages_fts",
        "messages",
        "bm25(messages_fts)",
        "coalesce(t.timestamp, t.created_at)",
        eligible=f"t.is_noise = 0 AND t.kind IN ({', '.join(repr(k) for k in MESSAGE_KINDS)})",
    ),
}


@dataclass(frozen=True)
class Filters:
    """What a result must satisfy. `project_ids` None means any project; empty means none matched."""

    project_ids: tuple[int, ...] | None = None
    project_paths: tuple[str, ...] = ()
    session: str | None = None
    intents: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    """Only messages from these origins: what a message is (`cairn.transcripts.origin`)."""
    since: str | None = None
    until: str | None = None
    include_superseded: bool = False
    snapshot: dict[str, int] = field(default_factory=dict)

    @property
    def narrows(self) -> bool:
        """Whether the filters pick a subset a ranking over everything could miss (a session, a
        project, intents, a time range), rather than only dropping a few rows (superseded, noise)."""
        return bool(
            self.session is not None
            or self.project_ids is not None
            or self.intents
            or self.origins
            or self.since is not None
            or self.until is not None
        )

    def kinds(self, wanted: tuple[Kind, ...]) -> tuple[Kind, ...]:
        """The kinds that can match: only ideas have intents, only messages an origin, and no kind
        matches an unknown project."""
        if self.project_ids is not None and not self.project_ids:
            return ()
        if self.intents:
            wanted = tuple(k for k in wanted if k == "idea")
        if self.origins:
            wanted = tuple(k for k in wanted if k == "message")
        return wanted

    def sql(self, kind: Kind) -> tuple[str, list[Any]]:
        """Conditions over table alias `t` for `kind`, and their parameters."""
        spec = TABLES[kind]
        clauses: list[str] = [spec.eligible]
        params: list[Any] = []
        if kind == "message" and self.origins:
            # Asked for by origin, hook and system output is worth finding too.
            clauses = [f"t.is_noise = 0 AND t.origin IN ({','.join('?' * len(self.origins))})"]
            params.extend(self.origins)
        if self.session is not None:
            clauses.append("t.session_id = ?")
            params.append(self.session)
        if self.project_ids is not None:
            marks = ",".join("?" * len(self.project_ids))
            clauses.append(f"t.session_id IN (SELECT id FROM sessions WHERE project_id IN ({marks}))")
            params.extend(self.project_ids)
        if kind == "idea":
            if self.intents:
                clauses.append(f"t.intent IN ({','.join('?' * len(self.intents))})")
                params.extend(self.intents)
            if not self.include_superseded:
                clauses.append("t.superseded_by IS NULL")
        if self.since is not None:
            clauses.append(f"{spec.said_at} >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append(f"{spec.said_at} < ?")
            params.append(self.until)
        if kind in self.snapshot:
            clauses.append("t.id <= ?")
            params.append(self.snapshot[kind])
        return " AND ".join(clauses), params

    def accepts(self, kind: Kind, metadata: dict[str, Any]) -> bool:
        """Whether an item's Chroma metadata passes what `where(kind)` would ask Chroma to check."""
        if self.session is not None and metadata.get("session_id") != self.session:
            return False
        if self.project_paths and metadata.get("project") not in self.project_paths:
            return False
        if kind == "idea":
            if self.intents and metadata.get("intent") not in self.intents:
                return False
            if not self.include_superseded and metadata.get("superseded") is True:
                return False
        return kind != "message" or metadata.get("kind") in self._message_kinds()

    def _message_kinds(self) -> tuple[str, ...]:
        """The stored message kinds (`messages.kind`, in the vectors' metadata) the filters let through."""
        if not self.origins:
            return MESSAGE_KINDS
        return tuple(sorted({kind for origin in self.origins for kind in KINDS_OF_ORIGIN[origin]}))

    def where(self, kind: Kind) -> dict[str, Any] | None:
        """The part of the filters Chroma's metadata can apply inside the vector query."""
        clauses: list[dict[str, Any]] = []
        if self.session is not None:
            clauses.append({"session_id": self.session})
        if self.project_paths:
            clauses.append({"project": {"$in": list(self.project_paths)}})
        if kind == "idea":
            if self.intents:
                clauses.append({"intent": {"$in": list(self.intents)}})
            if not self.include_superseded:
                clauses.append({"superseded": False})
        if kind == "message":
            clauses.append({"kind": {"$in": list(self._message_kinds())}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
