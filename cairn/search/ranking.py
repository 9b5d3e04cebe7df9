"""Scoring: weighted reciprocal rank fusion, then importance, recency, usage and intent.

    fusion    = (sum over rankings of weight / (k + rank) + rank bonus) / best possible   in [0, 1]
    match     = max(keyword strength, vector strength)                                   in [0, 1]
    relevance = match x (1 - share + share x fusion)
    score     = relevance x boost(intent or kind) x importance x recency x usage [x superseded penalty]

Rank fusion orders items the way the seed asks (it needs no comparable scores, which bm25 and cosine
are not, and rewards an item both signals found), but alone it is relative: the first hit of a query
that matches nothing well gets the same fusion as a perfect hit. So fusion only scales the absolute
match strength: "the best of nothing" scores low, and callers — and the learning loop, which treats
a low best score as a failed search — can tell. Each other factor is near 1 so none can lift an
irrelevant item far; all weights come from settings and the README gives their defaults and reasons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from cairn.config import Settings
from cairn.search.hydrate import Item
from cairn.search.models import MatchType, ScoreParts


@dataclass
class Signals:
    """Where one item placed in its kind's keyword and vector rankings (1-based), and how strongly."""

    keyword_rank: int | None = None
    keyword: float | None = None
    vector_rank: int | None = None
    vector: float | None = None

    @property
    def match_type(self) -> MatchType:
        if self.keyword_rank is not None and self.vector_rank is not None:
            return "both"
        return "keyword" if self.keyword_rank is not None else "semantic"


def fusion(signals: Signals, settings: Settings, *, keyword_used: bool, vector_used: bool) -> float:
    """Weighted RRF with the top-rank bonus, as a share of the best score the rankings used allow."""
    k = settings.search_rrf_k
    total, best = 0.0, None
    for rank, weight in (
        (signals.keyword_rank, settings.search_keyword_weight),
        (signals.vector_rank, settings.search_vector_weight),
    ):
        if rank is not None:
            total += weight / (k + rank)
            best = rank if best is None else min(best, rank)
    if best == 1:
        total += settings.search_rank1_bonus
    elif best is not None and best <= 3:
        total += settings.search_top3_bonus
    possible = settings.search_rank1_bonus
    if keyword_used:
        possible += settings.search_keyword_weight / (k + 1)
    if vector_used:
        possible += settings.search_vector_weight / (k + 1)
    return min(1.0, total / possible) if possible > 0 else 0.0


def recency(said_at: str | None, settings: Settings, now: datetime) -> float:
    """0.5 ** (age in days / half-life): 1 for now, 0.5 at one half-life, never 0 (no hard cut-off)."""
    if not said_at:
        return 0.5
    try:
        when = datetime.fromisoformat(said_at.replace("Z", "+00:00"))
    except ValueError:
        return 0.5
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    age_days = max(0.0, (now - when).total_seconds() / 86_400)
    return 0.5 ** (age_days / settings.search_half_life_days)


def score(
    item: Item,
    signals: Signals,
    fused: float,
    settings: Settings,
    now: datetime,
) -> tuple[float, ScoreParts]:
    """The item's final score (unclamped, for sorting) and its parts."""
    match = max(signals.keyword or 0.0, signals.vector or 0.0)
    share = settings.search_fusion_share
    relevance = match * (1 - share + share * fused)
    boost = settings.search_boosts.get(item.boost_key, 1.0)
    if item.superseded_by is not None:
        boost *= settings.search_superseded_penalty
    fresh = recency(item.said_at, settings, now)
    factor = 1 + settings.search_recency_weight * (fresh - 0.5)
    if item.importance is not None:
        factor *= 1 + settings.search_importance_weight * (item.importance - 0.5)
    factor *= 1 + settings.search_usage_weight * math.log10(1 + item.usage)
    final = relevance * boost * factor
    parts = ScoreParts(
        bm25=_round(signals.keyword),
        vector=_round(signals.vector),
        fusion=round(fused, 4),
        recency=round(fresh, 4),
        importance=item.importance,
        usage=item.usage,
        boost=round(boost, 4),
    )
    return final, parts


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
