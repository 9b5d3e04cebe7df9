"""Which stored projects a `project` filter names: a path (as Claude Code records the cwd) or a name."""

from __future__ import annotations

import os

from cairn.store.db import Database


async def resolve_projects(db: Database, value: str) -> list[tuple[int, str]]:
    """`(id, path)` of the projects `value` names, by exact path, resolved path or name; [] if none.

    A name can be shared by two checkouts (`~/a/api`, `~/b/api`): both are returned, since the user
    typed what they see in listings.
    """
    text = value.strip()
    if not text:
        return []
    candidates = {text, text.rstrip("/") or "/"}
    if text.startswith(("~", ".", "/")):
        candidates.add(os.path.realpath(os.path.expanduser(text)))
    marks = ",".join("?" * len(candidates))
    rows = await db.fetchall(
        f"SELECT id, path FROM projects WHERE path IN ({marks}) OR name = ? ORDER BY id",
        (*candidates, text),
    )
    return [(int(row["id"]), str(row["path"])) for row in rows]
