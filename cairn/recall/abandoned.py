"""Which ideas recall leaves out because the conversation moved past them.

A bug hunt leaves a trail: guesses ("the most likely cause is …"), a plan that changed, and at its end
the cause and the fix that held. Injecting the trail next to its end would hand the agent the very
guesses the conversation abandoned, so recall shows only what still holds. An idea is *abandoned* when

- it was **superseded** (`superseded_by`): a later idea replaced it, as the indexer recorded;
- a later idea **contradicts** it (a `contradicts` relation to it): "that guess was wrong";
- it is a **guess that did not become the conclusion**: a tentative conclusion (confidence at most
  `GUESS_CONFIDENCE`, which the indexer prompt gives "I think", "probably" and every hypothesis)
  followed, in its topic span (its session when it has none), by a firm conclusion, solution or
  decision. The conversation went on to settle the question, and what it settled on is what recall
  shows; a guess nothing settled yet is still the latest word and stays;
- the person **declined** it (`declined_at`, `cairn.lifecycle.correct`): a suggestion turned down
  stays searchable as history, but handing it to the agent as a live decision or fix would undo that.

The first two are what the indexer marks, the last what the person said; the third is recall's own
reading of the marks the indexer leaves (intent, confidence, place), so a chain of guesses never
stored as superseded still stays out. Tentative decisions are not guesses: "maybe we should cache
this" is an open direction, not a wrong explanation.
"""

from __future__ import annotations

from collections.abc import Iterable

from cairn.store.db import Database

# The indexer prompt: 0.9 for a firm, explicit result, 0.6 for a tentative one, 0.3 for speculation.
GUESS_CONFIDENCE = 0.6

# An SQL condition on `ideas i`: true when recall should leave `i` out.
ABANDONED = f"""(
    i.superseded_by IS NOT NULL
    OR i.declined_at IS NOT NULL
    OR EXISTS (SELECT 1 FROM relations r WHERE r.to_idea_id = i.id AND r.relation_type = 'contradicts')
    OR (i.intent = 'conclusion' AND i.confidence <= {GUESS_CONFIDENCE} AND EXISTS (
        SELECT 1 FROM ideas l
        WHERE l.id != i.id AND l.session_id = i.session_id
          AND (i.span_id IS NULL OR l.span_id = i.span_id)
          AND l.intent IN ('conclusion', 'solution', 'decision') AND l.confidence > {GUESS_CONFIDENCE}
          AND l.superseded_by IS NULL
          AND (coalesce(l.said_at, '') > coalesce(i.said_at, '')
               OR (coalesce(l.said_at, '') = coalesce(i.said_at, '')
                   AND coalesce(l.source_line, -1) > coalesce(i.source_line, -1)))))
)"""


async def abandoned(db: Database, ids: Iterable[int]) -> set[int]:
    """Those of `ids` that recall leaves out (see the module docstring)."""
    wanted = sorted(set(ids))
    if not wanted:
        return set()
    marks = ",".join("?" * len(wanted))
    rows = await db.fetchall(f"SELECT i.id FROM ideas i WHERE i.id IN ({marks}) AND {ABANDONED}", wanted)
    return {int(row["id"]) for row in rows}
