"""Search associations: "this query should have found this file", learned or proposed, then merged.

Two writers produce them — the feedback loop (a weak search resolved by reads, `source="learned"`)
and the indexing agent's `search_associations` output (`source="agent"`) — and both go through
`record_association`, so they obey the same rules:

- the file must be a real file inside the session's project (symlinks and `..` resolved; an agent's
  relative path is relative to the project). Anything else is *rejected*: an association to a file
  cairn will never index could only ever point search at nothing. So is a file whose path holds a
  secret, in its name or in its project's directory (stored redacted, it names no file on disk): its
  request is left for the file index to count as a `secret` skip;
- one row per (query folded for case and spacing, real absolute path): the same lesson learned again
  *merges* into it — `times_learned` counts the repeats, `learned_at` moves to the latest, grep
  patterns are united, `original_score` keeps the weakest score seen — instead of piling up rows that
  would each add the same boost;
- the file is queued for indexing (`file_requests`), so its chunks are there for the boost to lift.

The query comes from a transcript or a model: it is redacted before it is stored (and embedded).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import aiosqlite

from cairn.dates import iso_utc
from cairn.files.paths import ProjectPath, resolve_in_project
from cairn.files.policy import not_a_project, redacted_dir
from cairn.files.requests import request_files
from cairn.learning.boost import query_key
from cairn.store.json_columns import json_strings
from cairn.transcripts.redact import redact

AssociationSource = Literal["learned", "agent"]
AssociationOutcome = Literal["created", "merged", "rejected"]


async def record_association(
    conn: aiosqlite.Connection,
    *,
    project_id: int,
    project_dir: str | os.PathLike[str],
    query: str,
    file_path: str | os.PathLike[str],
    source: AssociationSource,
    cwd: str | os.PathLike[str] | None = None,
    reason: str | None = None,
    grep_patterns: Iterable[str] = (),
    original_score: float | None = None,
    learned_at: datetime | None = None,
) -> AssociationOutcome:
    """Store (or merge into) the association of `query` with `file_path`, inside the caller's transaction.

    `file_path` is resolved against `cwd` when relative, else against the project directory.
    """
    stored_query = " ".join(redact(query).split())
    key = query_key(stored_query)
    if not key:
        return "rejected"
    if redacted_dir(project_dir) is not None:
        # The project's directory held a secret: no file of it can be reached. The file index refuses
        # the request and counts it (`secret`), as it does every file whose path holds one.
        await request_files(conn, project_id, [(os.fspath(file_path), source)])
        return "rejected"
    located = await asyncio.to_thread(_existing_file, project_dir, file_path, cwd)
    if located is None:
        return "rejected"
    absolute = str(located.absolute)
    if redact(absolute) != absolute:  # stored redacted and counted as a `secret` skip, never in clear
        await request_files(conn, project_id, [(absolute, source)])
        return "rejected"
    when = iso_utc(learned_at or datetime.now(UTC))
    patterns = _distinct(redact(p) for p in grep_patterns)
    reason = (reason or "").strip() or None
    async with conn.execute(
        "SELECT id, project_id, rel_path, reason, grep_patterns, original_score, learned_at, source "
        "FROM search_associations WHERE query_key = ? AND file_path = ?",
        (key, absolute),
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        await conn.execute(
            """
            INSERT INTO search_associations (
                query, query_key, file_path, rel_path, project_id, source, reason, grep_patterns,
                original_score, learned_at
            ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            (
                stored_query,
                key,
                absolute,
                located.relative,
                project_id,
                source,
                reason,
                json.dumps(patterns, ensure_ascii=False),
                original_score,
                when,
            ),
        )
        outcome: AssociationOutcome = "created"
    else:
        await _merge(conn, row, project_id, located, reason, patterns, original_score, when)
        outcome = "merged"
    await request_files(conn, project_id, [(absolute, source)])
    return outcome


async def _merge(
    conn: aiosqlite.Connection,
    row: aiosqlite.Row,
    project_id: int,
    located: ProjectPath,
    reason: str | None,
    patterns: list[str],
    original_score: float | None,
    when: str,
) -> None:
    """Fold one more learning of an existing association into its row.

    `project_id` is only written when it changes (an association stored before it had one): the
    column re-queues the row's vector, and re-embedding an unchanged query would be wasted work.
    """
    scores = [s for s in (row["original_score"], original_score) if s is not None]
    merged_patterns = _distinct([*json_strings(row["grep_patterns"]), *patterns])
    assignments = {
        "times_learned": "times_learned + 1",
        "learned_at": "?",
        "grep_patterns": "?",
        "original_score": "?",
        "reason": "?",
        "rel_path": "?",
    }
    params: list[object] = [
        max(str(row["learned_at"]), when),
        json.dumps(merged_patterns, ensure_ascii=False),
        min(scores) if scores else None,
        reason or row["reason"],
        located.relative,
    ]
    if row["project_id"] != project_id:
        assignments["project_id"] = "?"
        params.append(project_id)
    sql = ", ".join(f"{column} = {value}" for column, value in assignments.items())
    await conn.execute(f"UPDATE search_associations SET {sql} WHERE id = ?", (*params, row["id"]))


def _existing_file(
    project_dir: str | os.PathLike[str],
    file_path: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None,
) -> ProjectPath | None:
    """The file's real place in the project if it is a regular file there now; else None.

    A path the file system will not even look at (too long, a directory without permission) is no
    file either: the path comes from a transcript or a model, so it must not fail the whole read.
    """
    if not_a_project(project_dir) is not None:  # a session in ~, / or /etc has no project files
        return None
    located = resolve_in_project(project_dir, file_path, cwd=cwd)
    if located is None:
        return None
    try:
        return located if Path(located.absolute).is_file() else None
    except OSError:
        return None


def _distinct(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))
