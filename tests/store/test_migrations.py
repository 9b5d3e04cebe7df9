"""Migrations: every earlier schema upgrades to the latest without losing a row."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from cairn.store import migrations
from cairn.store.migrations import (
    LATEST_VERSION,
    Migration,
    MigrationError,
    SchemaTooNewError,
    migrate,
    schema_version,
)


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[aiosqlite.Connection]:
    connection = await aiosqlite.connect(tmp_path / "cairn.db", isolation_level=None)
    await connection.execute("PRAGMA foreign_keys = ON")
    yield connection
    await connection.close()


# Rows for the tables each version introduces, referring to rows of earlier versions.
ROWS: dict[int, list[tuple[str, dict[str, Any]]]] = {
    1: [
        ("projects", {"id": 1, "path": "/work/alpha", "name": "alpha"}),
        ("projects", {"id": 2, "path": "/work/beta", "name": "beta"}),
        (
            "sessions",
            {
                "id": "s-1",
                "project_id": 1,
                "cwd": "/work/alpha",
                "git_branch": "main",
                "started_at": "2025-01-01T10:00:00.000Z",
                "last_at": "2025-01-01T11:00:00.000Z",
                "message_count": 2,
            },
        ),
        ("sessions", {"id": "s-2", "project_id": 2, "cwd": "/work/beta"}),
        (
            "transcript_files",
            {
                "id": 1,
                "path": "/p/alpha/s-1.jsonl",
                "session_id": "s-1",
                "byte_offset": 900,
                "line": 3,
                "inode": 42,
                "size": 900,
            },
        ),
        (
            "transcript_files",
            {
                "id": 2,
                "path": "/p/alpha/s-1/subagents/agent-a1.jsonl",
                "session_id": "s-1",
                "is_subagent": 1,
                "agent_id": "a1",
            },
        ),
        (
            "messages",
            {
                "session_id": "s-1",
                "file_id": 1,
                "line": 1,
                "end_line": 1,
                "byte_start": 0,
                "byte_end": 300,
                "uuid": "u-1",
                "role": "user",
                "kind": "text",
                "text": "why does the migration lose rows",
                "content_hash": "h1",
                "timestamp": "2025-01-01T10:00:00.000Z",
            },
        ),
        (
            "messages",
            {
                "session_id": "s-1",
                "file_id": 1,
                "line": 2,
                "end_line": 3,
                "byte_start": 300,
                "byte_end": 900,
                "role": "assistant",
                "kind": "text",
                "message_id": "msg_1",
                "text": "Because the backfill skipped sidechains",
                "content_hash": "h2",
                "tool_calls": '[{"id": "t1", "name": "Read", "input": {"file_path": "a.py"}}]',
                "timestamp": "2025-01-01T11:00:00.000Z",
            },
        ),
        (
            "messages",
            {
                "session_id": "s-1",
                "file_id": 2,
                "line": 1,
                "end_line": 1,
                "byte_start": 0,
                "byte_end": 10,
                "role": "user",
                "kind": "meta",
                "text": "ok",
                "content_hash": "h3",
                "is_noise": 1,
                "is_sidechain": 1,
                "agent_id": "a1",
            },
        ),
    ],
    2: [
        (
            "topic_spans",
            {
                "id": 1,
                "session_id": "s-1",
                "file_id": 1,
                "name": "Migrations",
                "summary": "Why rows went missing",
                "start_line": 1,
                "end_line": 3,
            },
        ),
        (
            "topic_spans",
            {"id": 2, "session_id": "s-1", "parent_id": 1, "name": "Backfill", "start_line": 2, "depth": 1},
        ),
        (
            "ideas",
            {
                "id": 1,
                "session_id": "s-1",
                "span_id": 1,
                "source_file_id": 1,
                "source_line": 1,
                "intent": "question",
                "content": "Why does the migration lose rows?",
                "content_hash": "i1",
                "confidence": 0.9,
                "importance": 0.8,
            },
        ),
        (
            "ideas",
            {
                "id": 2,
                "session_id": "s-1",
                "span_id": 2,
                "source_file_id": 1,
                "source_line": 2,
                "intent": "conclusion",
                "content": "The backfill skipped sidechain messages",
                "content_hash": "i2",
                "confidence": 0.8,
                "importance": 1.0,
            },
        ),
        (
            "ideas",
            {
                "id": 3,
                "session_id": "s-1",
                "intent": "decision",
                "content": "Use one transaction",
                "content_hash": "i3",
                "superseded_by": 2,
                "valid_until": "2025-01-02T00:00:00.000Z",
            },
        ),
        ("relations", {"from_idea_id": 2, "to_idea_id": 1, "relation_type": "answers"}),
        ("entities", {"id": 1, "canonical_name": "SQLite", "type": "technology"}),
        ("entities", {"id": 2, "canonical_name": "alpha", "type": "project"}),
        ("entity_aliases", {"entity_id": 1, "alias": "sqlite3"}),
        ("idea_entities", {"idea_id": 2, "entity_id": 1}),
    ],
    3: [
        ("work_queue", {"path": "/p/alpha/s-1.jsonl", "session_id": "s-1", "event": "Stop"}),
        (
            "search_associations",
            {
                "query": "migration rows",
                "file_path": "/work/alpha/migrate.py",
                "reason": "agent grepped it",
                "grep_patterns": '["migrate"]',
                "original_score": 0.2,
            },
        ),
        (
            "index_runs",
            {
                "model": "offline",
                "prompt_version": "v1",
                "mode": "backfill",
                "input_tokens": 10,
                "output_tokens": 5,
                "tool_calls": 1,
                "requests": 2,
                "seconds": 1.5,
                "outcome": "ok",
            },
        ),
        ("vector_outbox", {"kind": "entities", "item_id": 99, "op": "delete"}),
    ],
    4: [("skipped_lines", {"file_id": 1, "line": 3, "run_id": 1})],
    5: [],  # a column only
    6: [],  # a column and a trigger: test_said_at_* below
    7: [
        ("recall_injections", {"session_id": "s-1", "idea_id": 2, "event": "UserPromptSubmit"}),
        ("recall_injections", {"session_id": "s-1", "idea_id": None, "event": "SessionStart"}),
    ],
    8: [
        (
            "file_documents",
            {"id": 1, "project_id": 1, "rel_path": "src/migrate.py", "content_hash": "h1", "size": 40},
        ),
        (
            "file_chunks",
            {
                "document_id": 1,
                "chunk_index": 0,
                "start_line": 1,
                "end_line": 2,
                "content": "def migrate():\n    keep every row",
            },
        ),
        ("file_requests", {"project_id": 1, "path": "/work/alpha/src/migrate.py", "reason": "read"}),
        (
            "learning_sessions",
            {
                "session_id": "s-1",
                "tool_use_id": "toolu_1",
                "file_id": 1,
                "project_id": 1,
                "tool_name": "mcp__cairn__search",
                "query": "migration rows",
                "best_score": 0.3,
                "status": "active",
                "started_at": "2025-01-01T10:00:00.000Z",
            },
        ),
    ],
    9: [
        (
            "message_passages",
            {"message_id": 2, "seq": 0, "char_start": 0, "char_end": 20, "text": "Because the backfill"},
        ),
        (
            "message_passages",
            {"message_id": 2, "seq": 1, "char_start": 21, "char_end": 39, "text": "skipped sidechains"},
        ),
    ],
    10: [
        ("reindex_jobs", {"id": 1, "model": "offline", "selection": '{"project": "alpha"}'}),
        ("reindex_sessions", {"job_id": 1, "session_id": "s-1", "ideas": 2}),
    ],
    11: [
        (
            "project_paths",
            {"path": "/work/alpha/docs", "project_id": 1, "kind": "cwd", "checkout": "/work/alpha"},
        ),
    ],
    12: [
        (
            "idea_corrections",
            {
                "source_file_id": 1,
                "source_line": 2,
                "content_hash": "i2",
                "intent": "conclusion",
                "state": "declined",
                "state_at": "2025-01-03T00:00:00.000Z",
                "importance": 0.2,
            },
        ),
    ],
    13: [
        (
            "ideas",
            {
                "id": 40,
                "session_id": "s-1",
                "source_file_id": 1,
                "source_line": 2,
                "intent": "todo",
                "content": "Move the retry change to its own branch",
                "content_hash": "i40",
                "state": "deferred",
            },
        ),
    ],
    14: [
        (
            "messages",
            {
                "session_id": "s-1",
                "file_id": 1,
                "line": 7,
                "end_line": 7,
                "byte_start": 1000,
                "byte_end": 1100,
                "role": "user",
                "kind": "tool_result",
                "text": "[tool_result Bash error] exit 2",
                "content_hash": "h14",
                "origin": "tool_result",
                "tool": "Bash",
                "tool_arg": "make test",
                "failed": 1,
            },
        ),
    ],
}


async def populate(conn: aiosqlite.Connection, version: int) -> None:
    await conn.execute("BEGIN IMMEDIATE")
    for table, row in ROWS[version]:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        await conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))
    await conn.execute("COMMIT")
    if version >= 2:
        # The answering idea exists only now; set it like the executor would, as an update.
        await conn.execute(
            "UPDATE ideas SET answered_by = 2, answered_at = '2025-01-01T11:00:00.000Z' WHERE id = 1"
        )


async def real_tables(conn: aiosqlite.Connection) -> list[str]:
    """Every ordinary table: not SQLite's own, not FTS virtual tables or their shadow tables."""
    async with conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name") as cur:
        rows = list(await cur.fetchall())
    virtual = [name for name, sql in rows if sql.upper().startswith("CREATE VIRTUAL")]
    return [
        name
        for name, sql in rows
        if not name.startswith("sqlite_")
        and name not in virtual
        and not any(name.startswith(v + "_") for v in virtual)
    ]


