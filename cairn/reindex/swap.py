"""Swap a session's new generation (built in a scratch database) into the store in one transaction.

One `BEGIN IMMEDIATE` transaction deletes the session's old ideas and topic spans (their relations
and entity links go with them) and inserts the scratch generation with fresh ids, so every reader —
search, recall, open questions, `show` — sees either the old generation or the new one, never both
and never neither. The session's indexing cursors and skipped lines become the scratch run's, its
agent runs are recorded in `index_runs`, and the job's `reindex_sessions` row is written in the same
transaction: a crash before the commit leaves the old generation and no mark, after it both.

The store's own triggers queue vector work for every deleted and inserted row (deletes for the old
ideas, spans and entities, upserts for the new ones), so Chroma follows after the commit as it does
for any indexing.

What other rows learned about an old idea is carried to the new idea said at the same place (same
file and line; the same text first): its usage count and last use, the recall injections that showed
it, and the links other sessions' ideas have to it (relations, `superseded_by`, `answered_by`). What
pointed at an idea with no successor goes with it, as when the executor replaces an idea. An entity
only the old generation named, and nothing names any more, is deleted.

The old generation's own links to other sessions' ideas are not carried: the new generation made its
links again, and carrying the old ones too would keep every link any earlier generation ever made (a
store's links then depended on how it was first indexed, and grew from one re-index to the next). The
one exception is a `supersedes` or `answers` link that goes with the other idea's `superseded_by` or
`answered_by`, which is carried with it (a person may have set that mark by hand).

A person's corrections (`cairn.store.corrections`) hold for the new generation: answered, done,
declined and importance are applied by the store's `ideas_corrected` trigger as each idea goes in, and
a new idea where the person forgot one as wrong is not inserted (`forgotten_skipped`), nor what links
to it or an entity only it names. The scratch store already has the corrections and its executor
skips those ideas; the swap checks again for a correction made while the session was re-indexed. A
correction whose idea the new generation does not make is kept for the next idea made at its place,
and counted (`corrections_waiting`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

from cairn.config import Settings
from cairn.errors import Failure
from cairn.reindex.scratch import SCRATCH_DB, Scratch, scratch_dir
from cairn.store.corrections import REOPENED, forgotten_at
from cairn.store.db import Database

log = logging.getLogger(__name__)

# An idea's links to other ideas, written once all of the generation's ideas have their new ids.
_IDEA_LINKS = ("answered_by", "superseded_by")


class SwapConflictError(Failure):
    """The session's transcript was rewritten while its new generation was built; run again."""


@dataclass
class SwapStats:
    old_ideas: int = 0
    new_ideas: int = 0
    old_spans: int = 0
    new_spans: int = 0
    carried: int = 0  # old ideas whose usage, injections and links moved to a successor
    forgotten_skipped: int = 0  # new ideas left out: the person forgot an idea there as wrong
    corrections_waiting: int = 0  # the person's corrections in the session no idea holds now (kept)


@dataclass
class _Generation:
    """The scratch database's generation of one session, read before the store's write lock is taken."""

    files: list[sqlite3.Row]
    runs: list[sqlite3.Row]
    spans: list[sqlite3.Row]
    ideas: list[sqlite3.Row]
    relations: list[sqlite3.Row]
    links: list[sqlite3.Row]  # idea_entities of the new ideas
    resolved: list[sqlite3.Row]  # other sessions' ideas as the new generation left them (answered, …)
    entities: dict[int, sqlite3.Row]
    aliases: list[sqlite3.Row]
    skipped: list[sqlite3.Row]
    associations: list[sqlite3.Row]


