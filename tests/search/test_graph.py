"""An idea's neighbourhood (`neighbourhood` op, the viewer's graph): two hops over relations, both
directions, and shared entities, nearest first, capped; and its radial drawing."""

from __future__ import annotations

import pytest

from cairn.search.errors import SearchError
from cairn.search.graph import PER_ENTITY, neighbourhood
from cairn.store.store import Store
from cairn.ui.views.graph import SIZE, layout
from tests.tools.memory import add_idea, insert


async def _world(store: Store) -> dict[str, int]:
    async with store.db.write() as conn:
        await conn.execute("INSERT INTO sessions (id) VALUES ('s1')")
        ids = {
            name: await add_idea(conn, "s1", intent, text, line, said_at=f"2025-09-03T10:00:{line:02d}Z")
            for line, (name, intent, text) in enumerate(
                [
                    ("centre", "decision", "Keep SQLite as the source of truth"),
                    ("builds", "decision", "Chroma is rebuilt from SQLite through the outbox"),
                    ("older", "decision", "Keep the truth in Chroma"),
                    ("far", "solution", "The outbox drain retries after a crash"),
                    ("sharer", "conclusion", "SQLite WAL lets readers see committed rows"),
                    ("alone", "context", "Lunch is at noon"),
                ],
                start=1,
            )
        }
        for source, target, kind in (
            ("builds", "centre", "builds_on"),
            ("centre", "older", "supersedes"),
            ("far", "builds", "builds_on"),
        ):
            await conn.execute(
                "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, ?)",
                (ids[source], ids[target], kind),
            )
        ids["sqlite"] = await insert(
            conn, "INSERT INTO entities (canonical_name, type) VALUES ('SQLite', 'technology')"
        )
        for idea in ("centre", "sharer"):
            await conn.execute(
                "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?)", (ids[idea], ids["sqlite"])
            )
    return ids


async def test_two_hops_over_relations_both_ways_and_shared_entities(store: Store) -> None:
    ids = await _world(store)

    graph = await neighbourhood(store, id=ids["centre"])

    hops = {node["id"]: node["hop"] for node in graph["nodes"]}
    assert hops == {
        str(ids["centre"]): 0,
        str(ids["builds"]): 1,  # it builds on the centre: an incoming relation
        str(ids["older"]): 1,  # the centre supersedes it: outgoing
        f"e{ids['sqlite']}": 1,
        str(ids["far"]): 2,  # builds on a neighbour
        str(ids["sharer"]): 2,  # mentions the centre's entity
    }
    edges = {(e["source"], e["target"], e["type"]) for e in graph["edges"]}
    assert (str(ids["centre"]), str(ids["older"]), "supersedes") in edges
    assert (str(ids["sharer"]), f"e{ids['sqlite']}", "mentions") in edges
    assert not graph["truncated"]
    entity = next(node for node in graph["nodes"] if node["kind"] == "entity")
    assert (entity["label"], entity["intent"]) == ("SQLite", "technology")


async def test_the_walk_stops_at_the_limit_nearest_first(store: Store) -> None:
    ids = await _world(store)

    graph = await neighbourhood(store, id=ids["centre"], limit=3)

    assert graph["truncated"] and len(graph["nodes"]) == 3
    assert {node["hop"] for node in graph["nodes"]} == {0, 1}
    kept = {node["id"] for node in graph["nodes"]}
    assert all(e["source"] in kept and e["target"] in kept for e in graph["edges"])


async def test_an_entity_brings_only_its_most_recent_ideas(store: Store) -> None:
    ids = await _world(store)
    async with store.db.write() as conn:
        for n in range(PER_ENTITY + 3):
            idea = await add_idea(
                conn, "s1", "context", f"SQLite note {n}", 100 + n, said_at=f"2025-09-04T{n:02d}:00:00Z"
            )
            await conn.execute(
                "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?)", (idea, ids["sqlite"])
            )

    graph = await neighbourhood(store, id=ids["centre"], limit=60)

    via_entity = [
        e for e in graph["edges"] if e["target"] == f"e{ids['sqlite']}" and e["source"] != str(ids["centre"])
    ]
    assert len(via_entity) == PER_ENTITY
    assert str(ids["sharer"]) not in {e["source"] for e in via_entity}  # older than the notes


async def test_refusals_say_what_is_wrong(store: Store) -> None:
    await _world(store)
    with pytest.raises(SearchError, match="no idea #999"):
        await neighbourhood(store, id=999)
    with pytest.raises(SearchError, match="not an idea"):
        await neighbourhood(store, id="s1")
    with pytest.raises(SearchError, match="limit"):
        await neighbourhood(store, id=1, limit=1)


async def test_the_drawing_puts_each_hop_on_its_ring(store: Store) -> None:
    ids = await _world(store)

    drawing = layout(await neighbourhood(store, id=ids["centre"]))

    centre = SIZE / 2
    radius = {
        node["hop"]: round(((node["x"] - centre) ** 2 + (node["y"] - centre) ** 2) ** 0.5)
        for node in drawing["nodes"]
    }
    assert radius[0] == 0 < radius[1] < radius[2] <= centre
    assert len(drawing["lines"]) == len((await neighbourhood(store, id=ids["centre"]))["edges"])
    assert drawing == layout(await neighbourhood(store, id=ids["centre"]))  # the same graph, the same picture
