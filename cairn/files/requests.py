"""Queue project files for (re)indexing, inside whatever transaction noticed them.

Capture sees the agent touch a file while it writes a transcript's messages, and the learner sees a
resolved search while it writes its session; both want the file indexed, but reading, hashing and
chunking a file does not belong in those transactions. So they only leave a row in `file_requests`
(one per project and path: a new touch sets it pending again) and `drain_requests` does the work after
the transaction commits. Should that never happen — a crash, a daemon stopped — the row is still
pending and the next drain picks it up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import aiosqlite

from cairn.transcripts.redact import redact

FileReason = Literal["read", "edit", "grep", "glob", "learned", "agent"]
FILE_REASONS: frozenset[str] = frozenset({"read", "edit", "grep", "glob", "learned", "agent"})

_UPSERT = """
INSERT INTO file_requests (project_id, path, reason, status, requested_at)
VALUES (?, ?, ?, 'pending', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (project_id, path) DO UPDATE SET
    status = 'pending',
    reason = excluded.reason,
    requested_at = excluded.requested_at,
    outcome = NULL,
    done_at = NULL
"""

_SKIP_SECRET = """
INSERT INTO file_requests (project_id, path, reason, status, outcome, requested_at, done_at)
VALUES (?, ?, ?, 'skipped', 'secret', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL)
ON CONFLICT (project_id, path) DO UPDATE SET
    status = 'skipped',
    outcome = 'secret',
    reason = excluded.reason,
    requested_at = excluded.requested_at
"""


async def request_files(
    conn: aiosqlite.Connection, project_id: int, touches: Iterable[tuple[str, FileReason]]
) -> int:
    """Mark each `(path, reason)` pending for `project_id`; returns how many distinct paths were requested.

    Runs in the caller's open transaction (it never commits). A path named twice keeps the last reason
    given; an empty path or an unknown reason is dropped rather than failing the caller's transaction,
    which also holds the transcript's messages. A path holding a secret (a token in a directory name)
    is stored redacted and skipped for reason `secret`, never read: what it names cannot be stored.
    """
    wanted: dict[str, str] = {}
    secret: dict[str, str] = {}
    for path, reason in touches:
        if path and reason in FILE_REASONS:
            clean = redact(path)
            if clean == path:
                wanted[path] = reason
            else:
                secret[clean] = reason
    if wanted:
        await conn.executemany(_UPSERT, [(project_id, path, reason) for path, reason in wanted.items()])
    if secret:
        await conn.executemany(_SKIP_SECRET, [(project_id, path, reason) for path, reason in secret.items()])
    return len(wanted) + len(secret)