async def _read(scratch: Scratch) -> _Generation:
    db = scratch.db
    links = await db.fetchall(
        "SELECT idea_id, entity_id FROM idea_entities WHERE idea_id > ?", (scratch.idea_floor,)
    )
    entity_ids = sorted({row["entity_id"] for row in links})
    return _Generation(
        files=await db.fetchall(
            "SELECT id, indexed_line, generation_start_id FROM transcript_files WHERE session_id = ?",
            (scratch.session_id,),
        ),
        runs=await db.fetchall("SELECT * FROM index_runs ORDER BY id"),
        spans=await db.fetchall("SELECT * FROM topic_spans WHERE id > ? ORDER BY id", (scratch.span_floor,)),
        ideas=await db.fetchall("SELECT * FROM ideas WHERE id > ? ORDER BY id", (scratch.idea_floor,)),
        relations=await db.fetchall(
            "SELECT * FROM relations WHERE id > ? ORDER BY id", (scratch.relation_floor,)
        ),
        links=links,
        resolved=await db.fetchall(
            """
            SELECT id, superseded_by, valid_until, answered_by, answered_at, completed_at, resolved_line,
                   resolution
            FROM ideas WHERE id <= ?
              AND (superseded_by IS NOT NULL OR answered_at IS NOT NULL OR completed_at IS NOT NULL)
            """,
            (scratch.idea_floor,),
        ),
        entities={
            row["id"]: row
            for row in await db.fetchall(
                "SELECT * FROM entities WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(entity_ids),),
            )
        },
        aliases=await db.fetchall(
            "SELECT entity_id, alias FROM entity_aliases WHERE entity_id IN (SELECT value FROM json_each(?))",
            (json.dumps(entity_ids),),
        ),
        skipped=await db.fetchall(
            "SELECT * FROM skipped_lines WHERE file_id IN "
            "(SELECT id FROM transcript_files WHERE session_id = ?)",
            (scratch.session_id,),
        ),
        associations=await db.fetchall("SELECT * FROM search_associations ORDER BY id"),
    )


async def copy_runs(main: Database, scratch: Database) -> None:
    """Record the scratch's agent runs in the store when its generation is not swapped in.

    Every model call is accounted (architecture invariant 6), including those of a session whose
    re-index failed or was stopped and whose generation is therefore dropped.
    """
    runs = await scratch.fetchall("SELECT * FROM index_runs ORDER BY id")
    if runs:
        async with main.write() as conn:
            for run in runs:
                await _insert(conn, "index_runs", _without_id(run))


