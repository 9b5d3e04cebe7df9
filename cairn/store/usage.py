"""Counting a use of rows a caller received: ideas a search returned, associations that lifted a result.

Reinforcement is a side effect of reading, so it must never cost the read: one write for all the rows,
and a store that cannot be written (busy past its timeout, read-only) still answers — the count is lost,
with a warning, not the search.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from typing import Literal

from cairn.store.db import Database

log = logging.getLogger(__name__)

#: The tables whose rows count their uses, and the counter each one keeps next to `last_used_at`.
COUNTERS: dict[str, str] = {"ideas": "usage_count", "search_associations": "hits"}


async def record_use(
    db: Database, table: Literal["ideas", "search_associations"], ids: Iterable[int]
) -> None:
    """One more use of each row in `ids` (repeats count once), used now."""
    distinct = sorted(set(ids))
    if not distinct:
        return
    counter = COUNTERS[table]
    try:
        async with db.write() as conn:
            await conn.execute(
                f"UPDATE {table} SET {counter} = {counter} + 1, "
                "last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(distinct),),
            )
    except sqlite3.Error:
        log.warning("could not record the use of %d %s rows", len(distinct), table, exc_info=True)