async def snapshot(conn: aiosqlite.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = await real_tables(conn)
    result = {}
    for table in tables:
        async with conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2") as cur:
            result[table] = [tuple(row) for row in await cur.fetchall()]
    return result


async def test_fresh_database_reaches_latest(conn: aiosqlite.Connection) -> None:
    assert await migrate(conn) == LATEST_VERSION
    assert await schema_version(conn) == LATEST_VERSION
    assert await migrate(conn) == LATEST_VERSION  # idempotent
    tables = set(await real_tables(conn))
    assert {
        "projects",
        "sessions",
        "transcript_files",
        "messages",
        "ideas",
        "relations",
        "topic_spans",
        "entities",
        "entity_aliases",
        "idea_entities",
        "work_queue",
        "search_associations",
        "index_runs",
        "vector_outbox",
    } <= tables
    assert not conn.in_transaction


@pytest.mark.parametrize("start", range(LATEST_VERSION))
async def test_upgrade_from_every_earlier_version_keeps_every_row(
    conn: aiosqlite.Connection, start: int
) -> None:
    assert await migrate(conn, target=start) == start
    for version in range(1, start + 1):
        await populate(conn, version)
    before = await snapshot(conn)
    assert all(before[table] for table in before), "the fixture must fill every table of the version"

    assert await migrate(conn) == LATEST_VERSION

    after = await snapshot(conn)
    for table, rows in before.items():
        # Columns added by later steps come last: the old columns of every row are unchanged.
        width = len(rows[0])
        kept = after[table]
        if table == "vector_outbox" and start < 8:
            # v8 queues the existing search associations for their first vectors.
            kept = [row for row in kept if row[0] != "associations"]
        assert [row[:width] for row in kept] == rows, f"{table} changed in the upgrade from v{start}"
    # The new tables work with the old rows (foreign keys included).
    for version in range(start + 1, LATEST_VERSION + 1):
        await populate(conn, version)
    final = await snapshot(conn)
    assert all(final[table] for table in final)
    async with conn.execute("PRAGMA foreign_key_check") as cur:
        assert list(await cur.fetchall()) == []
    # Full-text indexes cover the rows written before the upgrade.
    if start >= 1:
        async with conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'migration'") as cur:
            assert [r[0] for r in await cur.fetchall()] == [1]
    if start >= 2:
        async with conn.execute("SELECT rowid FROM ideas_fts WHERE ideas_fts MATCH 'sidechain'") as cur:
            assert [r[0] for r in await cur.fetchall()] == [2]
    for fts in ("messages_fts", "ideas_fts", "spans_fts", "file_chunks_fts", "message_passages_fts"):
        await conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('integrity-check')")


async def test_said_at_is_backfilled_from_the_source_message_then_kept_by_a_trigger(
    conn: aiosqlite.Connection,
) -> None:
    await migrate(conn, target=5)
    for version in (1, 2):
        await populate(conn, version)
    await migrate(conn)
    async with conn.execute("SELECT id, said_at, created_at FROM ideas ORDER BY id") as cur:
        rows = {r[0]: (r[1], r[2]) for r in await cur.fetchall()}
    # Idea 1 comes from line 1, whose message has a timestamp; idea 3 has no source, so its index time.
    assert rows[1][0] == "2025-01-01T10:00:00.000Z"
    assert rows[3][0] == rows[3][1]
    await conn.execute(
        "INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash) "
        "VALUES ('s-1', 1, 1, 'context', 'Said on line one', 'i9')"
    )
    async with conn.execute("SELECT said_at FROM ideas WHERE content_hash = 'i9'") as cur:
        assert (await cur.fetchone())[0] == "2025-01-01T10:00:00.000Z"


async def test_upgrade_to_the_outbox_queues_every_existing_item(conn: aiosqlite.Connection) -> None:
    await migrate(conn, target=2)
    await populate(conn, 1)
    await populate(conn, 2)
    await migrate(conn)
    async with conn.execute("SELECT kind, item_id FROM vector_outbox ORDER BY kind, item_id") as cur:
        queued = [tuple(r) for r in await cur.fetchall()]
    assert queued == [
        ("entities", 1),
        ("entities", 2),
        ("ideas", 1),
        ("ideas", 2),
        ("ideas", 3),
        ("messages", 1),
        ("messages", 2),
        ("messages", 3),
        ("spans", 1),
        ("spans", 2),
    ]


async def test_newer_database_is_refused(conn: aiosqlite.Connection) -> None:
    await migrate(conn)
    await conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    with pytest.raises(SchemaTooNewError, match=f"schema v{LATEST_VERSION + 1}, newer than this cairn"):
        await migrate(conn)


async def test_no_downgrade_and_no_unknown_target(conn: aiosqlite.Connection) -> None:
    await migrate(conn)
    with pytest.raises(MigrationError, match="does not downgrade"):
        await migrate(conn, target=1)
    with pytest.raises(MigrationError, match="no schema version"):
        await migrate(conn, target=LATEST_VERSION + 1)


async def test_implicit_transactions_are_refused(tmp_path: Path) -> None:
    async with aiosqlite.connect(tmp_path / "x.db") as legacy:
        with pytest.raises(MigrationError, match="isolation_level=None"):
            await migrate(legacy)


async def test_a_failing_step_leaves_the_previous_version(
    conn: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = Migration(
        LATEST_VERSION + 1,
        "broken",
        ("CREATE TABLE half_done (id INTEGER PRIMARY KEY)", "INSERT INTO no_such_table VALUES (1)"),
    )
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, broken))
    monkeypatch.setattr(migrations, "LATEST_VERSION", LATEST_VERSION + 1)
    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        await migrate(conn)
    assert await schema_version(conn) == LATEST_VERSION
    assert not conn.in_transaction
    async with conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'") as cur:
        assert (await cur.fetchone())[0] == 0


