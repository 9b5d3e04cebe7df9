"""Scoring: keyword and vector evidence combined per query, then importance, recency, usage and intent.

    keyword   = tier strength x (1 - bm25_share + bm25_share x bm25 / best bm25 of the kind)   in [0, 1]
    vector    = (cosine - floor) / (top - floor) x calibrate(top)                                  in [0, 1]
    relevance = keyword_share x keyword + (1 - keyword_share) x vector
              (+ context_weight x the best relevance of a neighbouring text message, and answer_weight x
               that of one asking a question just before, for messages: added by
               `cairn.search.hybrid._with_context`, which sees every candidate's place)
    score     = relevance x boost(intent or kind) x importance x recency x usage [x superseded penalty]

Why a convex combination and not rank fusion: rank fusion throws away how strong a match is, so a short
generic message that a vector query happens to rank first ("Cool! What did it look like?") beat the
message holding every word of the query. Here each signal keeps its strength:

- the keyword part is the match tier (phrase > NEAR > all terms > some, an absolute measure) scaled by
  bm25 relative to the best row of the same kind, so among rows of one tier the better bm25 wins;
- the vector part is calibrated *per query*: cosines are spread between the kind's best candidate
  (`top`) and a floor (the `search_vector_floor_rank`-th best, at least `search_vector_floor`; just
  `search_vector_floor` when fewer candidates came back), so
  "closest of this query" means 1 whatever the model's cosine scale for the text; the whole part is
  then scaled by the fixed calibration of the best cosine (`cairn.search.semantic.calibrate`:
  `search_vector_floor` -> 0, `search_vector_ceiling` -> 1), so a query nothing is close to cannot
  score high;
- every candidate gets both parts: a keyword candidate's cosine is read from its stored vector.

With `search_keyword_share` above one half, an item holding the query's words outranks a vector
neighbour that holds none of them, and vectors decide among the keyword matches and bring in what
the words miss. The relevance is absolute enough that the best of a bad lot still scores low, which
the learning loop relies on. Every weight is a setting; the README gives defaults and reasons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from cairn.config import Settings
from cairn.dates import parse_stored
from cairn.search.hydrate import Item
from cairn.search.models import MatchType, ScoreParts
from cairn.search.semantic import calibrate


@dataclass
class Signals:
    """What one item got from the keyword query (tier strength, bm25, rank in its kind) and its cosine
    to the query (None when the item has no vector); `vector_rank` is set when the vector query drew it."""

    keyword_rank: int | None = None
    keyword: float | None = None
    bm25: float | None = None
    vector_rank: int | None = None
    cosine: float | None = None
    passage_id: int | None = None  # a long message found through one of its passages: which one

    @property
    def match_type(self) -> MatchType:
        if self.keyword_rank is not None and self.vector_rank is not None:
            return "both"
        return "keyword" if self.keyword_rank is not None else "semantic"


@dataclass(frozen=True)
class Scale:
    """One query's yardsticks for one kind: its best bm25 and its top and floor cosines."""

    best_bm25: float | None
    top_cosine: float | None
    floor_cosine: float

    @classmethod
    def of(cls, signals: list[Signals], settings: Settings) -> Scale:
        bm25s = [s.bm25 for s in signals if s.bm25 is not None]
        cosines = sorted((s.cosine for s in signals if s.cosine is not None), reverse=True)
        top = cosines[0] if cosines else None
        # Fewer candidates than the floor rank say nothing about this query's spread: the fixed floor.
        rank = settings.search_vector_floor_rank
        floor = cosines[rank - 1] if len(cosines) >= rank else settings.search_vector_floor
        return cls(min(bm25s) if bm25s else None, top, max(settings.search_vector_floor, floor))


def keyword_part(signals: Signals, scale: Scale, settings: Settings) -> float:
    if signals.keyword is None or signals.bm25 is None or not scale.best_bm25:
        return 0.0
    share = settings.search_bm25_share
    return signals.keyword * (1 - share + share * min(1.0, signals.bm25 / scale.best_bm25))


def vector_part(signals: Signals, scale: Scale, settings: Settings) -> float:
    if signals.cosine is None or scale.top_cosine is None or signals.cosine <= scale.floor_cosine:
        return 0.0
    spread = scale.top_cosine - scale.floor_cosine
    relative = 1.0 if spread <= 0 else (signals.cosine - scale.floor_cosine) / spread
    return min(1.0, relative) * calibrate(scale.top_cosine, settings)


def relevance(
    signals: Signals, scale: Scale, settings: Settings, *, keyword_used: bool, vector_used: bool
) -> tuple[float, float]:
    """(relevance, vector part); a mode without one signal gives the other all the weight."""
    keyword = keyword_part(signals, scale, settings) if keyword_used else 0.0
    vector = vector_part(signals, scale, settings) if vector_used else 0.0
    if keyword_used and vector_used:
        share = settings.search_keyword_share
        return share * keyword + (1 - share) * vector, vector
    return (keyword if keyword_used else vector), vector


def recency(said_at: str | None, settings: Settings, now: datetime) -> float:
    """0.5 ** (age in days / half-life): 1 for now, 0.5 at one half-life, never 0 (no hard cut-off)."""
    when = parse_stored(said_at)
    if when is None:
        return 0.5
    age_days = max(0.0, (now - when).total_seconds() / 86_400)
    return 0.5 ** (age_days / settings.search_half_life_days)


def prior(item: Item, boosts: dict[str, float]) -> float:
    """The score factor of what an item is: an idea's intent, a topic span, or a message's origin —
    `tool_result:Read` before `tool_result`, so one tool's output can weigh unlike another's. A
    message stored without an origin (none after migration 14) falls back to its kind's entry."""
    origin = item.origin
    if origin is not None:
        tool = item.row.get("tool")
        if tool and (by_tool := boosts.get(f"{origin}:{tool}")) is not None:
            return by_tool
        if (by_origin := boosts.get(origin)) is not None:
            return by_origin
    return boosts.get(item.boost_key, 1.0)


def score(
    item: Item,
    signals: Signals,
    parts: tuple[float, float],
    settings: Settings,
    now: datetime,
) -> tuple[float, ScoreParts]:
    """The item's final score (unclamped, for sorting) from (relevance, vector part), and its parts."""
    relevant, vector = parts
    boost = prior(item, settings.search_boosts)
    if item.superseded:
        boost *= settings.search_superseded_penalty
    fresh = recency(item.said_at, settings, now)
    factor = 1 + settings.search_recency_weight * (fresh - 0.5)
    if item.importance is not None:
        factor *= 1 + settings.search_importance_weight * (item.importance - 0.5)
    factor *= 1 + settings.search_usage_weight * math.log10(1 + item.usage)
    final = relevant * boost * factor
    score_parts = ScoreParts(
        bm25=_round(signals.keyword),
        vector=_round(vector) if signals.cosine is not None else None,
        fusion=round(relevant, 4),
        recency=round(fresh, 4),
        importance=item.importance,
        usage=item.usage,
        boost=round(boost, 4),
    )
    return final, score_parts


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
