"""The idea tools: hybrid idea search, open questions and todos, recent ideas, an idea's relations.

The open tools list what nothing resolved yet — not answered, completed, declined, superseded or
contradicted (`cairn.store.open_ideas.UNRESOLVED_QUESTION`): every item a new batch may still resolve,
including those the definition of open takes as settled by a later prompt."""

from __future__ import annotations

import sqlite3

from pydantic_ai import RunContext

from cairn.store.open_ideas import UNRESOLVED_QUESTION, UNRESOLVED_TODO
from cairn.store.vocab import Intent
from cairn.tools.budget import metered
from cairn.tools.common import IDEA_SELECT, MAX_ID, clamp, idea_brief, ideas_by_id, missing_session
from cairn.tools.deps import ToolDeps
from cairn.tools.matching import MIN_SIMILARITY, fts_match, fuse, semantic, similar_ids, where
from cairn.tools.results import IdeaBrief, IdeaList, IdeaRelations, Notice, RelatedIdea

# Relations shown per direction; more are cut (an idea with dozens of relations is a hub, not a chain).
MAX_RELATIONS = 25

_FTS_IDEAS = """
    SELECT i.id FROM ideas_fts JOIN ideas i ON i.id = ideas_fts.rowid
    WHERE ideas_fts MATCH ? AND (? IS NULL OR i.session_id = ?) AND (? IS NULL OR i.intent = ?)
    ORDER BY bm25(ideas_fts) LIMIT ?
"""


@metered
async def search_ideas(
    ctx: RunContext[ToolDeps],
    query: str,
    limit: int = 10,
    session: str | None = None,
    intent: Intent | None = None,
) -> IdeaList | Notice:
    """Search the ideas already in memory, by words and by meaning, in all sessions unless narrowed.

    Use it before writing an idea, to find duplicates (do not write those again), ideas the new one
    builds on, contradicts or supersedes, and questions it answers. Returns the best matches first:
    id, intent, a content preview, session, source line, when it was said, `similarity` (0-1) for
    semantic matches, and `superseded_by` when a later idea replaced it.

    Args:
        query: What to look for, in plain words (a sentence or a few keywords).
        limit: How many ideas to return, 1-25.
        session: Only ideas of this session id.
        intent: Only ideas of this intent.
    """
    deps = ctx.deps
    if not query.strip():
        return Notice(notice="empty query: say what to look for")
    if session is not None and (notice := await missing_session(deps.db, session)):
        return notice
    n = clamp(limit, 10)
    rankings: list[list[int]] = []
    match = fts_match(query)
    if match is not None:
        rows = await deps.db.fetchall(_FTS_IDEAS, (match, session, session, intent, intent, 2 * n))
        rankings.append([row["id"] for row in rows])
    hits = await semantic(deps, "ideas", query, 2 * n, where(session_id=session, intent=intent))
    similar = similar_ids(hits, MIN_SIMILARITY)
    rankings.append(list(similar))
    ideas = await ideas_by_id(deps.db, fuse(rankings), session=session, intent=intent, similarity=similar)
    return IdeaList(ideas=ideas[:n])


@metered
async def get_open_questions(ctx: RunContext[ToolDeps], session: str, limit: int = 10) -> IdeaList | Notice:
    """List a session's unanswered questions and open problems, newest first.

    Use it to check whether the new messages answer one: report that in `answered_questions` with
    the question's id.

    Args:
        session: The session id, as the batch gives it.
        limit: How many to return, 1-25.
    """
    return await _session_ideas(
        ctx.deps,
        session,
        UNRESOLVED_QUESTION,
        clamp(limit, 10),
    )


@metered
async def get_open_todos(ctx: RunContext[ToolDeps], session: str, limit: int = 10) -> IdeaList | Notice:
    """List a session's todos not yet completed, newest first.

    Use it to check whether the new messages complete one: report that in `completed_todos` with
    the todo's id.

    Args:
        session: The session id, as the batch gives it.
        limit: How many to return, 1-25.
    """
    return await _session_ideas(
        ctx.deps,
        session,
        UNRESOLVED_TODO,
        clamp(limit, 10),
    )


@metered
async def get_recent_ideas(
    ctx: RunContext[ToolDeps], session: str, limit: int = 20, intent: Intent | None = None
) -> IdeaList | Notice:
    """List the ideas most recently stored for a session, newest first.

    Use it to pick up the context of a session before reading its new messages (what was decided,
    asked, planned), and to avoid writing the same idea twice.

    Args:
        session: The session id, as the batch gives it.
        limit: How many to return, 1-25.
        intent: Only ideas of this intent.
    """
    deps = ctx.deps
    if intent is None:
        return await _session_ideas(deps, session, "1", clamp(limit, 20))
    return await _session_ideas(deps, session, "i.intent = ?", clamp(limit, 20), intent)


@metered
async def get_idea_relations(ctx: RunContext[ToolDeps], idea_id: int) -> IdeaRelations | Notice:
    """Show an idea and how it is related to other ideas, in both directions.

    `outgoing` lists "this idea --relation--> other" (what it supersedes, builds on, answers, ...),
    `incoming` lists "other --relation--> this idea" (what superseded it, builds on it, ...), each
    with the other idea's preview. Use it to follow a chain of decisions before superseding one.

    Args:
        idea_id: The id of an existing idea.
    """
    db = ctx.deps.db
    row = await db.fetchone(IDEA_SELECT + " WHERE i.id = ?", (idea_id,)) if 0 < idea_id <= MAX_ID else None
    if row is None:
        return Notice(notice=f"no idea with id {idea_id}")
    outgoing = await db.fetchall(
        "SELECT relation_type, to_idea_id AS other FROM relations WHERE from_idea_id = ? ORDER BY id LIMIT ?",
        (idea_id, MAX_RELATIONS),
    )
    incoming = await db.fetchall(
        "SELECT relation_type, from_idea_id AS other FROM relations WHERE to_idea_id = ? ORDER BY id LIMIT ?",
        (idea_id, MAX_RELATIONS),
    )
    others = {
        brief.id: brief for brief in await ideas_by_id(db, [r["other"] for r in [*outgoing, *incoming]])
    }
    return IdeaRelations(
        idea=idea_brief(row),
        outgoing=_related(outgoing, others),
        incoming=_related(incoming, others),
    )


def _related(rows: list[sqlite3.Row], others: dict[int, IdeaBrief]) -> list[RelatedIdea]:
    return [
        RelatedIdea(relation=r["relation_type"], idea=others[r["other"]])
        for r in rows
        if r["other"] in others
    ]


async def _session_ideas(
    deps: ToolDeps, session: str, condition: str, limit: int, *params: object
) -> IdeaList | Notice:
    """A session's ideas meeting `condition` (SQL over alias `i`), newest first."""
    if notice := await missing_session(deps.db, session):
        return notice
    rows = await deps.db.fetchall(
        IDEA_SELECT + f" WHERE i.session_id = ? AND ({condition}) ORDER BY i.id DESC LIMIT ?",
        (session, *params, limit),
    )
    return IdeaList(ideas=[idea_brief(row) for row in rows])