async def test_constraints_reject_bad_enums(conn: aiosqlite.Connection) -> None:
    await migrate(conn)
    await populate(conn, 1)
    await populate(conn, 2)
    bad = [
        "INSERT INTO ideas (intent, content, content_hash) VALUES ('rumour', 'x', 'h')",
        "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (1, 2, 'likes')",
        "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (1, 1, 'relates_to')",
        "INSERT INTO entities (canonical_name, type) VALUES ('sqlite', 'technology')",  # NOCASE duplicate
        "INSERT INTO entity_aliases (entity_id, alias) VALUES (2, 'SQLITE3')",  # NOCASE duplicate
        "INSERT INTO work_queue (path, status) VALUES ('/x', 'lost')",
        "INSERT INTO vector_outbox (kind, item_id, op) VALUES ('pages', 1, 'upsert')",
        "INSERT INTO learning_sessions (session_id, tool_use_id, tool_name, query, status, started_at)"
        " VALUES ('s', 't', 'x', 'q', 'lost', '2025-01-01')",
        "INSERT INTO file_requests (project_id, path, reason) VALUES (1, '/x', 'guess')",
        "INSERT INTO messages (file_id, line, end_line, byte_start, byte_end, role, kind, text, content_hash)"
        " VALUES (1, 5, 5, 0, 1, 'human', 'text', 'x', 'h')",
        "INSERT INTO ideas (session_id, intent, content, content_hash)"
        " VALUES ('no-such-session', 'todo', 'x', 'h')",
    ]
    for statement in bad:
        with pytest.raises(sqlite3.IntegrityError):
            await conn.execute(statement)


