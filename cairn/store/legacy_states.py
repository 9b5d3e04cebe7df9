"""Idea states that older stores wrote into idea text, moved into `ideas.state` (migration 13).

Before the column existed, the offline indexer marked what it found put off or given up in the idea's
words — "Deferred: <plan> (the user: <their words>)", "<question> (put off: <the reply>)", "<failure>
(failed 4 times, never passed)" — and readers parsed that back, together with deferring words a
model's idea used ("as a follow-up", "in a separate PR"). Upgrading must not change what is open, so
every question, problem or todo those rules read as deferred or given up gets that state here.

The offline indexer's marks are also stripped from the text, so a stored idea reads as the same idea
written today would and a re-index of its session finds it by the same hash: the content hash is
recomputed, and a person's corrections kept under the old hash follow it. A mark is left in place when
the stripped idea would collide with another idea at its line (the constraint that keeps one idea
once). A model's own deferring words are its content and stay. An export written before the column
(format 1 or 2) gets the same treatment as its rows are imported (`with_state`).
"""

from __future__ import annotations

import re
from typing import Any

import aiosqlite

from cairn.store.hashing import idea_hash
from cairn.store.vocab import OPENABLE_INTENTS, IdeaState

_GIVEN_UP_MARK = re.compile(r"\s*\(failed \d+ times, never passed\)$")
_DEFERRED_LEAD = re.compile(r"^Deferred: ")
# Runs to the end: a long mark was cut with "…" and lost its closing parenthesis.
_DEFERRED_TAIL = re.compile(r"\s*\((?:put off|the user): .*$", re.S)
# The deferring words the old readers accepted in any idea's text.
_DEFERRING_WORDS = re.compile(
    r"\b(?:follow[- ]?up|later|defer(?:red)?|postpone|not (?:in|for) this (?:branch|pr|change|session)|"
    r"separate (?:pr|issue|ticket|change|branch)|(?:log|file|open|create) (?:an? |the )?(?:\w+ )?"
    r"(?:issue|ticket|bug)|next session|out of scope|for another (?:day|time|pr))\b",
    re.I,
)


def state_in_text(content: str) -> tuple[IdeaState | None, str]:
    """The state the old readers read in `content`, and the content without the indexer's marks."""
    if _GIVEN_UP_MARK.search(content):
        return "given_up", _GIVEN_UP_MARK.sub("", content).strip()
    if _DEFERRED_LEAD.search(content) or _DEFERRED_TAIL.search(content):
        return "deferred", _DEFERRED_TAIL.sub("", _DEFERRED_LEAD.sub("", content)).strip()
    if _DEFERRING_WORDS.search(content):
        return "deferred", content
    return None, content


def with_state(row: dict[str, Any]) -> dict[str, Any]:
    """An `ideas` row of an export written before the column (format 1 or 2) as the store keeps it now:
    its state set from its text and the marks stripped (the hash with them), so it meets the copy an
    upgraded store holds."""
    if row.get("intent") not in OPENABLE_INTENTS or not isinstance(row.get("content"), str):
        return row
    state, clean = state_in_text(row["content"])
    if state is None:
        return row
    if not clean:
        return {**row, "state": state}
    return {**row, "state": state, "content": clean, "content_hash": idea_hash(clean)}


async def backfill(conn: aiosqlite.Connection) -> None:
    """Set `ideas.state` from the text of every question, problem and todo, stripping the marks."""
    async with conn.execute(
        "SELECT id, source_file_id, source_line, content, content_hash FROM ideas "
        "WHERE intent IN ('question', 'problem', 'todo') AND state IS NULL"
    ) as cursor:
        rows = list(await cursor.fetchall())
    for idea_id, file_id, line, content, old_hash in rows:
        state, clean = state_in_text(content)
        if state is None:
            continue
        new_hash = idea_hash(clean)
        if clean and clean != content and not await _taken(conn, idea_id, file_id, line, new_hash):
            await conn.execute(
                "UPDATE ideas SET state = ?, content = ?, content_hash = ? WHERE id = ?",
                (state, clean, new_hash, idea_id),
            )
            await conn.execute(
                """
                UPDATE idea_corrections SET content_hash = ?
                WHERE source_file_id IS ? AND source_line IS ? AND content_hash = ?
                  AND NOT EXISTS (SELECT 1 FROM idea_corrections o WHERE o.source_file_id IS ?
                                  AND o.source_line IS ? AND o.content_hash = ?)
                """,
                (new_hash, file_id, line, old_hash, file_id, line, new_hash),
            )
        else:
            await conn.execute("UPDATE ideas SET state = ? WHERE id = ?", (state, idea_id))


async def _taken(
    conn: aiosqlite.Connection, idea_id: int, file_id: int | None, line: int | None, new_hash: str
) -> bool:
    """Whether another idea at the same place already has `new_hash`."""
    async with conn.execute(
        "SELECT 1 FROM ideas WHERE source_file_id IS ? AND source_line IS ? AND content_hash = ? AND id <> ?",
        (file_id, line, new_hash, idea_id),
    ) as cursor:
        return await cursor.fetchone() is not None
