"""What the search feedback loop learned, as `cairn learn` shows it: associations listed, and forgotten.

Plain SQL over `search_associations`; the socket ops that check their arguments and call these
(`learn_associations`, `learn_forget`) are in `cairn.search.ops`, beside `learner_stats`.

Forgetting deletes the SQLite rows only: the outbox triggers queue the vectors' deletion, so Chroma
follows at the next vector sync like every other change (SQLite is the truth, Chroma derived).
"""

from __future__ import annotations

from typing import Any

from cairn.store.db import Database
from cairn.store.json_columns import json_strings


async def list_associations(
    db: Database, *, project_ids: list[int] | None = None, source: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Search associations, most recently learned first, with their project and counters."""
    where, params = ["1 = 1"], []
    if project_ids is not None:
        where.append(f"a.project_id IN ({','.join('?' * len(project_ids))})")
        params.extend(project_ids)
    if source is not None:
        where.append("a.source = ?")
        params.append(source)
    rows = await db.fetchall(
        f"""
        SELECT a.id, a.query, a.file_path, a.rel_path, p.name AS project, p.path AS project_path,
               a.source, a.reason, a.grep_patterns, a.original_score, a.times_learned, a.hits,
               a.created_at, a.learned_at, a.last_used_at
        FROM search_associations a
        LEFT JOIN projects p ON p.id = a.project_id
        WHERE {" AND ".join(where)}
        ORDER BY a.learned_at DESC, a.id DESC
        LIMIT ?
        """,
        (*params, limit),
    )
    return [{**dict(row), "grep_patterns": json_strings(row["grep_patterns"])} for row in rows]


async def forget_associations(db: Database, ids: list[int]) -> dict[str, list[int]]:
    """Delete the associations `ids` names, in one transaction; which were deleted and which not found."""
    wanted = sorted(set(ids))
    marks = ",".join("?" * len(wanted))
    async with db.write() as conn:
        async with conn.execute(f"SELECT id FROM search_associations WHERE id IN ({marks})", wanted) as cur:
            found = sorted(int(row[0]) for row in await cur.fetchall())
        if found:
            await conn.execute(
                f"DELETE FROM search_associations WHERE id IN ({','.join('?' * len(found))})", found
            )
    deleted = set(found)
    return {"deleted": found, "missing": [i for i in wanted if i not in deleted]}
