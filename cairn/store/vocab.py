"""The store's closed vocabularies — idea intents and states, relation types, entity types — shared by every
layer.

They mirror the CHECK constraints of the schema (`cairn.store.migrations`), so they live with the
store: the agent's output schema and the agent's tools both import them from here.
"""

from __future__ import annotations

from typing import Literal, get_args

Intent = Literal["decision", "conclusion", "question", "problem", "solution", "todo", "context"]
RelationType = Literal["supersedes", "builds_on", "contradicts", "answers", "relates_to"]
EntityType = Literal["project", "technology", "concept", "person", "file"]
IdeaState = Literal["deferred", "given_up"]
"""How an open-able idea (question, problem, todo) was left, beyond answered/completed/declined:
`deferred` — put off on purpose ("in a separate PR"); `given_up` — a failure retried and never passed.
Either keeps it open wherever in its session it was said (`cairn.store.open_ideas`)."""

INTENTS: tuple[Intent, ...] = get_args(Intent)
RELATION_TYPES: tuple[RelationType, ...] = get_args(RelationType)
ENTITY_TYPES: tuple[EntityType, ...] = get_args(EntityType)
IDEA_STATES: tuple[IdeaState, ...] = get_args(IdeaState)
#: The intents that can be open, and so carry a state.
OPENABLE_INTENTS: tuple[Intent, ...] = ("question", "problem", "todo")
