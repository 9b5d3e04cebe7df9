"""The entity tools: find an existing entity however its name is spelled, and the ideas linked to it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic_ai import RunContext

from cairn.store.db import Database
from cairn.store.vocab import EntityType
from cairn.tools.budget import metered
from cairn.tools.common import IDEA_SELECT, MAX_ID, clamp, idea_brief
from cairn.tools.deps import ToolDeps
from cairn.tools.matching import name_key, name_key_sql, semantic, similar_ids, where
from cairn.tools.results import EntityIdeas, EntityInfo, EntityList, EntityMatchKind, Notice

MAX_ENTITIES = 10
MAX_ALIASES = 10
# Short names embed close to many others ("sqlite" is 0.4 from "MySQL" with MiniLM); only near
# paraphrases ("Postgres" / "PostgreSQL": 0.89) are worth proposing as the same entity.
MIN_ENTITY_SIMILARITY = 0.6

# Lexical tiers, best first: the exact name, an exact alias, the same name key (case and separators
# ignored), a key starting with the query's, containing it, or contained in it.
_TIERS: tuple[EntityMatchKind, ...] = ("exact", "alias", "normalized", "prefix", "substring", "contained")

_MATCH_SQL = f"""
    WITH names (entity_id, name, is_alias) AS (
        SELECT id, canonical_name, 0 FROM entities
        UNION ALL
        SELECT entity_id, alias, 1 FROM entity_aliases
    ),
    keyed AS (SELECT entity_id, name, is_alias, {name_key_sql("name")} AS key FROM names),
    tiers AS (
        SELECT entity_id, min(CASE
            WHEN name = :raw COLLATE NOCASE THEN is_alias
            WHEN key = :key THEN 2
            WHEN substr(key, 1, length(:key)) = :key THEN 3
            WHEN instr(key, :key) > 0 THEN 4
            WHEN length(key) >= 3 AND instr(:key, key) > 0 THEN 5
        END) AS tier
        FROM keyed GROUP BY entity_id
    )
    SELECT e.id, t.tier FROM tiers t JOIN entities e ON e.id = t.entity_id
    WHERE t.tier IS NOT NULL AND (:type IS NULL OR e.type = :type)
    ORDER BY t.tier, (SELECT count(*) FROM idea_entities WHERE entity_id = e.id) DESC, e.id
    LIMIT :limit
"""

_ENTITY_SELECT = """
    SELECT e.id, e.canonical_name, e.type,
           (SELECT json_group_array(alias) FROM (
                SELECT alias FROM entity_aliases WHERE entity_id = e.id ORDER BY alias LIMIT ?)) AS aliases,
           (SELECT count(*) FROM idea_entities WHERE entity_id = e.id) AS ideas
    FROM entities e WHERE e.id IN (SELECT value FROM json_each(?))
"""


@metered
async def search_entities(
    ctx: RunContext[ToolDeps], name: str, type: EntityType | None = None
) -> EntityList | Notice:
    """Find existing entities (projects, technologies, concepts, people, files) by name.

    Use it before naming an entity in an idea: when one matches, link it by id in `entity_links`
    and use its canonical name instead of creating a duplicate. Matching ignores case and
    separators (`pydantic-ai`, `pydantic_ai` and `PydanticAI` are one name) and covers aliases,
    then names that start with, contain or are contained in the query, then names close in meaning.
    Returns up to 10 entities, best first: id, canonical name, type, aliases, how many ideas link to
    it, and `match` (exact, alias, normalized, prefix, substring, contained or semantic).

    Args:
        name: The entity's name as it appears in the messages, or part of it.
        type: Only entities of this type.
    """
    deps = ctx.deps
    key = name_key(name.strip())
    if not key:
        return Notice(notice="the name has no letters or digits to match")
    rows = await deps.db.fetchall(
        _MATCH_SQL, {"raw": name.strip(), "key": key, "type": type, "limit": MAX_ENTITIES}
    )
    kinds: dict[int, EntityMatchKind] = {row["id"]: _TIERS[row["tier"]] for row in rows}
    similar: dict[int, float] = {}
    if len(kinds) < MAX_ENTITIES:
        hits = await semantic(deps, "entities", name, MAX_ENTITIES, where(type=type))
        similar = {
            entity: score
            for entity, score in similar_ids(hits, MIN_ENTITY_SIMILARITY).items()
            if entity not in kinds
        }
    for entity in similar:
        kinds.setdefault(entity, "semantic")
    found = await _entities_by_id(deps.db, list(kinds)[:MAX_ENTITIES], kinds, similar, type)
    return EntityList(entities=found)


@metered
async def get_entity_ideas(
    ctx: RunContext[ToolDeps], entity_id: int, limit: int = 10
) -> EntityIdeas | Notice:
    """Show an entity and the ideas linked to it, newest first, from every session.

    Use it to learn what is already known about a technology, project or concept (e.g. past
    decisions about it) before writing ideas that mention it.

    Args:
        entity_id: The id of an existing entity (from search_entities).
        limit: How many ideas to return, 1-25.
    """
    db = ctx.deps.db
    entities = await _entities_by_id(db, [entity_id]) if 0 < entity_id <= MAX_ID else []
    if not entities:
        return Notice(notice=f"no entity with id {entity_id}")
    rows = await db.fetchall(
        IDEA_SELECT
        + " JOIN idea_entities ie ON ie.idea_id = i.id WHERE ie.entity_id = ? ORDER BY i.id DESC LIMIT ?",
        (entity_id, clamp(limit, 10)),
    )
    return EntityIdeas(entity=entities[0], ideas=[idea_brief(row) for row in rows])


async def _entities_by_id(
    db: Database,
    ids: Sequence[int],
    kinds: Mapping[int, EntityMatchKind] | None = None,
    similarity: Mapping[int, float] | None = None,
    type: str | None = None,
) -> list[EntityInfo]:
    """Entities `ids` that exist (and have `type`, when given), in the order of `ids`."""
    if not ids:
        return []
    rows = await db.fetchall(_ENTITY_SELECT, (MAX_ALIASES, json.dumps(list(ids))))
    by_id = {row["id"]: row for row in rows if type is None or row["type"] == type}
    kinds = kinds or {}
    similarity = similarity or {}
    return [
        EntityInfo(
            id=by_id[i]["id"],
            canonical_name=by_id[i]["canonical_name"],
            type=by_id[i]["type"],
            aliases=json.loads(by_id[i]["aliases"]),
            ideas=by_id[i]["ideas"],
            match=kinds.get(i),
            similarity=similarity.get(i),
        )
        for i in ids
        if i in by_id
    ]
