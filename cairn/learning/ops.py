"""The learning loop as socket ops: `learn_associations` lists what was learned, `learn_forget` unlearns.

Registered in `cairn.daemon.server.OPS` next to `learner_stats` (`cairn.search.ops`), so `cairn learn`
answers the same through the daemon and without it. Arguments arrive as JSON from another process and
are checked by the same one-line validation the search ops use; a bad one is a `SearchError` (a
`ValueError`), which the socket sends back as a refusal and the CLI prints as one error line.

Forgetting deletes the SQLite rows only: the outbox triggers queue the vectors' deletion, so Chroma
follows at the next vector sync like every other change (SQLite is the truth, Chroma derived).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.search.errors import SearchError
from cairn.search.ops import parse_args
from cairn.search.projects import resolve_projects
from cairn.store.db import Database
from cairn.store.json_columns import json_strings

if TYPE_CHECKING:
    from cairn.store.store import Store

MAX_LISTED = 10_000
MAX_FORGET = 1_000


class _AssociationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    source: Literal["learned", "agent"] | None = None
    limit: int = Field(default=50, ge=1, le=MAX_LISTED)


class _ForgetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[int] = Field(min_length=1, max_length=MAX_FORGET)


async def project_ids(db: Database, project: str | None) -> list[int] | None:
    """The ids of the projects `project` names (None: every project); a name nobody stored is refused."""
    if project is None:
        return None
    found = await resolve_projects(db, project)
    if not found:
        raise SearchError(f"no project {project!r} is stored (`cairn projects` lists them)")
    return [pid for pid, _ in found]


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


async def learn_associations(
    store: Store, *, project: str | None = None, source: str | None = None, limit: int | None = None
) -> Any:
    """What the loop and the indexing agent learned: one row per (query, file) association."""
    given = {k: v for k, v in {"project": project, "source": source, "limit": limit}.items() if v is not None}
    args = parse_args(_AssociationArgs, given, "learn_associations request")
    ids = await project_ids(store.db, args.project)
    return await list_associations(store.db, project_ids=ids, source=args.source, limit=args.limit)


async def learn_forget(store: Store, *, ids: list[int]) -> Any:
    """Delete associations by id; their vectors go at the next vector sync (through the outbox)."""
    args = parse_args(_ForgetArgs, {"ids": ids}, "learn_forget request")
    return await forget_associations(store.db, args.ids)
