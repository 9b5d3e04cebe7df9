"""Folding scored results: a result that stands for another takes the better of their two places.

Three folds run on the scored candidates, before `min_score` and paging:

- **a raw message into the idea extracted from it** (`fold_messages`): the idea says the same thing,
  distilled; it takes the better of the two places, so folding never buries what the message alone
  would have shown;
- **an answered question onto its answer** (`fold_answered`): a question idea that matches the query
  is the query asked again, and what the searcher wants is what it was answered with. The answer
  takes the better of the two places and the question follows right after it. "What setting turns
  on auto-summarization?" matched the user's own "What are the settings I need to enable
  auto-summarization?" best, while the answer — a JSON snippet of `.entire/settings.json` — holds
  few of the query's words. The search brings every answered question's answer in as a candidate
  (`cairn.search.hydrate.answers_of`), so the answer need not match the query itself; where no idea
  was drawn at the answering line, the message there is the answer;
- **repeats into the best-ranked one** (`fold_repeats`): a coding session says the same thing many
  times — the todo list rewritten unchanged, the same file read again, a command run twice with the
  same output, a pasted log pasted again — and each copy matches a query exactly as well as the
  others, so three of them filled a top 10 (m53, m61, m71: one TodoWrite snapshot). Items of one kind
  with the same `content_hash` (a message's role, kind and exact text; an idea's normalised text)
  are one result; the page then counts every copy the search's filters let through
  (`count_repeats`) and says when the last was said.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from cairn.learning.boost import AssociationBoost
from cairn.search.filters import TABLES, Filters
from cairn.search.hydrate import Item
from cairn.search.models import Kind, ScoreParts
from cairn.search.ranking import Signals
from cairn.store.db import Database

KIND_ORDER: dict[Kind, int] = {"idea": 0, "span": 1, "message": 2}


@dataclass
class Ranked:
    """One scored candidate: the item, what drew it, its final score (unclamped) and its parts."""

    item: Item
    signals: Signals
    final: float
    parts: ScoreParts
    lift: AssociationBoost | None = None
    repeats: int = 1
    """How many times its text was said: the candidates folded into it (`fold_repeats`), itself
    included, then, for a returned result, every stored copy in the search's scope (`count_repeats`)."""
    last_said_at: str | None = None
    """When the latest of them was said (None unless `repeats` > 1)."""

    @property
    def score(self) -> float:
        return min(1.0, self.final)


def best_first(ranked: Iterable[Ranked]) -> list[Ranked]:
    """Highest score first; ties go ideas, spans, messages, then the older row (a stable order)."""
    return sorted(ranked, key=lambda r: (-r.final, KIND_ORDER[r.item.kind], r.item.row_id))


def fold_messages(ranked: list[Ranked]) -> list[Ranked]:
    """Best first, a message an idea was extracted from folded into the idea (the best one, when the
    message gave several), which takes the better of the two places."""
    best: dict[tuple[int, int], float] = {}
    lead: dict[tuple[int, int], Ranked] = {}
    for r in ranked:
        key = r.item.source_key
        if key is None or r.item.kind not in ("idea", "message"):
            continue
        best[key] = max(best.get(key, r.final), r.final)
        if r.item.kind == "idea" and (key not in lead or r.final > lead[key].final):
            lead[key] = r
    kept = []
    for r in ranked:
        if r.item.kind == "message" and r.item.source_key in lead:
            continue
        if r.item.kind == "idea" and r.item.source_key and lead[r.item.source_key] is r:
            r.final = best[r.item.source_key]
        kept.append(r)
    return best_first(kept)


def fold_answered(ranked: list[Ranked]) -> list[Ranked]:
    """Best first, each answered question's answer raised to the question's place when that is
    better (`parts.answers` names the question), and the question put right after its answer. The
    answer is the idea that answers it, else the message at the line that answered it (`Item.answer`):
    an indexer that draws no idea from the reply still says where the question was answered."""
    by_key = {(r.item.kind, r.item.row_id): r for r in ranked}
    for r in best_first(ranked):
        key = r.item.answer if r.item.kind == "idea" else None
        answer = by_key.get(key) if key is not None else None
        if answer is None or answer is r:
            continue
        if r.final > answer.final:
            answer.final = r.final
            answer.parts.answers = r.item.id
        r.final = min(r.final, math.nextafter(answer.final, 0.0))
    return best_first(ranked)


def fold_repeats(ranked: list[Ranked]) -> list[Ranked]:
    """Best first, items of one kind with the same text folded into the best-ranked of them, which
    counts them (`repeats`) and keeps when the latest was said (`last_said_at`).

    The copies' scores differ only by recency and usage, so the one kept is usually the latest; it
    keeps its own place: the others add nothing a reader has not seen."""
    lead: dict[tuple[Kind, str], Ranked] = {}
    kept = []
    for r in best_first(ranked):
        key = r.item.repeat_key
        first = lead.get(key) if key is not None else None
        if first is None:
            if key is not None:
                lead[key] = r
            kept.append(r)
            continue
        fold_into(first, r)
    return kept


def fold_into(lead: Ranked, copy: Ranked) -> None:
    """Count `copy`, and the copies it stands for, as `lead` said again."""
    lead.repeats += copy.repeats
    lead.last_said_at = _later(lead.last_said_at or lead.item.said_at, copy.last_said_at or copy.item.said_at)


def _later(a: str | None, b: str | None) -> str | None:
    """The later of two stored times (ISO 8601 UTC, which sorts as text); either may be missing."""
    return max(a, b) if a is not None and b is not None else a or b


async def count_repeats(db: Database, page: list[Ranked], filters: Filters) -> None:
    """Set how often each result of `page` was said and when last, counting every stored copy of its
    text the search's filters let through, not only the candidates: a todo list rewritten unchanged
    ten times matches once among a hundred candidates as well as ten times. One query per kind on
    `content_hash` (indexed), for the page only."""
    for kind in ("idea", "message"):
        hashes = [r.item.row["content_hash"] for r in page if r.item.kind == kind and r.item.repeat_key]
        if not hashes:
            continue
        where, params = filters.sql(kind)
        spec = TABLES[kind]
        rows = await db.fetchall(
            f"SELECT t.content_hash AS hash, count(*) AS n, max({spec.said_at}) AS last "
            f"FROM {spec.table} AS t WHERE t.content_hash IN (SELECT value FROM json_each(?)) AND {where} "
            "GROUP BY t.content_hash",
            (json.dumps(sorted(set(hashes))), *params),
        )
        counted = {row["hash"]: (int(row["n"]), row["last"]) for row in rows}
        for r in page:
            if r.item.kind != kind or r.item.repeat_key is None:
                continue
            n, last = counted.get(r.item.row["content_hash"], (1, None))
            r.repeats = max(r.repeats, n)
            if r.repeats > 1:
                r.last_said_at = _later(r.last_said_at or r.item.said_at, last)
