"""The capture and indexing cursors of the transcript rows an import adds: what the file brought, no more.

A `transcript_files` row says how far capture has read its transcript (`byte_offset`, `line`), how far
indexing has gone (`indexed_line`) and from which message on its current content starts
(`generation_start_id`, an id of the exporting store). Taken as exported, a row naming a transcript on
this machine with its size as the offset makes `sync` skip the whole transcript, a huge `indexed_line`
or `generation_start_id` keeps indexing away from it, and the last is in another store's ids anyway.

So an added row's cursors are set from the messages the import brought for it: capture resumes right
after the last of them (anything past it, or different from it, is read from the transcript itself),
indexing no further than that, and the generation starts at the imported message that ended the old
one. A transcript this machine does not have is never read, so this changes nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import aiosqlite


@dataclass
class FileClaim:
    """What an added transcript row claimed, and the messages the import added to it (exported id,
    target id), in the order they came."""

    indexed_line: Any
    generation_start_id: Any
    messages: list[tuple[Any, int]] = field(default_factory=list)


def _generation_start(claim: FileClaim) -> int:
    """The target id of the last message the exporting store held before the file's current content
    began (exported ids and the import's inserts rise together), 0 when there was none."""
    start = claim.generation_start_id
    if not isinstance(start, int) or isinstance(start, bool):
        return 0
    earlier = [local for source, local in claim.messages if isinstance(source, int) and source <= start]
    return max(earlier, default=0)


async def settle(conn: aiosqlite.Connection, claims: dict[int, FileClaim]) -> None:
    """Set every added transcript row's cursors from the messages the import brought for it."""
    for file_id, claim in claims.items():
        async with conn.execute(
            "SELECT byte_end, end_line FROM messages WHERE file_id = ? ORDER BY byte_end DESC LIMIT 1",
            (file_id,),
        ) as cursor:
            last = await cursor.fetchone()
        offset, line = (int(last[0]), int(last[1])) if last else (0, 0)
        indexed = claim.indexed_line if isinstance(claim.indexed_line, int) else 0
        await conn.execute(
            """UPDATE transcript_files SET byte_offset = ?, line = ?, size = ?, indexed_line = ?,
                   generation_start_id = ? WHERE id = ?""",
            (offset, line, offset, max(0, min(indexed, line)), _generation_start(claim), file_id),
        )
