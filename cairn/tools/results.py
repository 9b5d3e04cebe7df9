"""What the tools return: small pydantic models whose JSON leaves out nulls, cut to a size bound.

The model reads every byte of a tool result, so results carry ids, short previews and the few fields
that decide what to write (intent, session, line, time, superseded/answered state) — no full texts.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

EntityMatchKind = Literal["exact", "alias", "normalized", "prefix", "substring", "contained", "semantic"]

PREVIEW_CHARS = 300


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class ToolModel(BaseModel):
    """Base of every tool result: serialised without null fields, so absent facts cost no tokens."""

    @model_serializer(mode="wrap")
    def _drop_nulls(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class Notice(ToolModel):
    """A result that is a message instead of data: not found, empty query, budget used up."""

    notice: str


class ToolResult(ToolModel):
    """A result holding lists; `truncated` says how much `fit` left out to respect the size bound."""

    truncated: str | None = None


class IdeaBrief(ToolModel):
    id: int
    intent: str
    content: str
    session: str | None = None
    line: int | None = None
    at: str | None = None
    superseded_by: int | None = None
    answered_at: str | None = None
    completed_at: str | None = None
    similarity: float | None = None


class IdeaList(ToolResult):
    ideas: list[IdeaBrief]


class SpanInfo(ToolModel):
    id: int
    session: str
    name: str
    summary: str | None = None
    start_line: int
    end_line: int | None = None
    open: bool
    depth: int = 0
    parent_id: int | None = None
    ideas: int | None = None
    similarity: float | None = None


class SpanList(ToolResult):
    spans: list[SpanInfo]


class SpanNode(ToolModel):
    id: int
    name: str
    start_line: int
    end_line: int | None = None
    children: list[SpanNode] | None = None


class SessionNode(ToolModel):
    id: str
    started_at: str | None = None
    last_at: str | None = None
    branch: str | None = None
    spans: list[SpanNode]


class ProjectNode(ToolModel):
    name: str
    path: str | None = None
    sessions: list[SessionNode]


class TopicHierarchy(ToolResult):
    projects: list[ProjectNode]


class EntityInfo(ToolModel):
    id: int
    canonical_name: str
    type: str
    aliases: list[str]
    ideas: int
    match: EntityMatchKind | None = None
    similarity: float | None = None


class EntityList(ToolResult):
    entities: list[EntityInfo]


class EntityIdeas(ToolResult):
    entity: EntityInfo
    ideas: list[IdeaBrief]


class RelatedIdea(ToolModel):
    relation: str
    idea: IdeaBrief


class IdeaRelations(ToolResult):
    """`outgoing`: this idea --relation--> other; `incoming`: other --relation--> this idea."""

    idea: IdeaBrief
    outgoing: list[RelatedIdea]
    incoming: list[RelatedIdea]


R = TypeVar("R", bound=ToolModel)

# Room kept for the `truncated` note itself.
_NOTE_RESERVE = 120


def result_chars(result: ToolModel) -> int:
    """Length of the JSON the model is sent for `result`."""
    return len(result.model_dump_json())


def fit(result: R, max_chars: int) -> R:
    """`result` with list entries dropped from the end until its JSON fits in `max_chars`.

    Lists are ordered best first, so the tail goes; the longest list is cut first, which keeps a
    nested result (the topic hierarchy) broad rather than deep. The result says how many entries
    were left out, so the model knows to ask more narrowly.
    """
    if not isinstance(result, ToolResult) or result_chars(result) <= max_chars:
        return result
    data = result.model_dump(mode="json")
    budget = max(0, max_chars - _NOTE_RESERVE)
    dropped = 0
    while _chars(data) > budget:
        longest = _longest_list(data)
        if longest is None:
            break
        longest.pop()
        dropped += 1
    data["truncated"] = f"{dropped} entries left out to stay within {max_chars} characters; ask more narrowly"
    return type(result).model_validate(data)


def _chars(data: Any) -> int:
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _longest_list(data: Any) -> list[Any] | None:
    """The non-empty list with the most entries anywhere inside `data` (the outermost on ties)."""
    best: list[Any] | None = None
    queue: deque[Any] = deque([data])
    while queue:
        node = queue.popleft()
        if isinstance(node, list):
            if node and (best is None or len(node) > len(best)):
                best = node
            queue.extend(node)
        elif isinstance(node, dict):
            queue.extend(node.values())
    return best
