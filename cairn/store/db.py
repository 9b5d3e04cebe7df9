"""The SQLite database behind a store: WAL, explicit `BEGIN IMMEDIATE` writes, migrated on open.

Why two connections: the writer's open transaction must be invisible to everything else in the
process. The vector outbox, for one, reads rows and sends them to Chroma; if it could read a row
that a concurrent write later rolls back, Chroma would keep a vector for a row that never existed.
So reads go through a separate read-only connection that, in WAL mode, only ever sees committed
data, and writes are serialised on the writer by an asyncio lock (one aiosqlite connection cannot
hold two transactions).

Why `BEGIN IMMEDIATE`: with several processes, a deferred transaction that reads and then writes can
fail with "database is locked" despite `busy_timeout` (the lock upgrade is not retried). Taking the
write lock up front makes writers queue instead.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from cairn.store.migrations import migrate

Params = Iterable[Any] | Mapping[str, Any]


class DatabaseError(RuntimeError):
    """The database cannot be opened or used; the message says why and what to do about it."""


class Database:
    """An open store database. Create with `await Database.open(path)`; `await close()` when done."""

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection, version: int):
        self.path = path
        self.conn = writer
        self._reader = reader
        self.schema_version = version
        self._write_lock = asyncio.Lock()
        self._writing: asyncio.Task[Any] | None = None

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = 10_000,
        target_version: int | None = None,
    ) -> Database:
        """Open (creating if needed) and migrate the database at `path`.

        `target_version` stops the migrations early; only tests of the upgrade path want that.
        """
        db_path = Path(path)
        _check_location(db_path)
        writer = await _connect(db_path, busy_timeout_ms)
        try:
            version = await _configure_writer(db_path, writer, target_version, busy_timeout_ms)
            reader = await _connect(db_path, busy_timeout_ms)
        except BaseException:
            await writer.close()
            raise
        try:
            await reader.execute("PRAGMA query_only = ON")
        except BaseException:
            await reader.close()
            await writer.close()
            raise
        return cls(db_path, writer, reader, version)

    async def close(self) -> None:
        try:
            await self._reader.close()
        finally:
            await self.conn.close()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """`async with db.write() as conn:` — one `BEGIN IMMEDIATE` … `COMMIT` transaction.

        Any exception in the block rolls the transaction back and propagates. Writes do not nest:
        opening a write inside a write in the same task raises instead of deadlocking.
        """
        task = asyncio.current_task()
        if task is not None and self._writing is task:
            raise RuntimeError("nested db.write(): SQLite has one transaction per connection")
        async with self._write_lock:
            self._writing = task
            try:
                if self.conn.in_transaction:
                    # Left open by a write cancelled while its BEGIN was still waiting in aiosqlite's
                    # thread; nobody else uses this connection's transactions, so it is safe to drop.
                    await self.conn.execute("ROLLBACK")
                await self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                    await self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:
                        await self.conn.execute("ROLLBACK")
                    raise
            finally:
                self._writing = None

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """Rows of a read-only query, from committed data only."""
        async with self._reader.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        async with self._reader.execute(sql, params) as cursor:
            return await cursor.fetchone()

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or None when there is no row."""
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


def _check_location(path: Path) -> None:
    parent = path.parent
    if path.is_dir():
        raise DatabaseError(f"cannot open the cairn database: {path} is a directory")
    if not parent.is_dir():
        raise DatabaseError(f"cannot create the cairn database at {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DatabaseError(
            f"cannot open the cairn database at {path}: directory {parent} is not writable "
            "(SQLite needs to create its -wal and -shm files there); fix its permissions or set CAIRN_HOME"
        )


async def _connect(path: Path, busy_timeout_ms: int) -> aiosqlite.Connection:
    try:
        conn = await aiosqlite.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise _explain(path, exc) from exc
    conn.row_factory = sqlite3.Row
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms):d}")
        await conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        await conn.close()
        raise _explain(path, exc) from exc
    return conn


async def _configure_writer(
    path: Path, conn: aiosqlite.Connection, target_version: int | None, busy_timeout_ms: int
) -> int:
    try:
        await _enable_wal(path, conn, busy_timeout_ms)
        await conn.execute("PRAGMA synchronous = NORMAL")
        return await migrate(conn, target_version)
    except sqlite3.Error as exc:
        raise _explain(path, exc) from exc


async def _enable_wal(path: Path, conn: aiosqlite.Connection, busy_timeout_ms: int) -> None:
    """Switch to WAL (it persists in the file), retrying while another process holds the database.

    Changing the journal mode needs an exclusive lock and SQLite reports "database is locked" at
    once instead of calling the busy handler, so two processes opening a new store together would
    fail without this loop. Once the file is in WAL mode nothing needs changing and no lock is taken.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            mode = await _pragma(conn, "PRAGMA journal_mode")
            if mode != "wal":
                mode = await _pragma(conn, "PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)
    if mode != "wal":
        raise DatabaseError(
            f"cannot use the cairn database at {path}: SQLite refused WAL mode (got {mode!r}); "
            "WAL needs a local filesystem — put CAIRN_HOME on a local disk"
        )


async def _pragma(conn: aiosqlite.Connection, sql: str) -> str:
    async with conn.execute(sql) as cursor:
        row = await cursor.fetchone()
    return str(row[0]).lower() if row else ""


def _explain(path: Path, exc: sqlite3.Error) -> DatabaseError:
    message = str(exc)
    if "not a database" in message or "malformed" in message:
        return DatabaseError(
            f"{path} is not a usable SQLite database ({message}); move it aside and run `cairn sync` "
            "to rebuild the store from the transcripts"
        )
    if "readonly" in message or "unable to open" in message:
        return DatabaseError(
            f"cannot write the cairn database at {path} ({message}); check that it and its directory "
            "are writable, or set CAIRN_HOME"
        )
    return DatabaseError(f"cannot open the cairn database at {path}: {message}")
