"""Correcting an idea by hand: answered, done, declined, open again, or its importance.

The indexer decides from the conversation whether a question was answered or a todo done; a person
looking at the memory may know better ("we settled that in the issue tracker", "we will not do that").
A correction changes the idea's row as the indexer would — `answered_at`/`completed_at` with a
resolution that says who decided, `declined_at`, `importance` — so search, recall, open items and the
board see it at once, and records it in `idea_corrections` (`cairn.store.corrections`) in the same
transaction, so an idea made again at the same place by a re-index or an import gets it again.

- `answered`: questions and problems only; `done`: todos only; `declined` (a suggestion turned down:
  still found by search as history, left out of recall and open items): any intent.
- `open` takes back an answered, done or declined state, whoever set it — the indexer included, and
  a re-index then leaves it open too.
- `importance` in [0, 1] feeds search ranking as the indexer's estimate does.

"Wrong" is not a state here: a wrong idea is forgotten (`cairn forget --idea`), which leaves a
`forgotten` correction behind so the idea is not made again.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cairn.search.errors import SearchError
from cairn.search.models import parse_item_id
from cairn.store.corrections import record

if TYPE_CHECKING:
    from cairn.store.store import Store

#: The states a person can give an idea, and the intents each applies to (None: any).
STATES: dict[str, tuple[str, ...] | None] = {
    "answered": ("question", "problem"),
    "done": ("todo",),
    "declined": None,
    "open": None,
}
ANSWERED = "marked answered by the user"
DONE = "marked done by the user"

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
_COLUMNS = (
    "id, intent, source_file_id, source_line, content_hash, importance, answered_at, completed_at, "
    "declined_at, resolution"
)


async def correct_op(
    store: Store, *, id: str | int, state: str | None = None, importance: float | None = None
) -> dict[str, Any]:
    """Give idea `id` a `state` (answered, done, declined, open) and/or an `importance` in [0, 1]."""
    idea = _idea(id)
    _check(state, importance)
    async with store.db.write() as conn:
        async with conn.execute(f"SELECT {_COLUMNS} FROM ideas WHERE id = ?", (idea,)) as cursor:
            found = await cursor.fetchone()
        if found is None:
            raise SearchError(f"no idea #{idea}; `cairn ideas` lists them")
        row = dict(zip(_COLUMNS.split(", "), found, strict=True))
        if state is not None:
            await _set_state(conn, row, state)
        if importance is not None:
            await conn.execute(
                f"UPDATE ideas SET importance = ?, updated_at = {_NOW} WHERE id = ?", (importance, idea)
            )
        recorded = await record(conn, row, state=state, importance=importance)
        async with conn.execute(f"SELECT {_COLUMNS} FROM ideas WHERE id = ?", (idea,)) as cursor:
            after = dict(zip(_COLUMNS.split(", "), await cursor.fetchone() or (), strict=True))
    return {
        "idea": idea,
        "intent": after["intent"],
        "importance": after["importance"],
        "answered_at": after["answered_at"],
        "completed_at": after["completed_at"],
        "declined_at": after["declined_at"],
        "resolution": after["resolution"],
        # An idea with no source place (none the indexer makes) cannot be found again by a re-index.
        "recorded": recorded,
    }


def _check(state: str | None, importance: float | None) -> None:
    if state is None and importance is None:
        raise SearchError(
            "nothing to correct: give a state (answered, done, declined, open) or an importance"
        )
    if state is not None and state not in STATES:
        raise SearchError(f"unknown state {state!r}: answered, done, declined or open")
    if importance is not None and (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not math.isfinite(importance)
        or not 0 <= importance <= 1
    ):
        raise SearchError(f"importance must be a number from 0 to 1, not {importance!r}")


async def _set_state(conn: Any, row: dict[str, Any], state: str) -> None:
    idea, intent = row["id"], row["intent"]
    allowed = STATES[state]
    if allowed is not None and intent not in allowed:
        raise SearchError(f"idea #{idea} is a {intent}: only a {' or '.join(allowed)} can be marked {state}")
    if state == "answered":
        if row["answered_at"] is not None:
            raise SearchError(f"idea #{idea} is already answered; mark it open first to change that")
        await conn.execute(
            f"UPDATE ideas SET answered_at = {_NOW}, resolution = ?, resolved_line = NULL, "
            f"answered_by = NULL, declined_at = NULL, updated_at = {_NOW} WHERE id = ?",
            (ANSWERED, idea),
        )
    elif state == "done":
        if row["completed_at"] is not None:
            raise SearchError(f"idea #{idea} is already done; mark it open first to change that")
        await conn.execute(
            f"UPDATE ideas SET completed_at = {_NOW}, resolution = ?, resolved_line = NULL, "
            f"declined_at = NULL, updated_at = {_NOW} WHERE id = ?",
            (DONE, idea),
        )
    elif state == "declined":
        if row["declined_at"] is not None:
            raise SearchError(f"idea #{idea} is already declined")
        await conn.execute(
            f"UPDATE ideas SET declined_at = {_NOW}, updated_at = {_NOW} WHERE id = ?", (idea,)
        )
    else:
        if row["answered_at"] is None and row["completed_at"] is None and row["declined_at"] is None:
            raise SearchError(f"idea #{idea} is not answered, done or declined: nothing to reopen")
        await conn.execute(
            "UPDATE ideas SET answered_at = NULL, answered_by = NULL, resolved_line = NULL, "
            f"resolution = NULL, completed_at = NULL, declined_at = NULL, updated_at = {_NOW} WHERE id = ?",
            (idea,),
        )


def _idea(value: str | int) -> int:
    kind, number = parse_item_id(str(value).strip() if isinstance(value, str) else value)
    if kind != "idea":
        raise SearchError(f"{value} is not an idea: only ideas are corrected")
    return number