async def test_v8_merges_associations_that_differ_only_in_case_or_spacing(conn: aiosqlite.Connection) -> None:
    await migrate(conn, target=7)
    await conn.execute("BEGIN IMMEDIATE")
    await conn.executemany(
        "INSERT INTO search_associations (query, file_path, hits, created_at) VALUES (?, ?, ?, ?)",
        [
            ("Release process", "docs/release.md", 2, "2025-01-01T00:00:00.000Z"),
            ("  release \t process ", "docs/release.md", 3, "2025-02-01T00:00:00.000Z"),
            ("release process", "docs/other.md", 0, "2025-03-01T00:00:00.000Z"),
        ],
    )
    await conn.execute("COMMIT")
    await migrate(conn)
    async with conn.execute(
        "SELECT query_key, file_path, hits, times_learned, created_at FROM search_associations ORDER BY id"
    ) as cur:
        rows = [tuple(r) for r in await cur.fetchall()]
    assert rows == [
        ("release process", "docs/release.md", 5, 2, "2025-01-01T00:00:00.000Z"),
        ("release process", "docs/other.md", 0, 1, "2025-03-01T00:00:00.000Z"),
    ]
    # An older writer's insert without a key gets the same key Python would give it.
    await conn.execute(
        "INSERT INTO search_associations (query, file_path) VALUES ('RELEASE  Process', 'x.md')"
    )
    async with conn.execute("SELECT query_key FROM search_associations WHERE file_path = 'x.md'") as cur:
        assert (await cur.fetchone())[0] == "release process"


