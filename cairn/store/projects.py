"""Projects as repositories: which project a session's cwd joins, and merging projects that are one.

A project's `path` is its root (see `cairn.store.identity`); `project_paths` lists what it covers:
every cwd its sessions ran in (with the checkout — main or worktree — holding that cwd) and the Claude
Code directory names of its transcripts. A cwd is resolved once, when first seen: after that the
`project_paths` row answers, so ingest never touches the disk for a known cwd.

Where git cannot answer (the path is gone or was never a checkout), the rules are lexical and stated
in the README: a `.worktrees/<name>` path belongs to the directory above it; a path inside the root of
a *repository-like* project (found by git, by a worktree's path, or whose sessions recorded a git
branch) joins that project, the deepest one; anything else is a project of its own. A session with
no cwd joins the project its Claude Code directory already belongs to, else that directory's own.

Every path these tables hold goes through `cairn.transcripts.redact` as it is written, and every path
looked up here is redacted the same way: a token in a directory name (`~/work/ghp_…/app`) is stored as
its marker, and the same directory still finds the same project. Such a path cannot be used to reach
the disk again (git's files, the file index), so a cwd that held a secret is grouped by the lexical
rules above, on its redacted spelling.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import aiosqlite

from cairn.store.identity import FoundBy, Identity, claude_dir_name, git_identity, layout_identity
from cairn.transcripts.discover import is_subagent_file

_REPOSITORY_LIKE = """
    (p.found_by IN ('git', 'layout')
     OR EXISTS (SELECT 1 FROM sessions AS s WHERE s.project_id = p.id AND coalesce(s.git_branch, '') != ''))
