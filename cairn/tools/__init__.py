"""The indexing agent's read-only tools: what the agent may ask the store while it indexes.

Every tool reads through the database's read-only connection (and Chroma queries), never writes,
counts against the run's soft tool budget and returns a result bounded in size. Use them with
`Agent(..., deps_type=ToolDeps, toolsets=[indexing_toolset()])` and a `ToolDeps` per run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_ai import FunctionToolset

from cairn.tools.deps import ToolDeps
from cairn.tools.entities import get_entity_ideas, search_entities
from cairn.tools.ideas import (
    get_idea_relations,
    get_open_questions,
    get_open_todos,
    get_recent_ideas,
    search_ideas,
)
from cairn.tools.topics import find_similar_topics, get_current_span, get_topic_hierarchy, list_session_spans

TOOLS: list[Callable[..., Awaitable[Any]]] = [
    search_ideas,
    get_open_questions,
    get_open_todos,
    get_current_span,
    list_session_spans,
    find_similar_topics,
    get_topic_hierarchy,
    search_entities,
    get_entity_ideas,
    get_recent_ideas,
    get_idea_relations,
]


def indexing_toolset() -> FunctionToolset[ToolDeps]:
    """A fresh toolset of the eleven tools, parameter descriptions taken from their docstrings."""
    return FunctionToolset[ToolDeps](TOOLS, docstring_format="google", require_parameter_descriptions=True)


__all__ = ["TOOLS", "ToolDeps", "indexing_toolset"]
