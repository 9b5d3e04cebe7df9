"""Which stored projects a `project` filter names: any path inside the project, its name, or a Claude
Code directory name.

A project is a repository (`cairn.store.projects`): a path given here is looked up as what the store
recorded (root, a cwd of one of its sessions, a Claude Code directory name), then by git's files on
disk (a subdirectory of a worktree belongs to the main repository), then by the nearest stored path
above it (a subdirectory of a checkout that no longer exists). The store holds every path redacted
(`cairn.store.projects`), so each spelling is also looked up redacted: a directory whose name held a
token is still found by the path the user (or a hook) gives.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from cairn.search.errors import SearchError
from cairn.store.db import Database
from cairn.store.identity import git_identity
from cairn.transcripts.redact import redact

UNKNOWN_HINT = "`cairn projects` lists the stored projects and the paths each covers"


async def resolve_projects(db: Database, value: str) -> list[tuple[int, str]]:
    """`(id, root path)` of the projects `value` names; [] if none.

    A name can be shared by two repositories (`~/a/api`, `~/b/api`): both are returned, since the user
    typed what they see in listings.
    """
    text = value.strip()
    if not text:
        return []
    candidates = list(dict.fromkeys([text, text.rstrip("/") or "/"]))
    path_like = text.startswith(("~", ".", "/"))
    if path_like:
        candidates.append(os.path.realpath(os.path.expanduser(text)))
    candidates = list(dict.fromkeys([*candidates, *map(redact, candidates)]))
    found = await _exact(db, candidates, text)
    if found or not path_like:
        return found
    for candidate in candidates:
        identity = git_identity(candidate)
        if identity is not None:
            found = await _exact(db, [identity.root, redact(identity.root)], None)
            if found:
                return found
    return await _nearest_above(db, [c for c in candidates if c.startswith("/")])


async def project_ids(db: Database, project: str | None) -> list[int] | None:
    """The ids of the projects `project` names (None: every project); a name nobody stored is refused."""
    if project is None:
        return None
    found = await resolve_projects(db, project)
    if not found:
        raise SearchError(f"no project {project!r} is stored (`cairn projects` lists them)")
    return [pid for pid, _ in found]


async def _exact(db: Database, candidates: list[str], name: str | None) -> list[tuple[int, str]]:
    marks = ",".join("?" * len(candidates))
    rows = await db.fetchall(
        f"""
        SELECT id, path FROM projects
        WHERE path IN ({marks}) OR name IN (?, ?)
           OR id IN (SELECT project_id FROM project_paths WHERE path IN ({marks}))
        ORDER BY id
        """,
        (*candidates, name, None if name is None else redact(name), *candidates),
    )
    return [(int(row["id"]), str(row["path"])) for row in rows]


async def _nearest_above(db: Database, paths: list[str]) -> list[tuple[int, str]]:
    """The project whose root, session cwd or checkout is the deepest directory above one of `paths`."""
    above = [str(p) for path in paths for p in PurePosixPath(path).parents if str(p) != "/"]
    if not above:
        return []
    marks = ",".join("?" * len(above))
    row = await db.fetchone(
        f"""
        SELECT p.id, p.path, length(m.at) AS depth FROM projects p JOIN (
            SELECT id AS project_id, path AS at FROM projects WHERE path IN ({marks})
            UNION ALL SELECT project_id, path FROM project_paths WHERE kind = 'cwd' AND path IN ({marks})
            UNION ALL SELECT project_id, checkout FROM project_paths WHERE checkout IN ({marks})
        ) AS m ON m.project_id = p.id
        ORDER BY depth DESC, p.id LIMIT 1
        """,
        (*above, *above, *above),
    )
    return [] if row is None else [(int(row["id"]), str(row["path"]))]
