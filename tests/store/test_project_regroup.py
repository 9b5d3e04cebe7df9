"""Migration 11 regroups a v10 store's one-project-per-cwd into one project per repository."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from cairn.store.migrations import LATEST_VERSION, migrate
from cairn.store.projects import regroup
from tests.helpers.repos import make_worktrees


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[aiosqlite.Connection]:
    connection = await aiosqlite.connect(tmp_path / "cairn.db", isolation_level=None)
    await connection.execute("PRAGMA foreign_keys = ON")
    yield connection
    await connection.close()


async def rows(conn: aiosqlite.Connection, sql: str) -> list[tuple[object, ...]]:
    async with conn.execute(sql) as cursor:
        return [tuple(r) for r in await cursor.fetchall()]


async def test_v10_projects_of_one_repository_become_one_and_nothing_is_lost(
    conn: aiosqlite.Connection, tmp_path: Path
) -> None:
    repo = make_worktrees(tmp_path / "src")
    (repo.a / "assets").mkdir()
    gone = "/gone/u/cli"
    await migrate(conn, target=10)
    projects = [
        (1, str(repo.main), "main"),
        (2, str(repo.a), "feature-a"),
        (3, str(repo.b), "feature-b"),
        (4, str(repo.a / "assets"), "feature-a"),
        (5, gone, "main"),
        (6, f"{gone}/.worktrees/1", "dependabot"),
        (7, f"{gone}/docs", ""),
        (8, "/elsewhere/scratch", ""),
    ]
    await conn.execute("BEGIN")
    for pid, path, branch in projects:
        await conn.execute(
            "INSERT INTO projects (id, path, name) VALUES (?, ?, ?)", (pid, path, Path(path).name)
        )
        await conn.execute(
            "INSERT INTO sessions (id, project_id, cwd, git_branch) VALUES (?, ?, ?, ?)",
            (f"s{pid}", pid, path, branch),
        )
        await conn.execute(
            "INSERT INTO transcript_files (id, path, session_id) VALUES (?, ?, ?)",
            (pid, f"/h/.claude/projects/{path.replace('/', '-')}/s{pid}.jsonl", f"s{pid}"),
        )
        await conn.execute(
            "INSERT INTO messages (file_id, session_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash) VALUES (?, ?, 1, 1, 0, 10, 'user', 'text', ?, ?)",
            (pid, f"s{pid}", f"message of project {pid}", f"h{pid}"),
        )
    # A session that named no cwd, in the Claude Code directory of worktree b.
    claude_b = f"/h/.claude/projects/{str(repo.b).replace('/', '-')}"
    await conn.execute("INSERT INTO projects (id, path, name) VALUES (9, ?, 'x')", (claude_b,))
    await conn.execute("INSERT INTO sessions (id, project_id) VALUES ('s9', 9)")
    await conn.execute(
        "INSERT INTO transcript_files (id, path, session_id) VALUES (9, ?, 's9')", (f"{claude_b}/s9.jsonl",)
    )
    # Derived rows that name a project: a file indexed in two places, requests, associations, learning.
    for doc_id, pid, rel, at in (
        (1, 1, "src/app.py", "2025-01-01"),
        (2, 2, "src/app.py", "2025-02-01"),
        (3, 4, "logo.txt", "2025-01-01"),
    ):
        await conn.execute(
            "INSERT INTO file_documents (id, project_id, rel_path, content_hash, size, indexed_at) "
            "VALUES (?, ?, ?, 'h', 1, ?)",
            (doc_id, pid, rel, at),
        )
        await conn.execute(
            "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content) "
            "VALUES (?, 0, 1, 1, ?)",
            (doc_id, f"chunk {doc_id}"),
        )
    await conn.execute("INSERT INTO file_requests (project_id, path, reason) VALUES (4, 'logo.txt', 'read')")
    await conn.execute(
        "INSERT INTO search_associations (query, file_path, project_id, rel_path) VALUES "
        "('the logo', ?, 4, 'logo.txt')",
        (str(repo.a / "assets" / "logo.txt"),),
    )
    await conn.execute(
        "INSERT INTO learning_sessions "
        "(session_id, tool_use_id, project_id, tool_name, query, status, started_at) "
        "VALUES ('s3', 't1', 3, 'Grep', 'q', 'active', '2025-01-01')"
    )
    await conn.execute("DELETE FROM vector_outbox")
    await conn.execute("COMMIT")

    assert await migrate(conn) == LATEST_VERSION

    by_session = dict(
        await rows(conn, "SELECT s.id, p.path FROM sessions s JOIN projects p ON p.id = s.project_id")
    )
    main = str(repo.main)
    assert by_session == {
        "s1": main,
        "s2": main,
        "s3": main,
        "s4": main,
        "s9": main,
        "s5": gone,
        "s6": gone,
        "s7": gone,  # .worktrees layout; docs inside a root whose sessions had a branch
        "s8": "/elsewhere/scratch",
    }
    assert await rows(conn, "SELECT count(*) FROM messages") == [(8,)]
    assert await rows(conn, "SELECT path, found_by FROM projects ORDER BY path") == sorted(
        [(main, "git"), (gone, "layout"), ("/elsewhere/scratch", "cwd")]
    )
    # The newer copy of src/app.py stays; the subdirectory's file is now relative to its checkout.
    assert await rows(conn, "SELECT id, rel_path FROM file_documents ORDER BY id") == [
        (2, "src/app.py"),
        (3, "assets/logo.txt"),
    ]
    assert await rows(conn, "SELECT rel_path FROM search_associations") == [("assets/logo.txt",)]
    assert await rows(conn, "SELECT count(*) FROM file_requests") == [(1,)]
    assert await rows(
        conn, "SELECT p.path FROM learning_sessions l JOIN projects p ON p.id = l.project_id"
    ) == [(main,)]
    covered = dict(
        await rows(
            conn,
            f"SELECT path, checkout FROM project_paths WHERE kind = 'cwd' "
            f"AND project_id = (SELECT id FROM projects WHERE path = '{main}')",
        )
    )
    assert covered == {
        main: main,
        str(repo.a): str(repo.a),
        str(repo.b): str(repo.b),
        str(repo.a / "assets"): str(repo.a),
    }
    # Vectors of moved items are queued again, so their metadata names the new project.
    queued = await rows(conn, "SELECT kind, count(*) FROM vector_outbox GROUP BY kind ORDER BY kind")
    assert dict(queued)["messages"] >= 4 and dict(queued)["chunks"] >= 1
    async with conn.execute("PRAGMA foreign_key_check") as cursor:
        assert list(await cursor.fetchall()) == []

    # Running the regrouping again changes nothing.
    before = await rows(conn, "SELECT * FROM project_paths ORDER BY path")
    await conn.execute("BEGIN IMMEDIATE")
    await regroup(conn)
    await conn.execute("COMMIT")
    assert await rows(conn, "SELECT * FROM project_paths ORDER BY path") == before
    assert (
        dict(await rows(conn, "SELECT s.id, p.path FROM sessions s JOIN projects p ON p.id = s.project_id"))
        == by_session
    )
