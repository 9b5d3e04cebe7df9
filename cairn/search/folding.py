"""Folding scored results: a result that stands for another takes the better of their two places.

Two folds run on the scored candidates, before `min_score` and paging:

- **a raw message into the idea extracted from it** (`fold_messages`): the idea says the same thing,
  distilled; it takes the better of the two places, so folding never buries what the message alone
  would have shown;
- **an answered question onto its answer** (`fold_answered`): a question idea that matches the query
  is the query asked again, and what the searcher wants is what it was answered with. The answer
  takes the better of the two places and the question follows right after it. "What setting turns
  on auto-summarization?" matched the user's own "What are the settings I need to enable
  auto-summarization?" best, while the answer — a JSON snippet of `.entire/settings.json` — holds
  few of the query's words. The search brings every answered question's answer in as a candidate
  (`cairn.search.hydrate.answers_of`), so the answer need not match the query itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from cairn.learning.boost import AssociationBoost
from cairn.search.hydrate import Item
from cairn.search.models import Kind, ScoreParts
from cairn.search.ranking import Signals

KIND_ORDER: dict[Kind, int] = {"idea": 0, "span": 1, "message": 2}


@dataclass
class Ranked:
    """One scored candidate: the item, what drew it, its final score (unclamped) and its parts."""

    item: Item
    signals: Signals
    final: float
    parts: ScoreParts
    lift: AssociationBoost | None = None

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
    better (`parts.answers` names the question), and the question put right after its answer."""
    ideas = {r.item.row_id: r for r in ranked if r.item.kind == "idea"}
    for r in best_first(ranked):
        answered_by = r.item.answered_by if r.item.kind == "idea" else None
        answer = ideas.get(answered_by) if answered_by is not None else None
        if answer is None or answer is r:
            continue
        if r.final > answer.final:
            answer.final = r.final
            answer.parts.answers = r.item.id
        r.final = min(r.final, math.nextafter(answer.final, 0.0))
    return best_first(ranked)
