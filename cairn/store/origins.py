"""Filling `messages.origin` — and the tool, its key argument and whether it failed — for rows stored
without it: every message of a store older than the column (migration 14) and messages an export
written before it brings in.

Capture sets the columns as it stores a message (`cairn.transcripts.origin`); this reads the same
columns capture would have read, so an upgraded store answers as a fresh capture would, with no
re-index. A tool result names its call's id only: the call's key argument is found in the message of
the same transcript that made the call, read in file order.
"""

from __future__ import annotations

from typing import Any

import aiosqlite

from cairn.store.json_columns import json_objects
from cairn.transcripts.origin import key_argument, origin_of, tool_of

_BATCH = 2_000


async def fill_origins(conn: aiosqlite.Connection) -> int:
    """Set the origin columns of every message whose `origin` is NULL; returns how many were set."""
    async with conn.execute("SELECT DISTINCT file_id FROM messages WHERE origin IS NULL") as cursor:
        files = [int(row[0]) for row in await cursor.fetchall()]
    filled = 0
    for file_id in files:
        filled += await _fill_file(conn, file_id)
    return filled


async def _fill_file(conn: aiosqlite.Connection, file_id: int) -> int:
    calls: dict[str, tuple[str, str]] = {}  # tool_use id -> (tool, key argument)
    updates: list[tuple[Any, ...]] = []
    filled = 0
    async with conn.execute(
        "SELECT id, role, kind, text, tool_calls, tool_results, is_sidechain, agent_id, origin "
        "FROM messages WHERE file_id = ? ORDER BY line, id",
        (file_id,),
    ) as cursor:
        rows = list(await cursor.fetchall())
    for row in rows:
        message_id, role, kind, text, raw_calls, raw_results, sidechain, agent_id, known = row
        tool_calls = json_objects(raw_calls)
        for call in tool_calls:
            if call.get("id"):
                name = str(call.get("name") or "")
                calls[str(call["id"])] = (name, key_argument(name, str(call.get("input") or "")))
        if known is not None:
            continue
        tool_results = json_objects(raw_results)
        for result in tool_results:
            found = calls.get(str(result.get("tool_use_id")))
            if found is not None and not result.get("tool_arg"):
                result["tool_arg"] = found[1]
        origin = origin_of(
            role=role,
            kind=kind,
            text=text,
            tool_calls=tool_calls,
            tool_results=tool_results,
            is_sidechain=bool(sidechain),
            agent_id=agent_id,
        )
        tool, argument, failed = tool_of(origin, tool_calls, tool_results)
        updates.append((origin, tool, argument or None, int(failed), message_id))
        if len(updates) >= _BATCH:
            filled += await _write(conn, updates)
    return filled + await _write(conn, updates)


async def _write(conn: aiosqlite.Connection, updates: list[tuple[Any, ...]]) -> int:
    if not updates:
        return 0
    await conn.executemany(
        "UPDATE messages SET origin = ?, tool = ?, tool_arg = ?, failed = ? WHERE id = ?", updates
    )
    count = len(updates)
    updates.clear()
    return count
