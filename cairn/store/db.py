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

Why two readers: a search asks FTS5 for ideas, messages and spans, and SQLite runs one statement at a
time per connection; with two read connections (each its own aiosqlite thread, the GIL released while
SQLite works) the largest two run side by side on two cores. A query goes to the reader with fewer
queries in flight.

Why a read-only open (`open_read_only`): a store on a read-only medium (a backup mounted read-only, a
home whose permissions deny writing) must still answer searches. SQLite reads a WAL database
read-only only if its -wal and -shm files exist or can be created, else only as `immutable`; see
`read_only_uri` for which of the two is safe when.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import aiosqlite

from cairn.errors import Failure
from cairn.store.failures import StoreReadOnlyError
from cairn.store.migrations import LATEST_VERSION, SchemaTooNewError, migrate, schema_version

Params = Iterable[Any] | Mapping[str, Any]

#: Read connections per database (see the module docstring: two queries of one search at once).
READERS = 2


class DatabaseError(Failure):
    """The database cannot be opened or used; the message says why and what to do about it."""


class Database:
    """An open store database. Create with `await Database.open(path)`; `await close()` when done."""

    def __init__(
        self,
        path: Path,
        writer: aiosqlite.Connection,
        readers: list[aiosqlite.Connection],
        version: int,
        *,
        read_only: str | None = None,
    ):
        self.path = path
        self.conn = writer
        self._readers = readers
        self._in_flight = [0] * len(readers)
        self.schema_version = version
        self.read_only = read_only
        """Why this database was opened read-only (`open_read_only`), or None when it can be written."""
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
        readers: list[aiosqlite.Connection] = []
        try:
            version = await _configure_writer(db_path, writer, target_version, busy_timeout_ms)
            for _ in range(READERS):
                readers.append(await _connect(db_path, busy_timeout_ms))
                await readers[-1].execute("PRAGMA query_only = ON")
        except BaseException:
            for reader in readers:
                await reader.close()
            await writer.close()
            raise
        return cls(db_path, writer, readers, version)

    @classmethod
    async def open_read_only(
        cls, path: str | os.PathLike[str], *, reason: str, busy_timeout_ms: int = 10_000
    ) -> Database:
        """Open the database at `path` for reading only, writing nothing in its directory.

        `reason` says why it cannot be written (it is what a refused write reports). Nothing is
        migrated, so a database older than this cairn is refused with what to do; `write()` raises
        `StoreReadOnlyError` without touching SQLite.
        """
        db_path = Path(path)
        if not db_path.is_file():
            raise DatabaseError(
                f"no cairn database at {db_path}, and {db_path.parent} cannot be written ({reason})"
            )
        try:
            uri = await asyncio.to_thread(read_only_uri, db_path)
        except sqlite3.Error as exc:
            raise _explain(db_path, exc) from exc
        conns: list[aiosqlite.Connection] = []
        try:
            for _ in range(1 + READERS):
                conns.append(await _connect(db_path, busy_timeout_ms, uri=uri))
                await conns[-1].execute("PRAGMA query_only = ON")
            version = await schema_version(conns[0])
        except BaseException:
            for conn in conns:
                await conn.close()
            raise
        if version != LATEST_VERSION:
            for conn in conns:
                await conn.close()
            if version > LATEST_VERSION:
                raise SchemaTooNewError(
                    f"the database is at schema v{version}, newer than this cairn understands "
                    f"(v{LATEST_VERSION}); upgrade cairn"
                )
            raise DatabaseError(
                f"the cairn database at {db_path} is at schema v{version} and this cairn reads "
                f"v{LATEST_VERSION}: it upgrades it on open, which needs it writable ({reason}); run any "
                "cairn command once where it can be written, or use the cairn that wrote it"
            )
        return cls(db_path, conns[0], conns[1:], version, read_only=reason)

    async def close(self) -> None:
        try:
            for reader in self._readers:
                await reader.close()
        finally:
            await self.conn.close()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """`async with db.write() as conn:` — one `BEGIN IMMEDIATE` … `COMMIT` transaction.

        Any exception in the block rolls the transaction back and propagates. Writes do not nest:
        opening a write inside a write in the same task raises instead of deadlocking.
        """
        if self.read_only is not None:
            raise StoreReadOnlyError(self.path.parent, self.read_only)
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
        """Rows of a read-only query, from committed data only.

        One trip to the reader's thread (`execute_fetchall`), not three (execute, fetch, close the
        cursor): each trip waits for that thread to be scheduled and for the event loop to hear back,
        and a search makes a dozen of these queries."""
        async with self._reading() as reader:
            return list(await reader.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        async with self._reading() as reader, reader.execute(sql, params) as cursor:
            return await cursor.fetchone()

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """The reader with the fewest queries in flight, counted as busy until the query is done."""
        index = min(range(len(self._readers)), key=self._in_flight.__getitem__)
        self._in_flight[index] += 1
        try:
            yield self._readers[index]
        finally:
            self._in_flight[index] -= 1

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


_NO_SHM_ERRORS = ("unable to open", "readonly database", "disk i/o error")


def read_only_uri(path: Path) -> str:
    """The URI that opens the WAL database at `path` read-only without creating any file.

    `mode=ro` when it works: it takes SQLite's locks, so it reads a database another process is
    writing correctly, and it reads what a -wal file holds. It fails when the -shm file does not
    exist and cannot be created — a store cleanly closed on a read-only medium ("unable to open
    database file"), in a directory this user may not write ("attempt to write a readonly
    database"), on a full disk ("disk I/O error"). Then `immutable=1`, which skips locking and
    ignores any -wal file: safe because nothing is writing it (a writer keeps its -shm file, so
    none is open) and no -wal holds data it would miss; with a non-empty -wal the error is raised.
    """
    base = path.resolve().as_uri()
    try:
        with closing(sqlite3.connect(f"{base}?mode=ro", uri=True)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return f"{base}?mode=ro"
    except sqlite3.OperationalError as exc:
        wal = path.with_name(path.name + "-wal")
        # The words depend on why: a read-only mount, a directory this user may not write, a full disk.
        cannot_make_shm = any(words in str(exc).lower() for words in _NO_SHM_ERRORS)
        if not cannot_make_shm or (wal.exists() and wal.stat().st_size > 0):
            raise
    return f"{base}?immutable=1"


async def _connect(path: Path, busy_timeout_ms: int, *, uri: str | None = None) -> aiosqlite.Connection:
    try:
        if uri is None:
            conn = await aiosqlite.connect(path, isolation_level=None)
        else:
            conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
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