"""


def redact(text: str) -> str:
    """`cairn.transcripts.redact.redact`, imported at its first use: opening the database imports this
    module (a migration regroups projects), and a search that names no project must not load the
    redaction patterns."""
    from cairn.transcripts.redact import redact as redact_text

    return redact_text(text)


async def identify(conn: aiosqlite.Connection, cwd: str) -> Identity:
    """Where `cwd` belongs: git on disk, else a worktree's path, else a repository-like stored root
    above it, else the cwd itself."""
    found = git_identity(cwd) or layout_identity(cwd)
    if found is not None:
        return found
    above = _ancestors(redact(cwd))  # stored roots are redacted
    if above:
        marks = ",".join("?" * len(above))
        async with conn.execute(
            f"SELECT p.path FROM projects AS p WHERE p.path IN ({marks}) AND {_REPOSITORY_LIKE} "
            "ORDER BY length(p.path) DESC LIMIT 1",
            above,
        ) as cursor:
            row = await cursor.fetchone()
        if row is not None:
            return Identity(root=str(row[0]), checkout=str(row[0]), found_by="layout")
    return Identity(root=cwd, checkout=cwd, found_by="cwd")


async def project_for_cwd(conn: aiosqlite.Connection, cwd: str, claude_dir: str | None) -> int:
    """The project id of a session that ran in `cwd`, creating the project and its paths if new."""
    known = await _alias(conn, cwd)
    if known is not None:
        return known
    identity = await identify(conn, cwd)
    project_id = await upsert_project(conn, identity.root, identity.found_by)
    await add_path(conn, cwd, project_id, "cwd", identity.checkout)
    await add_path(conn, claude_dir or claude_dir_name(cwd), project_id, "claude_dir", None)
    return project_id


async def project_for_claude_dir(conn: aiosqlite.Connection, directory: Path) -> int:
    """The project of a session that named no cwd: whichever its Claude Code directory belongs to."""
    known = await _alias(conn, directory.name)
    if known is not None:
        return known
    project_id = await upsert_project(conn, str(directory), "claude_dir")
    await add_path(conn, directory.name, project_id, "claude_dir", None)
    return project_id


async def upsert_project(conn: aiosqlite.Connection, root: str, found_by: FoundBy) -> int:
    """The id of the project rooted at `root`; a better-founded `found_by` (git, layout) replaces a guess.

    The root is stored redacted, and so its name: git may answer with a real path that holds a secret
    even for a cwd that did not (a symlink into `~/ghp_…/`)."""
    root = redact(root)
    async with conn.execute(
        """
        INSERT INTO projects (path, name, found_by) VALUES (?, ?, ?)
        ON CONFLICT (path) DO UPDATE SET found_by = CASE
            WHEN projects.found_by IN ('cwd', 'claude_dir') AND excluded.found_by IN ('git', 'layout')
            THEN excluded.found_by ELSE projects.found_by END
        RETURNING id
        """,
        (root, PurePosixPath(root).name or root, found_by),
    ) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def add_path(
    conn: aiosqlite.Connection, path: str, project_id: int, kind: str, checkout: str | None
) -> None:
    """Record that `path` (a cwd or a Claude Code directory name) belongs to the project; first wins.

    Both paths are stored redacted (a Claude Code directory name spells out its cwd, secret and all)."""
    await conn.execute(
        "INSERT INTO project_paths (path, project_id, kind, checkout) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (path) DO NOTHING",
        (redact(path), project_id, kind, None if checkout is None else redact(checkout)),
    )


async def merge_project(conn: aiosqlite.Connection, source: int, target: int, prefix: str = "") -> None:
    """Move everything of project `source` into `target` and delete `source`; nothing else is lost.

    `prefix` is where `source`'s directory sits inside its checkout (`assets` for a project that was
    one subdirectory): file paths relative to the old project become relative to the checkout. A file
    indexed under both keeps its newer index (it is derived from the file on disk). Every vector whose
    metadata names the project is queued again (its embedding is reused, only metadata changes).
    """
    if source == target:
        return
    for kind, select in _SESSION_ITEMS:
        await _enqueue(conn, kind, select, source)
    await conn.execute("UPDATE sessions SET project_id = ? WHERE project_id = ?", (target, source))
    await _merge_documents(conn, source, target, prefix)
    await conn.execute(
        "UPDATE OR IGNORE file_requests SET project_id = ? WHERE project_id = ?", (target, source)
    )
    await conn.execute("UPDATE learning_sessions SET project_id = ? WHERE project_id = ?", (target, source))
    await conn.execute(
        "UPDATE search_associations SET project_id = ?, rel_path = CASE "
        "WHEN rel_path IS NULL OR ? = '' THEN rel_path ELSE ? || '/' || rel_path END WHERE project_id = ?",
        (target, prefix, prefix, source),
    )
    await conn.execute("UPDATE project_paths SET project_id = ? WHERE project_id = ?", (target, source))
    await conn.execute("DELETE FROM projects WHERE id = ?", (source,))


async def requeue_vectors(conn: aiosqlite.Connection, project_id: int) -> None:
    """Queue every vector whose metadata names the project again: its path changed (no trigger watches
    `projects.path`), and an embedding is reused, only its metadata is written anew."""
    for kind, select in (*_SESSION_ITEMS, *_PROJECT_ITEMS):
        await _enqueue(conn, kind, select, project_id)


async def regroup(conn: aiosqlite.Connection) -> None:
    """Re-derive every project from its cwd and merge the ones that are one repository (migration 11).

    Shorter paths go first, so a root is settled before the paths inside it ask for it. Running it
    again changes nothing: every project then is its own root.
    """
    async with conn.execute(
        """
        SELECT p.id, p.path FROM projects AS p
        WHERE NOT (EXISTS (SELECT 1 FROM sessions s WHERE s.project_id = p.id AND s.cwd IS NULL)
                   AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.project_id = p.id AND s.cwd IS NOT NULL))
        ORDER BY length(p.path), p.id
        """
    ) as cursor:
        rows = [(int(r[0]), str(r[1])) for r in await cursor.fetchall()]
    for project_id, path in rows:
        identity = await identify(conn, path)
        target = await upsert_project(conn, identity.root, identity.found_by)
        await merge_project(conn, project_id, target, _inside(path, identity.checkout))
        await add_path(conn, path, target, "cwd", identity.checkout)
    async with conn.execute(
        "SELECT DISTINCT s.project_id, f.path, s.cwd "
        "FROM sessions s JOIN transcript_files f ON f.session_id = s.id "
        "WHERE s.project_id IS NOT NULL ORDER BY s.cwd IS NULL, f.id"
    ) as cursor:
        transcripts = [(int(r[0]), str(r[1]), r[2]) for r in await cursor.fetchall()]
    for project_id, file_path, cwd in transcripts:
        directory = _claude_dir(Path(file_path))
        if cwd is None:
            known = await _alias(conn, directory.name)
            if known is not None and known != project_id:
                await merge_project(conn, project_id, known)
                continue
            await conn.execute("UPDATE projects SET found_by = 'claude_dir' WHERE id = ?", (project_id,))
        await add_path(conn, directory.name, project_id, "claude_dir", None)


def _claude_dir(path: Path) -> Path:
    """The Claude Code project directory a transcript sits in (`<project>/<session>/subagents/…` too)."""
    return path.parent.parent.parent if is_subagent_file(path) else path.parent


async def _alias(conn: aiosqlite.Connection, path: str) -> int | None:
    """The project `path` was recorded for, looked up as `add_path` stored it (redacted)."""
    async with conn.execute("SELECT project_id FROM project_paths WHERE path = ?", (redact(path),)) as cursor:
        row = await cursor.fetchone()
    return None if row is None else int(row[0])


#: The vectors of a project's sessions, by outbox kind: what names the project in its metadata.
_SESSION_ITEMS: tuple[tuple[str, str], ...] = (
    ("messages", "SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.project_id = ?"),
    (
        "passages",
        "SELECT mp.id FROM message_passages mp JOIN messages m ON m.id = "
        "mp.message_id JOIN sessions s ON s.id = m.session_id WHERE s.project_id = ?",
    ),
    ("ideas", "SELECT i.id FROM ideas i JOIN sessions s ON s.id = i.session_id WHERE s.project_id = ?"),
    ("spans", "SELECT t.id FROM topic_spans t JOIN sessions s ON s.id = t.session_id WHERE s.project_id = ?"),
)
#: The vectors of a project's indexed files and learned associations.
_PROJECT_ITEMS: tuple[tuple[str, str], ...] = (
    (
        "chunks",
        "SELECT c.id FROM file_chunks c JOIN file_documents d ON d.id = c.document_id WHERE d.project_id = ?",
    ),
    ("associations", "SELECT id FROM search_associations WHERE project_id = ?"),
)


async def _enqueue(conn: aiosqlite.Connection, kind: str, select: str, project_id: int) -> None:
    await conn.execute(
        f"INSERT INTO vector_outbox (kind, item_id, op) SELECT '{kind}', id, 'upsert' FROM ({select}) "
        "WHERE true ON CONFLICT (kind, item_id) DO UPDATE SET op = excluded.op, "
        "queued_at = excluded.queued_at, revision = revision + 1",
        (project_id,),
    )


async def _merge_documents(conn: aiosqlite.Connection, source: int, target: int, prefix: str) -> None:
    """Move `source`'s indexed files to `target`, rebased by `prefix`; of two copies the newer stays."""
    async with conn.execute(
        "SELECT id, rel_path, indexed_at FROM file_documents WHERE project_id = ?", (source,)
    ) as cursor:
        documents = [(int(r[0]), str(r[1]), str(r[2])) for r in await cursor.fetchall()]
    for document_id, rel_path, indexed_at in documents:
        rebased = f"{prefix}/{rel_path}" if prefix else rel_path
        async with conn.execute(
            "SELECT id, indexed_at FROM file_documents WHERE project_id = ? AND rel_path = ?",
            (target, rebased),
        ) as cursor:
            clash = await cursor.fetchone()
        if clash is not None:
            if str(clash[1]) >= indexed_at:
                await conn.execute("DELETE FROM file_documents WHERE id = ?", (document_id,))
                continue
            await conn.execute("DELETE FROM file_documents WHERE id = ?", (int(clash[0]),))
        await conn.execute(
            "UPDATE file_documents SET project_id = ?, rel_path = ? WHERE id = ?",
            (target, rebased, document_id),
        )
        await _enqueue(conn, "chunks", "SELECT id FROM file_chunks WHERE document_id = ?", document_id)


def _inside(path: str, checkout: str) -> str:
    """Where `path` sits below `checkout` ('' for the checkout itself or a path outside it)."""
    real = os.path.realpath(path) if os.path.isdir(path) else path
    for candidate in (real, path):
        try:
            relative = PurePosixPath(candidate).relative_to(checkout).as_posix()
        except ValueError:
            continue
        return "" if relative == "." else relative
    return ""


def _ancestors(path: str) -> list[str]:
    """The directories above `path`, nearest first (not `/`)."""
    pure = PurePosixPath(path)
    return [str(parent) for parent in pure.parents if str(parent) != "/"] if pure.is_absolute() else []
