"""A person's corrections of ideas, kept by the idea's place so they outlive the idea's row.

Re-indexing a session deletes its ideas and makes new ones (`cairn.reindex.swap`); an import inserts
ideas another store made. A correction kept on the idea's row would be lost with it, so it is kept in
`idea_corrections` by where the idea was said — its transcript file and line — and its content hash,
and applies to an idea made there again: the one with the same hash, failing that the latest with the
same intent (a re-run of a model rarely words an idea the same way twice, but says the same kind of
thing at the same line) — unless other ideas of that intent were said at that line when it was
recorded (`hash_only`): a reworded idea cannot be told from them, so only the same words get it.

Answered, done, declined, reopened and importance are applied by the `ideas_corrected` trigger
(migration 12) as any writer inserts a row, so no insert path can forget them. `forgotten` (the idea
was wrong) is checked by the writers themselves with `forgotten_at`: they must leave the idea out and
count it, which a trigger cannot do (`RAISE(IGNORE)` would drop the row silently, and a writer reading
`lastrowid` would take the previous row's id for it). A correction holds no text, only the hash:
forgetting an idea promises its words leave the disk.
"""

from __future__ import annotations

from typing import Any

import aiosqlite

STATES = ("answered", "done", "declined", "open", "forgotten")

#: The id of the correction that applies to an idea with these `(file, line, hash, intent)` parameters,
#: by the rule of the `ideas_corrected` trigger.
_APPLYING = """
    SELECT id, state, importance, content_hash FROM idea_corrections
    WHERE source_file_id = ? AND source_line = ? AND (content_hash = ? OR (intent = ? AND NOT hash_only))
    ORDER BY content_hash = ? DESC, updated_at DESC, id DESC LIMIT 1
"""

_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

#: An SQL condition on a row of `ideas` (named `ideas`): a person reopened it. A re-index of another
#: session re-derives that session's old verdicts on it ("answered by …"); those must not undo the person.
REOPENED = """
    EXISTS (SELECT 1 FROM idea_corrections AS c
            WHERE c.state = 'open' AND c.source_file_id = ideas.source_file_id
              AND c.source_line = ideas.source_line AND c.content_hash = ideas.content_hash)
"""


async def applying(
    conn: aiosqlite.Connection, file_id: int | None, line: int | None, content_hash: str, intent: str
) -> dict[str, Any] | None:
    """The correction an idea said at `file_id`:`line` with this hash and intent gets, if any."""
    if file_id is None or line is None:
        return None
    async with conn.execute(_APPLYING, (file_id, line, content_hash, intent, content_hash)) as cursor:
        row = await cursor.fetchone()
    if row is None:
        return None
    return {"id": row[0], "state": row[1], "importance": row[2], "content_hash": row[3]}


async def forgotten_at(
    conn: aiosqlite.Connection, file_id: int | None, line: int | None, content_hash: str, intent: str
) -> bool:
    """Whether an idea made here would be one the person said was wrong and forgot."""
    found = await applying(conn, file_id, line, content_hash, intent)
    return found is not None and found["state"] == "forgotten"


async def record(
    conn: aiosqlite.Connection,
    idea: dict[str, Any],
    *,
    state: str | None = None,
    importance: float | None = None,
) -> bool:
    """Record `state` and/or `importance` for `idea` (a row with `source_file_id`, `source_line`,
    `content_hash`, `intent`); False when the idea has no place to keep it by (no source file).

    The correction that applied to the idea under an earlier hash (it was re-made in other words) is
    moved to its current hash, so one idea has one correction; a state or importance not given keeps
    what was recorded. `forgotten` drops the importance: nothing more is known of a wrong idea.
    """
    file_id, line = idea["source_file_id"], idea["source_line"]
    if file_id is None or line is None:
        return False
    content_hash, intent = str(idea["content_hash"]), str(idea["intent"])
    found = await applying(conn, file_id, line, content_hash, intent)
    if found is not None and found["content_hash"] != content_hash:
        await conn.execute(
            "UPDATE idea_corrections SET content_hash = ?, intent = ? WHERE id = ?",
            (content_hash, intent, found["id"]),
        )
    if state == "forgotten":
        importance = None
    async with conn.execute(
        "SELECT EXISTS (SELECT 1 FROM ideas WHERE source_file_id = ? AND source_line = ? AND intent = ? "
        "AND content_hash <> ?)",
        (file_id, line, intent, content_hash),
    ) as cursor:
        siblings = await cursor.fetchone()
    await conn.execute(
        f"""
        INSERT INTO idea_corrections (source_file_id, source_line, content_hash, intent, state, state_at,
                                      importance, hash_only)
        VALUES (?, ?, ?, ?, ?, CASE WHEN ? IS NULL THEN NULL ELSE {_NOW} END, ?, ?)
        ON CONFLICT (source_file_id, source_line, content_hash) DO UPDATE SET
            intent = excluded.intent, hash_only = excluded.hash_only,
            state = coalesce(excluded.state, state),
            state_at = CASE WHEN excluded.state IS NULL THEN state_at ELSE excluded.state_at END,
            importance = CASE WHEN excluded.state = 'forgotten' THEN NULL
                              ELSE coalesce(excluded.importance, importance) END,
            updated_at = {_NOW}
        """,
        (file_id, line, content_hash, intent, state, state, importance, int(bool(siblings and siblings[0]))),
    )
    return True
