"""The `recall_injections` ledger: what each coding-agent session was shown, and what it then expanded.

One row per injected idea, and one row without an idea per SessionStart — the context-reset marker
(startup, resume, clear, compact). After a reset the agent's context no longer holds what it was shown
before, so only injections after the session's latest marker count as "already shown"; rows are
ordered by their id, not `injected_at`, because two rows of one hook call share a millisecond.

A hit is the agent expanding an injected id with `show`: the MCP server does not know which session
calls it, so the hit goes to the idea's latest injection, whichever session that was.

It lives in the store, beside the other tables' SQL, because three layers use it: recall writes the
injections (`cairn.recall.ops`), search's `show` marks the hits (`cairn.search.ops`) and
`Store.stats` counts them — storage must not import recall to do that.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypedDict

from cairn.store.db import Database

Event = Literal["SessionStart", "UserPromptSubmit"]
EVENTS: tuple[Event, ...] = ("SessionStart", "UserPromptSubmit")


class RecallStats(TypedDict):
    injections: int
    hits: int
    hit_rate: float | None


async def record_injections(
    db: Database, session_id: str, event: Event, idea_ids: Iterable[int], *, reset: bool = False
) -> None:
    """Record that `session_id` was shown `idea_ids`; with `reset`, first mark a context reset.

    One transaction, so a concurrent prompt of the same session never sees the marker without the
    ideas injected with it (and would show them again).
    """
    ids = list(dict.fromkeys(idea_ids))
    if not ids and not reset:
        return
    async with db.write() as conn:
        if reset:
            await conn.execute(
                "INSERT INTO recall_injections (session_id, idea_id, event) VALUES (?, NULL, 'SessionStart')",
                (session_id,),
            )
        await conn.executemany(
            "INSERT INTO recall_injections (session_id, idea_id, event) VALUES (?, ?, ?)",
            [(session_id, idea, event) for idea in ids],
        )


async def shown_since_reset(db: Database, session_id: str) -> set[int]:
    """Ideas `session_id` was shown since its latest context reset (all it was shown if it had none)."""
    rows = await db.fetchall(
        """
        SELECT DISTINCT idea_id FROM recall_injections
        WHERE session_id = ? AND idea_id IS NOT NULL
          AND id > coalesce(
              (SELECT max(id) FROM recall_injections WHERE session_id = ? AND idea_id IS NULL), 0)
        """,
        (session_id, session_id),
    )
    return {int(row["idea_id"]) for row in rows}


async def record_hit(db: Database, idea_id: int) -> bool:
    """Mark the latest injection of `idea_id` as expanded; False when it was never injected or that
    injection already had its hit.

    Only the latest injection can earn the hit: expanding an idea once after it was injected in three
    sessions is one hit, not three, and expanding it again is still that one hit — so the hit rate
    says how often an injection was followed up, not how often the agent reads an idea.
    """
    async with db.write() as conn:
        cursor = await conn.execute(
            """
            UPDATE recall_injections SET hit_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
            WHERE id = (SELECT max(id) FROM recall_injections WHERE idea_id = ?) AND hit_at IS NULL
            """,
            (idea_id,),
        )
        return cursor.rowcount > 0


async def stats(db: Database) -> RecallStats:
    """Ideas injected, injections followed by a `show`, and their ratio (None before any injection)."""
    row = await db.fetchone(
        "SELECT count(idea_id) AS injections, count(CASE WHEN idea_id IS NOT NULL THEN hit_at END) AS hits "
        "FROM recall_injections"
    )
    injections = int(row["injections"]) if row else 0
    hits = int(row["hits"]) if row else 0
    return {
        "injections": injections,
        "hits": hits,
        "hit_rate": round(hits / injections, 4) if injections else None,
    }
