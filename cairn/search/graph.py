"""An idea's neighbourhood for the viewer's graph: the ideas and entities within two hops of it.

Ideas link to ideas by relations (either direction: what it supersedes and what supersedes it are both
its neighbours) and to the entities they mention; an entity links every idea that mentions it, so two
ideas sharing an entity are two hops apart. The walk is breadth-first and stops at `limit` nodes,
nearest first. An entity mentioned by hundreds of ideas (the project itself) would swamp the picture,
so each entity brings at most `PER_ENTITY` of its other ideas, the most recent.

A socket op like `show` (registered in `cairn.daemon.server.OPS`), read-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cairn.search.errors import SearchError
from cairn.search.models import parse_item_id, preview

if TYPE_CHECKING:
    from cairn.store.db import Database
    from cairn.store.store import Store

MAX_NODES = 60
PER_ENTITY = 6


async def neighbourhood(store: Store, *, id: str | int, limit: int = 30) -> dict[str, Any]:
    """Nodes (ideas `123`, entities `e45`) with their hop from the idea `id`, and the edges between
    them: relations by type, `mentions` from an idea to an entity."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 2 <= limit <= MAX_NODES:
        raise SearchError(f"bad arguments: limit must be a whole number from 2 to {MAX_NODES}")
    kind, number = parse_item_id(id)
    if kind != "idea":
        raise SearchError(f"{id} is not an idea: the graph shows an idea's neighbourhood")
    db = store.db
    if await db.scalar("SELECT 1 FROM ideas WHERE id = ?", (number,)) is None:
        raise SearchError(f"no idea #{number}; `cairn ideas` lists them")
    hops: dict[str, int] = {str(number): 0}
    edges: set[tuple[str, str, str]] = set()
    frontier = [str(number)]
    for hop in (1, 2):
        found: list[str] = []
        for node in frontier:
            for edge, other in await _links(db, node):
                edges.add(edge)
                if other not in hops and len(hops) < limit:
                    hops[other] = hop
                    found.append(other)
        frontier = found
    nodes = await _describe(db, hops)
    kept = [edge for edge in sorted(edges) if edge[0] in hops and edge[1] in hops]
    return {
        "center": str(number),
        "nodes": nodes,
        "edges": [{"source": s, "target": t, "type": kind} for s, t, kind in kept],
        "truncated": len(hops) >= limit,
    }


async def _links(db: Database, node: str) -> list[tuple[tuple[str, str, str], str]]:
    """Each edge at `node` as (source, target, type), with the node at its other end."""
    if node.startswith("e"):
        rows = await db.fetchall(
            "SELECT ie.idea_id FROM idea_entities AS ie JOIN ideas AS i ON i.id = ie.idea_id "
            "WHERE ie.entity_id = ? ORDER BY i.said_at DESC, i.id DESC LIMIT ?",
            (int(node[1:]), PER_ENTITY),
        )
        return [((str(row[0]), node, "mentions"), str(row[0])) for row in rows]
    idea = int(node)
    rows = await db.fetchall(
        "SELECT from_idea_id, to_idea_id, relation_type FROM relations "
        "WHERE from_idea_id = ? OR to_idea_id = ? ORDER BY id",
        (idea, idea),
    )
    links = [((str(r[0]), str(r[1]), str(r[2])), str(r[1] if r[0] == idea else r[0])) for r in rows]
    entities = await db.fetchall(
        "SELECT entity_id FROM idea_entities WHERE idea_id = ? ORDER BY entity_id", (idea,)
    )
    links += [((node, f"e{row[0]}", "mentions"), f"e{row[0]}") for row in entities]
    return links


async def _describe(db: Database, hops: dict[str, int]) -> list[dict[str, Any]]:
    ideas = [int(node) for node in hops if not node.startswith("e")]
    entities = [int(node[1:]) for node in hops if node.startswith("e")]
    marks = ",".join("?" * len(ideas))
    idea_rows = await db.fetchall(
        "SELECT id, intent, content, superseded_by IS NOT NULL AS superseded FROM ideas "
        f"WHERE id IN ({marks})",
        ideas,
    )
    described: dict[str, dict[str, Any]] = {
        str(row["id"]): {
            "id": str(row["id"]),
            "kind": "idea",
            "intent": row["intent"],
            "label": preview(str(row["content"])),
            "superseded": bool(row["superseded"]),
        }
        for row in idea_rows
    }
    if entities:
        marks = ",".join("?" * len(entities))
        for row in await db.fetchall(
            f"SELECT id, canonical_name, type FROM entities WHERE id IN ({marks})", entities
        ):
            described[f"e{row['id']}"] = {
                "id": f"e{row['id']}",
                "kind": "entity",
                "intent": row["type"],
                "label": str(row["canonical_name"]),
                "superseded": False,
            }
    return [{**described[node], "hop": hop} for node, hop in hops.items() if node in described]