async def test_v9_passages_are_indexed_queued_and_go_with_their_message(conn: aiosqlite.Connection) -> None:
    await migrate(conn, target=8)
    await populate(conn, 1)
    await conn.execute("DELETE FROM vector_outbox")
    await migrate(conn)
    await populate(conn, 9)
    async with conn.execute(
        "SELECT rowid FROM message_passages_fts WHERE message_passages_fts MATCH 'sidechain'"
    ) as cur:
        assert [r[0] for r in await cur.fetchall()] == [2]
    async with conn.execute("SELECT kind, item_id, op FROM vector_outbox ORDER BY item_id") as cur:
        assert [tuple(r) for r in await cur.fetchall()] == [
            ("passages", 1, "upsert"),
            ("passages", 2, "upsert"),
        ]
    # A passage's vector carries its message's metadata: a change to it re-queues the passages.
    await conn.execute("DELETE FROM vector_outbox")
    await conn.execute("UPDATE messages SET is_noise = 1 WHERE id = 2")
    async with conn.execute("SELECT kind, item_id FROM vector_outbox WHERE kind = 'passages'") as cur:
        assert [tuple(r) for r in await cur.fetchall()] == [("passages", 1), ("passages", 2)]
    # Deleting the message deletes its passages, their full-text entries and (through the outbox) vectors.
    await conn.execute("DELETE FROM messages WHERE id = 2")
    async with conn.execute("SELECT count(*) FROM message_passages") as cur:
        assert (await cur.fetchone())[0] == 0
    async with conn.execute(
        "SELECT count(*) FROM message_passages_fts WHERE message_passages_fts MATCH 'sidechain'"
    ) as cur:
        assert (await cur.fetchone())[0] == 0
    async with conn.execute(
        "SELECT item_id, op FROM vector_outbox WHERE kind = 'passages' ORDER BY 1"
    ) as cur:
        assert [tuple(r) for r in await cur.fetchall()] == [(1, "delete"), (2, "delete")]
    await conn.execute("INSERT INTO message_passages_fts (message_passages_fts) VALUES ('integrity-check')")


