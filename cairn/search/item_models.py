"""The answers of the item lookups (`show`, `timeline`, `open_items`) as pydantic models.

They are what the CLI prints and the MCP tools return as JSON, so they live apart from the SQL that
fills them. Every kind of item comes back as the same `ItemDetail` with the fields that do not apply
left empty, so JSON consumers read one shape instead of switching on four.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from cairn.search.models import ItemKind, Kind, SessionInfo, SourceLocation
from cairn.store.vocab import IdeaState


class IdeaBrief(BaseModel):
    """An idea in one line: enough to decide whether to `show` it."""

    id: str
    intent: str
    preview: str = Field(description="The content on one line, at most 200 characters.")
    said_at: str | None = None
    superseded: bool = False
    session_id: str | None = None


class ItemBrief(BaseModel):
    """Any item in one line — the anchor of a timeline, which may be an idea, a span or a message."""

    id: str
    kind: Kind
    intent: str | None = Field(default=None, description="Idea intent; a message's role; None for spans.")
    title: str | None = Field(default=None, description="A span's name.")
    preview: str
    said_at: str | None = None
    superseded: bool = False
    session_id: str | None = None


class RelationLink(BaseModel):
    """One relation of an idea. `outgoing`: this idea `type`s the other (it supersedes/answers/builds on
    it); `incoming`: the other idea `type`s this one."""

    type: str
    direction: Literal["outgoing", "incoming"]
    idea: IdeaBrief


class EntityRef(BaseModel):
    id: int
    name: str
    type: str


class SpanBrief(BaseModel):
    id: str
    name: str
    start_line: int
    end_line: int | None = None
    ideas: int = Field(default=0, description="How many ideas the span holds.")


class AssociationRef(BaseModel):
    """A learned search association pointing at a file: a query after which the agent found it."""

    id: int
    query: str
    source: Literal["learned", "agent"] = Field(
        description="`learned` from a weak search and the reads after it; `agent`: the indexing agent's."
    )
    times_learned: int = Field(description="How often this query led to this file.")
    hits: int = Field(description="Times it lifted a search result a caller received.")
    original_score: float | None = Field(default=None, description="The weak search's best score.")
    grep_patterns: list[str] = Field(default_factory=list)
    learned_at: str | None = None
    last_used_at: str | None = None


class ItemDetail(BaseModel):
    """One idea, topic span, message or file chunk in full. Fields that do not apply to the kind are None
    or empty."""

    id: str
    kind: ItemKind
    intent: str | None = Field(default=None, description="Idea intent; a message's role; None for spans.")
    title: str | None = Field(default=None, description="A span's name; a file chunk's relative path.")
    content: str = Field(
        description="An idea's content, a span's summary (its name if none), a message, a file chunk's text."
    )
    said_at: str | None = Field(default=None, description="When it was said in the conversation.")
    created_at: str | None = Field(default=None, description="When cairn stored it.")
    session: SessionInfo | None = Field(
        default=None, description="Its session; `topic` is the enclosing span (a span's parent)."
    )
    source: SourceLocation = Field(default_factory=SourceLocation)
    end_line: int | None = Field(
        default=None, description="Last line of a span, a multi-line message or a file chunk."
    )
    # Ideas
    importance: float | None = None
    confidence: float | None = None
    usage_count: int | None = None
    superseded: bool = False
    superseded_by: IdeaBrief | None = None
    supersedes: list[IdeaBrief] = Field(default_factory=list)
    answered_by: IdeaBrief | None = None
    answers: list[IdeaBrief] = Field(default_factory=list, description="Questions/problems this answers.")
    resolution: str | None = None
    answered_at: str | None = None
    completed_at: str | None = None
    declined_at: str | None = Field(
        default=None, description="When the person declined it: history, no longer a live item."
    )
    relations: list[RelationLink] = Field(default_factory=list)
    entities: list[EntityRef] = Field(default_factory=list)
    # Spans (their ideas) and messages (the ideas extracted from them)
    ideas: list[IdeaBrief] = Field(default_factory=list)
    idea_count: int | None = Field(default=None, description="Ideas a span holds (`ideas` may be capped).")
    children: list[SpanBrief] = Field(default_factory=list, description="A span's sub-spans.")
    depth: int | None = None
    # File chunks: where the passage sits, what the file is about, which searches led to it
    project: str | None = Field(default=None, description="A file chunk's project path.")
    chunk_index: int | None = Field(default=None, description="A file chunk's number in its file (0-based).")
    document_keywords: list[str] = Field(default_factory=list, description="A file's key phrases.")
    indexed_at: str | None = Field(default=None, description="When cairn last indexed the chunk's file.")
    associations: list[AssociationRef] = Field(
        default_factory=list, description="Learned search associations pointing at the chunk's file."
    )


class SessionSummary(BaseModel):
    id: str
    project: str | None = None
    project_name: str | None = None
    started_at: str | None = None
    last_at: str | None = None
    topics: int = Field(default=0, description="Topic spans in the session.")
    first_topic: str | None = None


class Timeline(BaseModel):
    """Ideas said just before and just after an anchor, each list oldest first."""

    anchor: ItemBrief
    before: list[IdeaBrief]
    after: list[IdeaBrief]
    scope: Literal["project", "session", "all"] = Field(
        description="Where the ideas come from: the anchor's project, its session (no project), or all."
    )
    project: str | None = None
    project_name: str | None = None
    sessions: dict[str, SessionSummary] = Field(default_factory=dict)


class OpenItem(IdeaBrief):
    session: SessionInfo | None = None
    importance: float | None = None
    state: IdeaState | None = Field(
        default=None,
        description="'deferred' (put off on purpose) or 'given_up' (failed until the work moved on), if so.",
    )


class OpenItems(BaseModel):
    """Open questions and problems, open todos (`cairn.store.open_ideas`) — newest first."""

    questions: list[OpenItem] = Field(default_factory=list)
    todos: list[OpenItem] = Field(default_factory=list)
    question_count: int = Field(default=0, description="All open questions/problems (`questions` is capped).")
    todo_count: int = 0
    notice: str | None = None
