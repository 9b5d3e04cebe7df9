"""The Database wrapper: pragmas, explicit write transactions, clear errors, multi-process writers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cairn.store.db import Database, DatabaseError
from cairn.store.migrations import LATEST_VERSION, SchemaTooNewError
from tests.store.procs import spawn, stop


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "cairn.db", busy_timeout_ms=1234)
    yield database
    await database.close()


async def test_open_configures_and_migrates(db: Database) -> None:
    assert db.schema_version == LATEST_VERSION
    assert await db.scalar("PRAGMA user_version") == LATEST_VERSION
    assert await db.scalar("PRAGMA journal_mode") == "wal"
    assert await db.scalar("PRAGMA busy_timeout") == 1234
    assert await db.scalar("PRAGMA foreign_keys") == 1
    async with db.conn.execute("PRAGMA synchronous") as cur:
        assert (await cur.fetchone())[0] == 1  # NORMAL
    assert db.conn.isolation_level is None


async def test_write_commits_and_rows_are_named(db: Database) -> None:
    async with db.write() as conn:
        await conn.execute("INSERT INTO projects (path, name) VALUES ('/a', 'a')")
    row = await db.fetchone("SELECT path, name FROM projects")
    assert row is not None and (row["path"], row["name"]) == ("/a", "a")
    assert [r["name"] for r in await db.fetchall("SELECT name FROM projects")] == ["a"]
    assert await db.scalar("SELECT name FROM projects WHERE path = '/nowhere'") is None


async def test_write_rolls_back_on_error_and_reraises(db: Database) -> None:
    with pytest.raises(ZeroDivisionError):
        async with db.write() as conn:
            await conn.execute("INSERT INTO projects (path, name) VALUES ('/a', 'a')")
            _ = 1 / 0
    assert await db.scalar("SELECT count(*) FROM projects") == 0
    assert not db.conn.in_transaction
    async with db.write() as conn:  # the connection is usable again
        await conn.execute("INSERT INTO projects (path, name) VALUES ('/b', 'b')")
    assert await db.scalar("SELECT count(*) FROM projects") == 1


async def test_reads_never_see_an_open_write(db: Database) -> None:
    async with db.write() as conn:
        await conn.execute("INSERT INTO projects (path, name) VALUES ('/a', 'a')")
        assert await db.scalar("SELECT count(*) FROM projects") == 0
    assert await db.scalar("SELECT count(*) FROM projects") == 1


async def test_reads_cannot_write(db: Database) -> None:
    with pytest.raises(Exception, match=r"readonly|read-only|query_only"):
        await db.fetchall("INSERT INTO projects (path, name) VALUES ('/a', 'a')")


async def test_concurrent_writes_in_one_process_are_serialised(db: Database) -> None:
    async def writer(tag: str) -> None:
        for i in range(20):
            async with db.write() as conn:
                async with conn.execute("SELECT count(*) FROM projects") as cur:
                    n = (await cur.fetchone())[0]
                await asyncio.sleep(0)
                await conn.execute("INSERT INTO projects (path, name) VALUES (?, ?)", (f"/{tag}/{i}", str(n)))

    await asyncio.gather(writer("a"), writer("b"), writer("c"))
    names = sorted(int(r["name"]) for r in await db.fetchall("SELECT name FROM projects"))
    assert names == list(range(60))  # every read-then-write saw all earlier commits


async def test_nested_write_is_an_error_not_a_deadlock(db: Database) -> None:
    with pytest.raises(RuntimeError, match="nested"):
        async with db.write(), db.write():
            pass
    assert not db.conn.in_transaction


async def test_not_a_database_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    path.write_bytes(b"this is a text file, not SQLite " * 100)
    with pytest.raises(DatabaseError, match=r"is not a usable SQLite database.*move it aside"):
        await Database.open(path)


async def test_missing_directory_is_explained(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(DatabaseError, match="is not a directory"):
        await Database.open(tmp_path / "file" / "cairn.db")
    with pytest.raises(DatabaseError, match="is a directory"):
        await Database.open(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
async def test_unwritable_directory_is_explained(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(DatabaseError, match="not writable"):
            await Database.open(locked / "cairn.db")
    finally:
        locked.chmod(0o700)


async def test_newer_schema_is_refused_on_open(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    database = await Database.open(path)
    await database.conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    await database.close()
    with pytest.raises(SchemaTooNewError, match="upgrade cairn"):
        await Database.open(path)


WRITER = """
    import asyncio, sys
    from cairn.store.db import Database

    async def main(path, tag, n):
        db = await Database.open(path, busy_timeout_ms=30000)
        print("open", flush=True)
        try:
            for i in range(n):
                async with db.write() as conn:
                    async with conn.execute("SELECT count(*) FROM projects") as cur:
                        seen = (await cur.fetchone())[0]
                    await conn.execute(
                        "INSERT INTO projects (path, name) VALUES (?, ?)", (f"/{tag}/{i}", str(seen))
                    )
        finally:
            await db.close()

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


@pytest.mark.process
def test_two_processes_writing_never_hit_database_is_locked(tmp_path: Path) -> None:
    """Both open (and migrate) a fresh file at once, then interleave read-then-write transactions."""
    path = tmp_path / "cairn.db"
    per_process = 150
    procs = [spawn(WRITER, str(path), tag, str(per_process)) for tag in ("a", "b")]
    try:
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            stop(p)
    for proc, (_, stderr) in zip(procs, results, strict=True):
        assert proc.returncode == 0, stderr
        assert "locked" not in stderr

    async def check() -> None:
        db = await Database.open(path)
        try:
            assert await db.scalar("SELECT count(*) FROM projects") == 2 * per_process
            names = sorted(int(r["name"]) for r in await db.fetchall("SELECT name FROM projects"))
            assert names == list(range(2 * per_process))  # serialised: each saw every earlier write
        finally:
            await db.close()

    asyncio.run(check())


async def test_a_write_cancelled_before_it_began_leaves_the_connection_usable(db: Database) -> None:
    # What a cancellation can leave behind: a BEGIN that completed after its awaiter was gone.
    await db.conn.execute("BEGIN IMMEDIATE")
    await db.conn.execute("INSERT INTO projects (path, name) VALUES ('/orphan', 'orphan')")
    async with db.write() as conn:
        await conn.execute("INSERT INTO projects (path, name) VALUES ('/b', 'b')")
    assert [r["path"] for r in await db.fetchall("SELECT path FROM projects")] == ["/b"]
