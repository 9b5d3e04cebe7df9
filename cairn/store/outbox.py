"""The vector outbox: how Chroma stays a faithful copy of SQLite across crashes.

Every change to a row that has a vector queues `(kind, item_id, op)` in `vector_outbox` in the same
transaction as the change — triggers do it (see migration 3), so no writer can forget. `drain` later
reads the pending rows, loads each item from SQLite as it is *now*, writes or deletes its vector in
Chroma, and only then removes exactly the outbox rows it handled. A crash anywhere in between leaves
the rows queued, and the next drain replays them; Chroma upserts and deletes by id are idempotent, so
a replay converges to the same state.

Each outbox row carries a `revision` that every re-queue bumps. `drain` removes a row only if its
revision is still the one it read, so a change committed while its vector was being written (Chroma
calls run outside any transaction) stays queued for the next round. (`queued_at` alone would not do:
two changes in the same millisecond have the same time.)

Whether an item gets a vector is decided here, when it is loaded, not by the queue: an item that no
longer exists or is not eligible has its vector deleted. Noise messages (`is_noise`: hook chatter,
interrupted-request markers, bare acknowledgements) and messages without text get none — they would
crowd semantic search with near-identical vectors and are still reachable through FTS. Which other
messages get one is a setting (`message_vectors`, see `message_source`), and so is which message
passages do (`passage_vectors`, see `passage_source`). The `op` column records what happened to the
row, for people reading the table.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import aiosqlite

from cairn.store.db import Database

if TYPE_CHECKING:
    from cairn.store.vectors import VectorIndex

Progress = Callable[[int, int], None]
"""Called as `progress(done, total)` after each batch; `total` grows if items arrive meanwhile."""

Op = Literal["upsert", "delete"]

_ITEMS = "SELECT value FROM json_each(?)"


@dataclass(frozen=True)
class VectorSource:
    """How one kind's items become vector documents.

    `select` yields `id`, `document` and metadata columns from table alias `t`; `eligible` is the SQL
    condition (over `t`, and over what `joins` adds) an item must meet to have a vector; `flags` are
    metadata columns that SQLite returns as 0/1 but Chroma should filter as booleans.
    """

    kind: str
    table: str
    select: str
    eligible: str = "1"
    flags: frozenset[str] = frozenset()
    joins: str = ""

    def load_sql(self) -> str:
        return f"{self.select} WHERE t.id IN ({_ITEMS}) AND ({self.eligible})"

    def all_sql(self) -> str:
        return f"SELECT t.id FROM {self.table} AS t {self.joins} WHERE {self.eligible}"


PassageVectors = Literal["none", "text", "prose", "all"]

#: Which passages get a vector (`Settings.passage_vectors`): none; user and assistant text; that and
#: compaction summaries; every passage. Never the first: it is the head its message's own vector reads
#: (`cairn.transcripts.passages.HEAD_TOKENS`). Noise messages have none, as they have no vector.
PASSAGE_VECTORS: dict[str, str] = {
    "none": "0",
    "text": "t.seq > 0 AND m.is_noise = 0 AND m.kind = 'text'",
    "prose": "t.seq > 0 AND m.is_noise = 0 AND m.kind IN ('text', 'compact_summary')",
    "all": "t.seq > 0 AND m.is_noise = 0",
}


MessageVectors = Literal["prose", "all"]

#: Which messages get a vector (`Settings.message_vectors`): all but tool output, or every one. Tool
#: output is most of a coding session's text (two thirds of the characters of coding-qa-dev) and its
#: vectors only crowded semantic search there: without them, hybrid recall_any@10 went 0.917 -> 0.950
#: and semantic 0.833 -> 0.850 (README "Search"), at a third of the embedding work. Keywords still
#: find every tool result. Noise and empty messages never get one.
MESSAGE_VECTORS: dict[str, str] = {
    "prose": "t.is_noise = 0 AND trim(t.text) <> '' AND t.kind <> 'tool_result'",
    "all": "t.is_noise = 0 AND trim(t.text) <> ''",
}


def message_source(policy: MessageVectors = "prose") -> VectorSource:
    """How messages become vectors: their text, with the metadata search filters on; `policy` says
    which messages get one."""
    return VectorSource(
        "messages",
        "messages",
        """
        SELECT t.id, t.text AS document, t.session_id, t.role, t.kind, t.timestamp,
               t.file_id, t.line, t.is_sidechain, s.project_id, p.path AS project
        FROM messages AS t
        LEFT JOIN sessions AS s ON s.id = t.session_id
        LEFT JOIN projects AS p ON p.id = s.project_id
        """,
        eligible=MESSAGE_VECTORS[policy],
        flags=frozenset({"is_sidechain"}),
    )


def passage_source(policy: PassageVectors = "text") -> VectorSource:
    """How message passages become vectors: the passage's text, with its message's metadata (so the
    same filters apply) and `message_id`; `policy` says which passages get one."""
    return VectorSource(
        "passages",
        "message_passages",
        """
        SELECT t.id, t.text AS document, t.message_id, t.seq, m.session_id, m.role, m.kind, m.timestamp,
               m.file_id, m.line, m.is_sidechain, s.project_id, p.path AS project
        FROM message_passages AS t
        JOIN messages AS m ON m.id = t.message_id
        LEFT JOIN sessions AS s ON s.id = m.session_id
        LEFT JOIN projects AS p ON p.id = s.project_id
        """,
        eligible=PASSAGE_VECTORS[policy],
        flags=frozenset({"is_sidechain"}),
        joins="JOIN messages AS m ON m.id = t.message_id",
    )


SOURCES: dict[str, VectorSource] = {
    source.kind: source
    for source in (
        message_source(),
        VectorSource(
            "ideas",
            "ideas",
            """
            SELECT t.id, t.content AS document, t.intent, t.session_id, t.span_id, t.importance,
                   t.superseded_by IS NOT NULL AS superseded, s.project_id, p.path AS project
            FROM ideas AS t
            LEFT JOIN sessions AS s ON s.id = t.session_id
            LEFT JOIN projects AS p ON p.id = s.project_id
            """,
            flags=frozenset({"superseded"}),
        ),
        VectorSource(
            "spans",
            "topic_spans",
            """
            SELECT t.id,
                   t.name || CASE WHEN trim(t.summary) <> '' THEN char(10) || t.summary ELSE '' END
                       AS document,
                   t.session_id, t.parent_id, t.depth, s.project_id, p.path AS project
            FROM topic_spans AS t
            LEFT JOIN sessions AS s ON s.id = t.session_id
            LEFT JOIN projects AS p ON p.id = s.project_id
            """,
        ),
        VectorSource(
            "entities",
            "entities",
            """
            SELECT t.id,
                   t.canonical_name || coalesce(
                       ' (' || (SELECT group_concat(a.alias, ', ') FROM entity_aliases AS a
                                WHERE a.entity_id = t.id) || ')', '') AS document,
                   t.canonical_name AS name, t.type
            FROM entities AS t
            """,
        ),
        # A file chunk is embedded with its path first: "login button" should find LoginButton.tsx
        # even where the code never spells the words out.
        VectorSource(
            "chunks",
            "file_chunks",
            """
            SELECT t.id, d.rel_path || char(10) || t.content AS document, t.document_id, t.chunk_index,
                   d.rel_path, d.project_id, p.path AS project
            FROM file_chunks AS t
            JOIN file_documents AS d ON d.id = t.document_id
            LEFT JOIN projects AS p ON p.id = d.project_id
            """,
        ),
        # An association is embedded by its query, so a later query close in meaning finds it.
        VectorSource(
            "associations",
            "search_associations",
            """
            SELECT t.id, t.query AS document, t.file_path, t.rel_path, t.source, t.project_id,
                   p.path AS project
            FROM search_associations AS t
            LEFT JOIN projects AS p ON p.id = t.project_id
            """,
        ),
        passage_source(),
    )
}


def sources_for(
    passage_vectors: PassageVectors, message_vectors: MessageVectors = "prose"
) -> dict[str, VectorSource]:
    """`SOURCES` with the messages' and passages' vectors chosen by their settings."""
    return {
        **SOURCES,
        "messages": message_source(message_vectors),
        "passages": passage_source(passage_vectors),
    }


async def enqueue(conn: aiosqlite.Connection, kind: str, item_ids: Iterable[int], op: Op = "upsert") -> None:
    """Queue items explicitly, inside the caller's write transaction.

    Triggers already queue every insert, update and delete of a row with a vector; this is for
    changes they cannot see, such as a session moving to another project (its items' metadata).
    """
    _source(kind)
    await conn.executemany(
        """
        INSERT INTO vector_outbox (kind, item_id, op) VALUES (?, ?, ?)
        ON CONFLICT (kind, item_id) DO UPDATE SET
            op = excluded.op, queued_at = excluded.queued_at, revision = revision + 1
        """,
        [(kind, int(item_id), op) for item_id in item_ids],
    )


async def pending(db: Database, kinds: Collection[str] | None = None) -> int:
    """Queued outbox rows (of `kinds` only, when given)."""
    where, params = _kinds_filter(kinds)
    return int(await db.scalar(f"SELECT count(*) FROM vector_outbox {where}", params))


def _kinds_filter(kinds: Collection[str] | None) -> tuple[str, tuple[str, ...]]:
    if kinds is None:
        return "", ()
    return f"WHERE kind IN ({', '.join('?' * len(kinds))})", tuple(kinds)


async def drain(
    db: Database,
    vectors: VectorIndex,
    *,
    batch: int = 256,
    progress: Progress | None = None,
    sources: Mapping[str, VectorSource] = SOURCES,
    kinds: Collection[str] | None = None,
) -> int:
    """Apply every queued change to Chroma; return how many outbox rows were applied.

    Runs until the queue is empty, `batch` rows at a time (one Chroma call per kind per batch).
    `sources` says how each kind's items are loaded (`sources_for` the settings); `kinds`, when
    given, limits the drain to those kinds (two drains of disjoint kinds can run side by side).
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    where, params = _kinds_filter(kinds)
    total = await pending(db, kinds)
    done = 0
    if progress:
        progress(done, total)
    while True:
        rows = await db.fetchall(
            f"SELECT kind, item_id, revision FROM vector_outbox {where} "
            "ORDER BY queued_at, kind, item_id LIMIT ?",
            (*params, batch),
        )
        if not rows:
            return done
        by_kind: dict[str, list[int]] = {}
        for row in rows:
            by_kind.setdefault(row["kind"], []).append(row["item_id"])
        for kind, ids in by_kind.items():
            await _apply(db, vectors, _source(kind, sources), ids)
        await _acknowledge(db, rows)
        done += len(rows)
        if progress:
            total = max(total, done + await pending(db, kinds))
            progress(done, total)


async def rebuild(
    db: Database,
    vectors: VectorIndex,
    progress: Progress | None = None,
    *,
    sources: Mapping[str, VectorSource] = SOURCES,
) -> int:
    """Recreate every Chroma collection from SQLite; return how many vectors were written.

    For `cairn reindex-vectors`: after a lost or corrupt Chroma directory, or a change of embedding
    function. The collections are emptied, every eligible item is queued, and the queue drained — so
    an interrupted rebuild is finished by the next drain.
    """
    await asyncio.to_thread(vectors.reset)
    async with db.write() as conn:
        for source in sources.values():
            await conn.execute(
                f"""
                INSERT INTO vector_outbox (kind, item_id, op)
                SELECT '{source.kind}', id, 'upsert' FROM ({source.all_sql()}) WHERE true
                ON CONFLICT (kind, item_id) DO UPDATE SET
                    op = excluded.op, queued_at = excluded.queued_at, revision = revision + 1
                """
            )
    return await drain(db, vectors, progress=progress, sources=sources)


async def _apply(db: Database, vectors: VectorIndex, source: VectorSource, ids: Sequence[int]) -> None:
    rows = await db.fetchall(source.load_sql(), (json.dumps(list(ids)),))
    found = {row["id"]: row for row in rows}
    if found:
        keys = list(found)
        await asyncio.to_thread(
            vectors.upsert,
            source.kind,
            [str(key) for key in keys],
            [found[key]["document"] for key in keys],
            [_metadata(found[key], source.flags) for key in keys],
        )
    gone = [str(item) for item in ids if item not in found]
    if gone:
        await asyncio.to_thread(vectors.delete, source.kind, gone)


async def _acknowledge(db: Database, rows: Sequence[sqlite3.Row]) -> None:
    """Remove the handled rows — those not re-queued since they were read."""
    async with db.write() as conn:
        await conn.executemany(
            "DELETE FROM vector_outbox WHERE kind = ? AND item_id = ? AND revision = ?",
            [(row["kind"], row["item_id"], row["revision"]) for row in rows],
        )


def _metadata(row: sqlite3.Row, flags: frozenset[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in row.keys():  # noqa: SIM118 - sqlite3.Row is not iterable by key
        if key in ("id", "document") or row[key] is None:
            continue
        meta[key] = bool(row[key]) if key in flags else row[key]
    return meta


def _source(kind: str, sources: Mapping[str, VectorSource] = SOURCES) -> VectorSource:
    try:
        return sources[kind]
    except KeyError:
        raise ValueError(f"unknown vector kind {kind!r}; expected one of {', '.join(SOURCES)}") from None
