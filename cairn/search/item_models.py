"""The answers of the item lookups (`show`, `timeline`, `open_items`) as pydantic models.

They are what the CLI prints and the MCP tools return as JSON, so they live apart from the SQL that
fills them. Every kind of item comes back as the same `ItemDetail` with the fields that do not apply
left empty, so JSON consumers read one shape instead of switching on three.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from cairn.search.models import Kind, SessionInfo, SourceLocation


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


class ItemDetail(BaseModel):
    """One idea, topic span or message in full. Fields that do not apply to the kind are None or empty."""

    id: str
    kind: Kind
    intent: str | None = Field(default=None, description="Idea intent; a message's role; None for spans.")
    title: str | None = Field(default=None, description="A span's name.")
    content: str = Field(description="An idea's content, a span's summary (its name if none), a message.")
    said_at: str | None = Field(default=None, description="When it was said in the conversation.")
    created_at: str | None = Field(default=None, description="When cairn stored it.")
    session: SessionInfo | None = Field(
        default=None, description="Its session; `topic` is the enclosing span (a span's parent)."
    )
    source: SourceLocation = Field(default_factory=SourceLocation)
    end_line: int | None = Field(default=None, description="Last line of a span or a multi-line message.")
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
    relations: list[RelationLink] = Field(default_factory=list)
    entities: list[EntityRef] = Field(default_factory=list)
    # Spans (their ideas) and messages (the ideas extracted from them)
    ideas: list[IdeaBrief] = Field(default_factory=list)
    idea_count: int | None = Field(default=None, description="Ideas a span holds (`ideas` may be capped).")
    children: list[SpanBrief] = Field(default_factory=list, description="A span's sub-spans.")
    depth: int | None = None


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


class OpenItems(BaseModel):
    """Unanswered questions and problems, uncompleted todos — newest first, superseded ones left out."""

    questions: list[OpenItem] = Field(default_factory=list)
    todos: list[OpenItem] = Field(default_factory=list)
    question_count: int = Field(default=0, description="All open questions/problems (`questions` is capped).")
    todo_count: int = 0
    notice: str | None = None
