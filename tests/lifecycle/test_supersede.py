"""Marking an idea superseded by hand (`supersede` op, the viewer's "fix the memory") and undoing it."""

from __future__ import annotations

import pytest

from cairn.daemon.server import run_op
from cairn.search.errors import SearchError
from cairn.store.store import Store
from tests.tools.memory import add_idea


async def _two(store: Store) -> tuple[int, int]:
    async with store.db.write() as conn:
        await conn.execute("INSERT INTO sessions (id) VALUES ('s1')")
        old = await add_idea(conn, "s1", "decision", "Cache rendered pages in Redis", 1)
        new = await add_idea(conn, "s1", "decision", "Cache rendered pages in memcached", 2)
    return old, new


async def _state(store: Store, old: int, new: int) -> tuple[object, object, int]:
    row = await store.db.fetchone("SELECT superseded_by, valid_until FROM ideas WHERE id = ?", (old,))
    assert row is not None
    relations = await store.db.scalar(
        "SELECT count(*) FROM relations "
        "WHERE from_idea_id = ? AND to_idea_id = ? AND relation_type = 'supersedes'",
        (new, old),
    )
    return row[0], row[1], int(relations)


async def test_mark_and_undo_leave_the_idea_as_the_indexer_would(store: Store) -> None:
    old, new = await _two(store)
    await store.sync_vectors()

    marked = await run_op(store, "supersede", {"id": old, "by": f"#{new}"})

    assert marked == {"idea": old, "superseded_by": new}
    superseded_by, valid_until, relations = await _state(store, old, new)
    assert superseded_by == new and valid_until is not None and relations == 1
    page = await run_op(
        store, "search", {"query": "cache rendered pages", "mode": "keyword", "record_usage": False}
    )
    assert str(old) not in {r["id"] for r in page["results"]}  # superseded ideas leave search
    queued = await store.db.scalar(
        "SELECT count(*) FROM vector_outbox WHERE kind = 'ideas' AND item_id = ?", (old,)
    )
    assert queued == 1  # its vector's `superseded` flag follows

    await run_op(store, "supersede", {"id": old, "by": new, "undo": True})

    assert await _state(store, old, new) == (None, None, 0)


async def test_refusals_change_nothing(store: Store) -> None:
    old, new = await _two(store)
    with pytest.raises(SearchError, match="cannot supersede itself"):
        await run_op(store, "supersede", {"id": old, "by": old})
    with pytest.raises(SearchError, match="no idea #999"):
        await run_op(store, "supersede", {"id": old, "by": 999})
    with pytest.raises(SearchError, match="nothing to undo"):
        await run_op(store, "supersede", {"id": old, "by": new, "undo": True})
    with pytest.raises(SearchError, match="not an idea"):
        await run_op(store, "supersede", {"id": "s3", "by": new})
    await run_op(store, "supersede", {"id": old, "by": new})
    with pytest.raises(SearchError, match="already superseded"):
        await run_op(store, "supersede", {"id": old, "by": new})
    with pytest.raises(SearchError, match="supersede each other"):
        await run_op(store, "supersede", {"id": new, "by": old})
    superseded_by, _, relations = await _state(store, old, new)
    assert (superseded_by, relations) == (new, 1)