async def recover_runs(main: Database, settings: Settings) -> int:
    """Record in the store the runs of a scratch database that a killed re-index left; how many.

    A scratch is removed as soon as its generation is swapped in or its runs are copied, so one still
    on disk holds runs that no ledger has: they were paid for, and count against today's budget. A
    scratch too damaged to read is left to `clear_scratch`, with a warning.
    """
    path = scratch_dir(settings) / SCRATCH_DB
    if not path.exists():
        return 0
    try:
        scratch = await Database.open(path, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    except (sqlite3.Error, OSError) as exc:
        log.warning("the runs of a re-index left half-way could not be read (%s); they are not counted", exc)
        return 0
    try:
        count = int(await scratch.scalar("SELECT count(*) FROM index_runs") or 0)
        await copy_runs(main, scratch)
    finally:
        await scratch.close()
    return count


async def swap_session(main: Database, scratch: Scratch, job_id: int) -> SwapStats:
    """Replace the scratch session's generation in `main` by the one built in `scratch`, in one go."""
    session_id = scratch.session_id
    new = await _read(scratch)
    file_ids = [row["id"] for row in new.files]
    stats = SwapStats(new_ideas=len(new.ideas), new_spans=len(new.spans))
    async with main.write() as conn:
        await _check_files(conn, new.files)
        old_ideas = await _column(
            conn,
            "SELECT id FROM ideas WHERE session_id = ? OR source_file_id IN (SELECT value FROM json_each(?))",
            (session_id, json.dumps(file_ids)),
        )
        old_spans = await _column(
            conn,
            "SELECT id FROM topic_spans WHERE session_id = ? OR file_id IN (SELECT value FROM json_each(?))",
            (session_id, json.dumps(file_ids)),
        )
        stats.old_ideas, stats.old_spans = len(old_ideas), len(old_spans)
        kept = await _Kept.read(conn, old_ideas)
        await _delete(conn, old_ideas, old_spans, file_ids)

        # A scratch idea left out maps to None: what names it is dropped, never pointed elsewhere.
        idea_ids: dict[int, int | None] = {
            idea["id"]: None
            for idea in new.ideas
            if await forgotten_at(
                conn, idea["source_file_id"], idea["source_line"], idea["content_hash"], idea["intent"]
            )
        }
        stats.forgotten_skipped = len(idea_ids)
        stats.new_ideas -= len(idea_ids)
        kept_ideas = [idea for idea in new.ideas if idea["id"] not in idea_ids]
        run_ids = {run["id"]: await _insert(conn, "index_runs", _without_id(run)) for run in new.runs}
        span_ids = await _insert_spans(conn, new.spans)
        links = [link for link in new.links if link["idea_id"] not in idea_ids]
        entity_ids = await _entities(conn, new, {link["entity_id"] for link in links})
        for idea in kept_ideas:
            row = _without_id(idea)
            row["span_id"] = span_ids.get(idea["span_id"]) if idea["span_id"] is not None else None
            for column in _IDEA_LINKS:
                row[column] = None
            idea_ids[idea["id"]] = await _insert(conn, "ideas", row)
        for idea in kept_ideas:
            for column in _IDEA_LINKS:
                if (target := _target(idea[column], idea_ids)) is not None and await _exists(conn, target):
                    await conn.execute(
                        f"UPDATE ideas SET {column} = ? WHERE id = ?", (target, idea_ids[idea["id"]])
                    )
        for rel in new.relations:
            ends = [_target(rel[end], idea_ids) for end in ("from_idea_id", "to_idea_id")]
            if (
                ends[0] is not None
                and ends[1] is not None
                and await _exists(conn, ends[0])
                and await _exists(conn, ends[1])
            ):
                row = {**_without_id(rel), "from_idea_id": ends[0], "to_idea_id": ends[1]}
                await _insert(conn, "relations", row, ignore=True)
        await _resolve_others(conn, new.resolved, idea_ids)
        for link in links:
            await conn.execute(
                "INSERT OR IGNORE INTO idea_entities (idea_id, entity_id) VALUES (?, ?)",
                (idea_ids[link["idea_id"]], entity_ids[link["entity_id"]]),
            )
        for skip in new.skipped:
            row = dict(skip)
            row["run_id"] = run_ids.get(skip["run_id"]) if skip["run_id"] is not None else None
            await _insert(conn, "skipped_lines", row, ignore=True)
        for association in new.associations:
            await _insert(conn, "search_associations", _without_id(association), ignore=True)
        stats.carried = await kept.restore(conn, _successors(kept.ideas, kept_ideas, idea_ids))
        await _drop_orphan_entities(conn, kept.entities)
        for file in new.files:
            await conn.execute(
                "UPDATE transcript_files SET indexed_line = ? WHERE id = ?",
                (file["indexed_line"], file["id"]),
            )
        await conn.execute(
            "INSERT INTO reindex_sessions (job_id, session_id, ideas) VALUES (?, ?, ?)",
            (job_id, session_id, len(kept_ideas)),
        )
        stats.corrections_waiting = await _waiting_corrections(conn, file_ids)
    return stats


async def _waiting_corrections(conn: aiosqlite.Connection, file_ids: list[int]) -> int:
    """The person's corrections in these files (forgets aside) that no idea takes now, by the rule of the
    `ideas_corrected` trigger.

    A new generation need not make every idea the old one made, so a correction can be left without its
    idea. It is kept, and the trigger applies it to the next idea made at its place; counting the ones
    waiting tells the person, instead of letting a declined or answered mark vanish from sight.
    """
    async with conn.execute(
        """
        SELECT count(*) FROM idea_corrections c
        WHERE c.source_file_id IN (SELECT value FROM json_each(?)) AND c.state IS NOT 'forgotten'
          AND NOT EXISTS (
              SELECT 1 FROM ideas i
              WHERE i.source_file_id = c.source_file_id AND i.source_line = c.source_line
                AND (i.content_hash = c.content_hash OR (i.intent = c.intent AND NOT c.hash_only)))
        """,
        (json.dumps(file_ids),),
    ) as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _check_files(conn: aiosqlite.Connection, files: Iterable[sqlite3.Row]) -> None:
    for file in files:
        async with conn.execute(
            "SELECT generation_start_id FROM transcript_files WHERE id = ?", (file["id"],)
        ) as cur:
            row = await cur.fetchone()
        if row is None or row[0] != file["generation_start_id"]:
            raise SwapConflictError(
                f"transcript file {file['id']} was removed or rewritten while its session was re-indexed"
            )


async def _delete(
    conn: aiosqlite.Connection, old_ideas: list[int], old_spans: list[int], file_ids: list[int]
) -> None:
    """Delete the old generation: its relations, entity links and unmatched injections cascade."""
    await conn.execute(
        "DELETE FROM ideas WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(old_ideas),)
    )
    await conn.execute(
        "DELETE FROM topic_spans WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(old_spans),)
    )
    await conn.execute(
        "DELETE FROM skipped_lines WHERE file_id IN (SELECT value FROM json_each(?))", (json.dumps(file_ids),)
    )


async def _insert_spans(conn: aiosqlite.Connection, spans: Sequence[sqlite3.Row]) -> dict[int, int]:
    ids: dict[int, int] = {}
    for span in spans:
        row = _without_id(span)
        row["parent_id"] = None
        ids[span["id"]] = await _insert(conn, "topic_spans", row)
    for span in spans:
        if span["parent_id"] is not None and span["parent_id"] in ids:
            await conn.execute(
                "UPDATE topic_spans SET parent_id = ? WHERE id = ?", (ids[span["parent_id"]], ids[span["id"]])
            )
    return ids


async def _entities(conn: aiosqlite.Connection, new: _Generation, named: set[int]) -> dict[int, int]:
    """The store's id of every entity the new generation's ideas name (`named`: scratch ids), inserting
    those it lacks (with aliases)."""
    ids: dict[int, int] = {}
    for scratch_id, entity in new.entities.items():
        if scratch_id not in named:
            continue
        async with conn.execute(
            "SELECT id FROM entities WHERE canonical_name = ? COLLATE NOCASE AND type = ?",
            (entity["canonical_name"], entity["type"]),
        ) as cur:
            found = await cur.fetchone()
        ids[scratch_id] = found[0] if found else await _insert(conn, "entities", _without_id(entity))
    for alias in new.aliases:
        if alias["entity_id"] not in ids:
            continue
        await conn.execute(
            "INSERT OR IGNORE INTO entity_aliases (entity_id, alias) VALUES (?, ?)",
            (ids[alias["entity_id"]], alias["alias"]),
        )
    return ids


async def _drop_orphan_entities(conn: aiosqlite.Connection, entity_ids: list[int]) -> None:
    """Entities the old generation named that no idea names now (a misreading the new model corrected)."""
    await conn.execute(
        """
        DELETE FROM entities WHERE id IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (SELECT 1 FROM idea_entities ie WHERE ie.entity_id = entities.id)
        """,
        (json.dumps(entity_ids),),
    )


def _target(idea_id: int | None, idea_ids: dict[int, int | None]) -> int | None:
    """A scratch idea id as the store's: a new idea's new id (None for one left out), another
    session's idea's own id."""
    return None if idea_id is None else idea_ids.get(idea_id, idea_id)


async def _resolve_others(
    conn: aiosqlite.Connection, resolved: Sequence[sqlite3.Row], idea_ids: dict[int, int | None]
) -> None:
    """What the new generation did to other sessions' ideas — answered, completed, superseded them —
    applied where the store has not recorded it already (the executor only ever fills these in), but
    not an answer by a new idea that was left out, nor an answer or completion of an idea a person
    reopened (`REOPENED`): the re-index re-reads what was said before the person's word."""
    for row in resolved:
        if row["answered_at"] is not None:
            by = _target(row["answered_by"], idea_ids)
            if by is None and row["answered_by"] is not None:
                continue
            await conn.execute(
                "UPDATE ideas SET answered_by = ?, answered_at = ?, resolved_line = ?, resolution = ? "
                f"WHERE id = ? AND answered_at IS NULL AND NOT {REOPENED}",
                (by, row["answered_at"], row["resolved_line"], row["resolution"], row["id"]),
            )
        if row["completed_at"] is not None:
            await conn.execute(
                "UPDATE ideas SET completed_at = ?, resolved_line = ?, resolution = ? "
                f"WHERE id = ? AND completed_at IS NULL AND NOT {REOPENED}",
                (row["completed_at"], row["resolved_line"], row["resolution"], row["id"]),
            )
        if (by := _target(row["superseded_by"], idea_ids)) is not None:
            await conn.execute(
                "UPDATE ideas SET superseded_by = ?, valid_until = ? WHERE id = ? AND superseded_by IS NULL",
                (by, row["valid_until"], row["id"]),
            )


def _successors(
    old: Sequence[sqlite3.Row], new: Sequence[sqlite3.Row], idea_ids: dict[int, int | None]
) -> dict[int, int]:
    """Old idea id → the new idea said at the same file and line (the same text preferred)."""
    exact: dict[tuple[Any, Any, Any], int] = {}
    at_line: dict[tuple[Any, Any], int] = {}
    for idea in new:
        if (new_id := idea_ids[idea["id"]]) is None:
            continue
        exact.setdefault((idea["source_file_id"], idea["source_line"], idea["content_hash"]), new_id)
        at_line.setdefault((idea["source_file_id"], idea["source_line"]), new_id)
    result: dict[int, int] = {}
    for idea in old:
        place = (idea["source_file_id"], idea["source_line"])
        successor = exact.get((*place, idea["content_hash"])) or at_line.get(place)
        if successor is not None and idea["source_file_id"] is not None:
            result[idea["id"]] = successor
    return result


@dataclass
class _Kept:
    """What other rows hold about the old ideas, read before they are deleted, restored on successors."""

    ideas: list[sqlite3.Row]
    injections: list[sqlite3.Row]
    pointers: list[tuple[str, int, int]]  # (column, idea outside the session, old idea it points at)
    # To an old idea from outside, or from one to an idea whose `superseded_by`/`answered_by` it is.
    relations: list[sqlite3.Row]
    entities: list[int]
    # Old ideas answered or superseded by another session's idea: the successor keeps that state.
    resolved_outside: list[sqlite3.Row]

    @classmethod
    async def read(cls, conn: aiosqlite.Connection, old: list[int]) -> _Kept:
        ids = json.dumps(old)
        in_old = "IN (SELECT value FROM json_each(:ids))"
        pointers: list[tuple[str, int, int]] = []
        for column in _IDEA_LINKS:
            for row in await _rows(
                conn,
                f"SELECT id, {column} AS target FROM ideas WHERE {column} {in_old} AND id NOT {in_old}",
                ids,
            ):
                pointers.append((column, row["id"], row["target"]))
        return cls(
            ideas=await _rows(
                conn,
                f"SELECT id, source_file_id, source_line, content_hash, usage_count, last_used_at "
                f"FROM ideas WHERE id {in_old}",
                ids,
            ),
            injections=await _rows(conn, f"SELECT * FROM recall_injections WHERE idea_id {in_old}", ids),
            pointers=pointers,
            relations=await _rows(
                conn,
                f"""
                SELECT r.* FROM relations r JOIN ideas target ON target.id = r.to_idea_id
                WHERE (r.from_idea_id {in_old}) <> (r.to_idea_id {in_old})
                  AND (r.to_idea_id {in_old}
                       OR (r.relation_type = 'supersedes' AND target.superseded_by = r.from_idea_id)
                       OR (r.relation_type = 'answers' AND target.answered_by = r.from_idea_id))
                """,
                ids,
            ),
            entities=[
                row["entity_id"]
                for row in await _rows(
                    conn, f"SELECT DISTINCT entity_id FROM idea_entities WHERE idea_id {in_old}", ids
                )
            ],
            resolved_outside=await _rows(
                conn,
                f"""
                SELECT id, answered_by, answered_at, resolved_line, resolution, superseded_by, valid_until
                FROM ideas WHERE id {in_old}
                  AND ((answered_by IS NOT NULL AND answered_by NOT {in_old})
                       OR (superseded_by IS NOT NULL AND superseded_by NOT {in_old}))
                """,
                ids,
            ),
        )

    async def restore(self, conn: aiosqlite.Connection, successor: dict[int, int]) -> int:
        """Put back on each old idea's successor what was kept about it; how many ideas had one."""
        for idea in self.ideas:
            if (new_id := successor.get(idea["id"])) is not None and idea["usage_count"]:
                await conn.execute(
                    "UPDATE ideas SET usage_count = usage_count + ?, last_used_at = CASE "
                    "WHEN ? > coalesce(last_used_at, '') THEN ? ELSE last_used_at END WHERE id = ?",
                    (idea["usage_count"], idea["last_used_at"], idea["last_used_at"], new_id),
                )
        for injection in self.injections:
            if (new_id := successor.get(injection["idea_id"])) is not None:
                await _insert(conn, "recall_injections", {**dict(injection), "idea_id": new_id})
        for row in self.resolved_outside:
            if (new_id := successor.get(row["id"])) is None:
                continue
            if row["answered_by"] is not None and row["answered_by"] not in successor:
                await conn.execute(
                    "UPDATE ideas SET answered_by = ?, answered_at = ?, resolved_line = ?, resolution = ? "
                    "WHERE id = ? AND answered_at IS NULL AND intent IN ('question', 'problem')",
                    (row["answered_by"], row["answered_at"], row["resolved_line"], row["resolution"], new_id),
                )
            if row["superseded_by"] is not None and row["superseded_by"] not in successor:
                await conn.execute(
                    "UPDATE ideas SET superseded_by = ?, valid_until = ? "
                    "WHERE id = ? AND superseded_by IS NULL",
                    (row["superseded_by"], row["valid_until"], new_id),
                )
        for column, idea_id, target in self.pointers:
            if (new_id := successor.get(target)) is not None:
                await conn.execute(f"UPDATE ideas SET {column} = ? WHERE id = ?", (new_id, idea_id))
        for rel in self.relations:
            ends = [successor.get(rel[end], rel[end]) for end in ("from_idea_id", "to_idea_id")]
            if ends[0] != ends[1] and await _exists(conn, ends[0]) and await _exists(conn, ends[1]):
                row = {**_without_id(rel), "from_idea_id": ends[0], "to_idea_id": ends[1]}
                await _insert(conn, "relations", row, ignore=True)
        return sum(1 for idea in self.ideas if idea["id"] in successor)


async def _rows(conn: aiosqlite.Connection, sql: str, ids: str) -> list[sqlite3.Row]:
    async with conn.execute(sql, {"ids": ids}) as cur:
        return list(await cur.fetchall())


async def _column(conn: aiosqlite.Connection, sql: str, params: Sequence[Any]) -> list[int]:
    async with conn.execute(sql, params) as cur:
        return [int(row[0]) for row in await cur.fetchall()]


async def _exists(conn: aiosqlite.Connection, idea_id: int) -> bool:
    async with conn.execute("SELECT 1 FROM ideas WHERE id = ?", (idea_id,)) as cur:
        return await cur.fetchone() is not None


def _without_id(row: sqlite3.Row) -> dict[str, Any]:
    return {key: value for key, value in dict(row).items() if key != "id"}


async def _insert(
    conn: aiosqlite.Connection, table: str, row: dict[str, Any], *, ignore: bool = False
) -> int:
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    async with conn.execute(f"{verb} INTO {table} ({columns}) VALUES ({marks})", tuple(row.values())) as cur:
        return int(cur.lastrowid or 0)
