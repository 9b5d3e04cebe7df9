"""What capture derives from the coding agent's tool calls: file index requests and search learning.

Both read the same bytes capture stores (the raw tool calls and results of one `read_from`), so both are
written in capture's own transaction (`Store.ingest(also=...)`): a crash stores all of it or none, and
since the cursor moves with it, no read is ever learned from twice. Neither may cost capture its
messages, though — a bug or a surprise in a tool result is contained in a savepoint, logged and counted,
and capture commits without it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aiosqlite

from cairn.config import Settings
from cairn.files.requests import request_files
from cairn.files.touches import touched_files
from cairn.learning.loop import learn
from cairn.transcripts.tool_events import ToolEvent, ToolOutput, ToolUse

log = logging.getLogger(__name__)


@dataclass
class Derived:
    """What one read's tool calls added: files queued for indexing, or why something failed."""

    files_requested: int = 0
    error: str | None = None


def wanted(settings: Settings) -> bool:
    return settings.files_index or settings.learn_from_search


def unmatched_outputs(events: Sequence[ToolEvent]) -> set[str]:
    """Ids of tool results in `events` whose call came in an earlier read."""
    calls = {event.id for event in events if isinstance(event, ToolUse)}
    return {e.tool_use_id for e in events if isinstance(e, ToolOutput) and e.tool_use_id not in calls}


async def derive(
    conn: aiosqlite.Connection,
    file_id: int,
    events: Sequence[ToolEvent],
    settings: Settings,
    tool_names: Mapping[str, str],
) -> Derived:
    """Queue the files the agent touched and feed the learner, inside capture's transaction."""
    report = Derived()
    if not events:
        return report
    if settings.files_index:
        await conn.execute("SAVEPOINT derive_files")
        try:
            report.files_requested = await _request_touched(conn, file_id, events, settings, tool_names)
        except Exception as exc:  # contained: capture must not lose its messages to a derived write
            await conn.execute("ROLLBACK TO derive_files")
            log.exception("queueing the files of transcript file %s failed; capture goes on", file_id)
            report.error = f"file requests: {type(exc).__name__}: {exc}"
        await conn.execute("RELEASE derive_files")
    if settings.learn_from_search:
        failure = await learn(conn, file_id, events, settings)  # contains its own failures the same way
        if failure is not None:
            report.error = f"learning: {failure}"
    return report


async def _request_touched(
    conn: aiosqlite.Connection,
    file_id: int,
    events: Sequence[ToolEvent],
    settings: Settings,
    tool_names: Mapping[str, str],
) -> int:
    # Only a session that named its working directory has a project whose files these are: without a
    # cwd the store files the session under the transcripts' own folder, which is no project to index.
    touches = touched_files(events, per_result=settings.files_per_result, tool_names=tool_names)
    if not touches:
        return 0
    async with conn.execute(
        """
        SELECT s.project_id FROM transcript_files AS f JOIN sessions AS s ON s.id = f.session_id
        WHERE f.id = ? AND s.project_id IS NOT NULL AND s.cwd IS NOT NULL
        """,
        (file_id,),
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        return 0
    return await request_files(conn, int(row[0]), [(touch.path, touch.reason) for touch in touches])