async def test_v14_gives_every_stored_message_its_origin_and_a_result_its_calls_argument(
    conn: aiosqlite.Connection,
) -> None:
    await migrate(conn, target=13)
    await populate(conn, 1)
    rows = [
        # (line, role, kind, text, tool_calls, tool_results, is_sidechain, agent_id)
        (10, "user", "text", "run the build please", [], [], 0, None),
        (
            11,
            "assistant",
            "text",
            'Building now.\n[tool_use Bash] command="npm run build"',
            [{"id": "t1", "name": "Bash", "input": 'command="npm run build"'}],
            [],
            0,
            None,
        ),
        (
            12,
            "user",
            "tool_result",
            "[tool_result Bash error] exit 1",
            [],
            [{"tool_use_id": "t1", "tool_name": "Bash", "is_error": True}],
            0,
            None,
        ),
        (
            13,
            "assistant",
            "text",
            '[tool_use Read] file_path="/src/app.py"',
            [{"id": "t2", "name": "Read", "input": 'file_path="/src/app.py"'}],
            [],
            0,
            None,
        ),
        (
            14,
            "user",
            "tool_result",
            "[tool_result Read] def main(): ...",
            [],
            [{"tool_use_id": "t2", "tool_name": "Read", "is_error": False}],
            0,
            None,
        ),
        (
            15,
            "user",
            "tool_result",
            "[tool_result Task] The cause is a stale lock",
            [],
            [{"tool_use_id": "t9", "tool_name": "Task", "is_error": False}],
            0,
            None,
        ),
        (16, "user", "compact_summary", "This session is being continued", [], [], 0, None),
        (17, "user", "text", "Find where the lock is taken", [], [], 1, "a1"),
        (18, "system", "system", "hook output", [], [], 0, None),
    ]
    await conn.execute("BEGIN IMMEDIATE")
    for line, role, kind, text, calls, results, sidechain, agent in rows:
        await conn.execute(
            "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash, tool_calls, tool_results, is_sidechain, agent_id) "
            "VALUES ('s-1', 1, ?, ?, 0, 1, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                line,
                line,
                role,
                kind,
                text,
                f"o{line}",
                json.dumps(calls),
                json.dumps(results),
                sidechain,
                agent,
            ),
        )
    await conn.execute("COMMIT")

    await migrate(conn)

    async with conn.execute(
        "SELECT line, origin, tool, tool_arg, failed FROM messages WHERE line >= 10 ORDER BY line"
    ) as cur:
        got = [tuple(row) for row in await cur.fetchall()]
    assert got == [
        (10, "prompt", None, None, 0),
        (11, "reply", None, None, 0),
        (12, "tool_result", "Bash", "npm run build", 1),
        (13, "tool_call", "Read", "/src/app.py", 0),
        (14, "tool_result", "Read", "/src/app.py", 0),
        (15, "subagent", "Task", None, 0),
        (16, "summary", None, None, 0),
        (17, "subagent", None, None, 0),
        (18, "system", None, None, 0),
    ]
    async with conn.execute("SELECT count(*) FROM messages WHERE origin IS NULL") as cur:
        assert (await cur.fetchone())[0] == 0
