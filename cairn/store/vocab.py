"""The store's closed vocabularies — idea intents, relation types, entity types — shared by every layer.

They mirror the CHECK constraints of the schema (`cairn.store.migrations`), so they live with the
store: the agent's output schema and the agent's tools both import them from here.
"""

from __future__ import annotations

from typing import Literal, get_args

Intent = Literal["decision", "conclusion", "question", "problem", "solution", "todo", "context"]
RelationType = Literal["supersedes", "builds_on", "contradicts", "answers", "relates_to"]
EntityType = Literal["project", "technology", "concept", "person", "file"]

INTENTS: tuple[Intent, ...] = get_args(Intent)
RELATION_TYPES: tuple[RelationType, ...] = get_args(RelationType)
ENTITY_TYPES: tuple[EntityType, ...] = get_args(EntityType)
