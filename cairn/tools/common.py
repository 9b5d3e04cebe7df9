"""What several tools share: clamped limits, the unknown-session notice, and reading ideas as briefs."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from cairn.store.db import Database
from cairn.tools.results import IdeaBrief, Notice, preview

MAX_LIMIT = 25
# SQLite's largest integer: a bigger id from a model cannot even be bound as a parameter.
MAX_ID = 2**63 - 1

# An idea as a brief. `at` is when the idea was said (its source message's time), falling back to
# when it was stored: a backfill stores months-old ideas today, and "which came later" matters for
# supersession. The content is cut in SQL so long ideas are not read whole only to be previewed.
IDEA_SELECT = """
    SELECT i.id, i.intent, substr(i.content, 1, 400) AS content, i.session_id, i.source_line,
           coalesce((SELECT min(m.timestamp) FROM messages m
                     WHERE m.file_id = i.source_file_id AND m.line = i.source_line), i.created_at) AS at,
           i.superseded_by, i.answered_at, i.completed_at
    FROM ideas i
"""


def clamp(limit: int, default: int, maximum: int = MAX_LIMIT) -> int:
    """`limit` within 1..`maximum`; a nonsensical value (0, negative) falls back to `default`."""
    if limit < 1:
        return min(default, maximum)
    return min(limit, maximum)


async def missing_session(db: Database, session: str) -> Notice | None:
    """A notice when no session has this id (a model that mistypes one should learn so, not see "none")."""
    if await db.scalar("SELECT 1 FROM sessions WHERE id = ?", (session,)) is not None:
        return None
    return Notice(notice=f"no session with id {session!r}; pass the session id exactly as the batch gives it")


def idea_brief(row: sqlite3.Row, similarity: float | None = None) -> IdeaBrief:
    return IdeaBrief(
        id=row["id"],
        intent=row["intent"],
        content=preview(row["content"]),
        session=row["session_id"],
        line=row["source_line"],
        at=row["at"],
        superseded_by=row["superseded_by"],
        answered_at=row["answered_at"],
        completed_at=row["completed_at"],
        similarity=similarity,
    )


async def ideas_by_id(
    db: Database,
    ids: Sequence[int],
    *,
    session: str | None = None,
    intent: str | None = None,
    similarity: Mapping[int, float] | None = None,
) -> list[IdeaBrief]:
    """Briefs of the ideas `ids` that still exist and pass the filters, in the order of `ids`.

    Ids from Chroma are re-checked here: a vector can outlive its row until the outbox drains, and
    its metadata can be stale, so SQLite has the last word on existence, session and intent.
    """
    if not ids:
        return []
    rows = await db.fetchall(
        IDEA_SELECT
        + """
        WHERE i.id IN (SELECT value FROM json_each(?))
          AND (? IS NULL OR i.session_id = ?) AND (? IS NULL OR i.intent = ?)
        """,
        (json.dumps(list(ids)), session, session, intent, intent),
    )
    by_id = {row["id"]: row for row in rows}
    scores = similarity or {}
    return [idea_brief(by_id[i], scores.get(i)) for i in ids if i in by_id]
