"""What the search feedback loop has done so far, for `cairn learn stats` and the MCP `learner_stats` tool.

Every figure is counted from the stored learning sessions, associations and file requests rather than
kept in memory, so the numbers survive daemon restarts, agree between the CLI and the MCP server, and
cannot double when a transcript is read again.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from cairn.config import Settings
from cairn.store.db import Database

RECENT_ERRORS = 5


class LearnerStats(BaseModel):
    enabled: bool = Field(
        description="Whether learning from searches is switched on (CAIRN_LEARN_FROM_SEARCH)."
    )
    threshold: float = Field(description="A search whose best score is below this opens a session.")
    timeout_seconds: float = Field(description="Transcript seconds after a weak search that reads count.")
    searches_seen: int = Field(description="Calls of a cairn search tool read from transcripts.")
    sessions_started: int = Field(description="Weak searches: best score under the threshold.")
    sessions_resolved: int = Field(description="Weak searches followed by reads, learned from.")
    sessions_timed_out: int = Field(description="Weak searches that ended without a read.")
    active_sessions: int = Field(description="Searches still waiting for their result or their turn's end.")
    files_learned: int = Field(description="Distinct files a learned association points at.")
    associations_created: int = Field(description="Associations learned from searches.")
    associations_from_agent: int = Field(description="Associations the indexing agent proposed.")
    association_repeats: int = Field(description="Times an existing association was learned again.")
    association_hits: int = Field(description="Times an association lifted a returned search result.")
    errors: int = Field(description="Search results that could not be read, and failed file indexing.")
    recent_errors: list[str] = Field(default_factory=list, description="The latest few error messages.")


async def learner_stats(db: Database, settings: Settings) -> LearnerStats:
    """The loop's figures, counted from the store."""
    status = {
        str(row["status"]): int(row["n"])
        for row in await db.fetchall("SELECT status, count(*) AS n FROM learning_sessions GROUP BY status")
    }
    assoc = await db.fetchone(
        """
        SELECT coalesce(sum(source = 'learned'), 0) AS learned,
               coalesce(sum(source = 'agent'), 0) AS agent,
               coalesce(sum(times_learned - 1), 0) AS repeats,
               coalesce(sum(hits), 0) AS hits,
               count(DISTINCT CASE WHEN source = 'learned' THEN file_path END) AS files
        FROM search_associations
        """
    )
    session_errors = await db.fetchall(
        "SELECT error, created_at AS at FROM learning_sessions WHERE error IS NOT NULL "
        "ORDER BY created_at DESC, id DESC LIMIT ?",
        (RECENT_ERRORS,),
    )
    file_errors = await db.fetchall(
        "SELECT path || ': ' || coalesce(outcome, 'failed') AS error, coalesce(done_at, requested_at) AS at "
        "FROM file_requests WHERE status = 'failed' ORDER BY at DESC, id DESC LIMIT ?",
        (RECENT_ERRORS,),
    )
    error_count = int(
        await db.scalar(
            "SELECT (SELECT count(*) FROM learning_sessions WHERE error IS NOT NULL) "
            "+ (SELECT count(*) FROM file_requests WHERE status = 'failed')"
        )
    )
    recent = sorted([*session_errors, *file_errors], key=lambda row: str(row["at"]), reverse=True)
    started = sum(n for s, n in status.items() if s not in ("pending", "dismissed"))
    return LearnerStats(
        enabled=settings.learn_from_search,
        threshold=settings.learn_threshold,
        timeout_seconds=settings.learn_timeout,
        searches_seen=sum(status.values()),
        sessions_started=started,
        sessions_resolved=status.get("resolved", 0),
        sessions_timed_out=status.get("timed_out", 0),
        active_sessions=status.get("pending", 0) + status.get("active", 0),
        files_learned=int(assoc["files"]) if assoc else 0,
        associations_created=int(assoc["learned"]) if assoc else 0,
        associations_from_agent=int(assoc["agent"]) if assoc else 0,
        association_repeats=int(assoc["repeats"]) if assoc else 0,
        association_hits=int(assoc["hits"]) if assoc else 0,
        errors=error_count,
        recent_errors=[str(row["error"]) for row in recent[:RECENT_ERRORS]],
    )
