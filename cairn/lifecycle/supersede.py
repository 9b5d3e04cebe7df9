"""Marking an idea superseded by hand (the viewer's "fix the memory"), and taking it back.

The indexing agent marks supersession from the conversation; a person looking at the memory may know
better ("we moved off Redis in March, this decision is stale"). The mark is the agent's: `superseded_by`
and `valid_until` on the old idea and a `supersedes` relation from the new one, in one transaction, so
search, recall and the vectors' metadata (the outbox trigger on `superseded_by`) treat both the same.
Undo removes exactly that mark, and only while the idea is still superseded by the same successor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cairn.search.errors import SearchError
from cairn.search.models import parse_item_id

if TYPE_CHECKING:
    from cairn.store.store import Store

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


async def supersede_op(store: Store, *, id: str | int, by: str | int, undo: bool = False) -> dict[str, Any]:
    """Mark idea `id` superseded by idea `by` (or, with `undo`, take that mark back)."""
    old, new = _idea(id), _idea(by)
    if old == new:
        raise SearchError("an idea cannot supersede itself")
    async with store.db.write() as conn:
        async with conn.execute(
            "SELECT id, superseded_by FROM ideas WHERE id IN (?, ?)", (old, new)
        ) as cursor:
            rows = {int(row[0]): row[1] for row in await cursor.fetchall()}
        for idea in (old, new):
            if idea not in rows:
                raise SearchError(f"no idea #{idea}; `cairn ideas` lists them")
        if undo:
            if rows[old] != new:
                raise SearchError(f"idea #{old} is not superseded by #{new}: nothing to undo")
            await conn.execute(
                "UPDATE ideas SET superseded_by = NULL, valid_until = NULL, "
                f"updated_at = {_NOW} WHERE id = ?",
                (old,),
            )
            await conn.execute(
                "DELETE FROM relations "
                "WHERE from_idea_id = ? AND to_idea_id = ? AND relation_type = 'supersedes'",
                (new, old),
            )
            return {"idea": old, "superseded_by": None}
        if rows[old] is not None:
            raise SearchError(f"idea #{old} is already superseded by #{rows[old]}; undo that first")
        if rows[new] == old:
            raise SearchError(f"idea #{new} is itself superseded by #{old}: they would supersede each other")
        await conn.execute(
            f"UPDATE ideas SET superseded_by = ?, valid_until = {_NOW}, updated_at = {_NOW} WHERE id = ?",
            (new, old),
        )
        await conn.execute(
            "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, 'supersedes') "
            "ON CONFLICT DO NOTHING",
            (new, old),
        )
    return {"idea": old, "superseded_by": new}


def _idea(value: str | int) -> int:
    kind, number = parse_item_id(str(value).strip() if isinstance(value, str) else value)
    if kind != "idea":
        raise SearchError(f"{value} is not an idea: only ideas are superseded")
    return number
