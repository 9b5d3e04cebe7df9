"""The arithmetic of the evals: precision/recall/F1 for extraction, recall@k, MRR and nDCG for retrieval.

Pure functions with no I/O, so every number a report shows can be checked by hand against a tiny case.

Retrieval comes in two flavours. The boolean API (`recall_at_k`, `reciprocal_rank`, `ndcg_at_k`) takes one
relevant/not-relevant flag per rank, the textbook form. A cairn query is answered by *targets* instead —
gold idea keys and gold transcript lines — and one result may cover several of them (the idea extracted at
a gold line is also the gold idea) while several results may cover the same one (the idea and the message it
came from). The coverage API (`coverage_recall_at_k`, `coverage_gains`, `first_covering_rank`) takes, per
rank, the set of targets that result covers, so a duplicate earns nothing and a result answering two targets
earns both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence, Set

DIGITS = 4


def prf(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    """Precision, recall and F1 (rounded to 4 places) with the counts they come from.

    The empty cases follow what each number promises rather than dividing by zero: predicting nothing makes
    no wrong claim (precision 1.0), and when nothing was expected nothing was missed (recall 1.0). So a case
    with no gold items and no output scores a perfect 1/1/1, while one that expected items and produced none
    gets precision 1.0 but recall 0.0 and therefore F1 0.0 — the F1 still punishes the silence. F1 is 0.0
    when precision + recall is 0 because the harmonic mean of two zeros is undefined and "nothing right" is
    its honest limit.
    """
    if min(tp, fp, fn) < 0:
        raise ValueError(f"counts must not be negative: tp={tp}, fp={fp}, fn={fn}")
    precision = 1.0 if tp + fp == 0 else tp / (tp + fp)
    recall = 1.0 if tp + fn == 0 else tp / (tp + fn)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {
        "precision": round(precision, DIGITS),
        "recall": round(recall, DIGITS),
        "f1": round(f1, DIGITS),
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def mean(values: Iterable[float]) -> float:
    """The arithmetic mean, 0.0 for no values: an eval over an empty set has earned nothing."""
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


# The boolean API: one relevance flag per rank, best first.


def recall_at_k(ranked_relevance: Sequence[bool], n_relevant: int, k: int) -> float:
    """Share of the `n_relevant` relevant items found in the top `k` (capped at 1.0).

    With no relevant items there is nothing to miss, so the recall is 1.0, as in `prf`.
    """
    _check_k(k)
    if n_relevant <= 0:
        return 1.0
    return min(1.0, sum(1 for hit in ranked_relevance[:k] if hit) / n_relevant)


def reciprocal_rank(ranked_relevance: Sequence[bool]) -> float:
    """1 / the 1-based rank of the first relevant result; 0.0 when none is relevant."""
    for rank, hit in enumerate(ranked_relevance, start=1):
        if hit:
            return 1.0 / rank
    return 0.0


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain: the gain at rank r counts 1 / log2(r + 1)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranked_relevance: Sequence[bool] | Sequence[float], n_relevant: int, k: int) -> float:
    """nDCG of the top `k`: their DCG over that of `n_relevant` gains of 1 at the first ranks.

    Flags count as gains 0/1; numbers are graded gains (the coverage API passes how many new targets a
    result covers). Graded gains can beat the ideal built from one target per result — a single result
    covering two targets at rank 1 — which is as good as retrieval gets, so the ratio is capped at 1.0.
    With nothing relevant the score is 1.0 (nothing to rank), matching `recall_at_k`.
    """
    _check_k(k)
    if n_relevant <= 0:
        return 1.0
    ideal = dcg([1.0] * min(n_relevant, k))
    return min(1.0, dcg([float(g) for g in ranked_relevance[:k]]) / ideal)


# The coverage API: per rank, the set of target ids that result covers.


def coverage_gains(covered: Sequence[Set[str]], targets: Set[str]) -> list[int]:
    """Per rank, how many targets that result covers that no better-ranked result covered already."""
    seen: set[str] = set()
    gains = []
    for hits in covered:
        new = (hits & targets) - seen
        seen |= new
        gains.append(len(new))
    return gains


def coverage_recall_at_k(covered: Sequence[Set[str]], targets: Set[str], k: int) -> float:
    """Share of `targets` covered by some result in the top `k`; 1.0 when there are no targets."""
    _check_k(k)
    if not targets:
        return 1.0
    found: set[str] = set().union(*covered[:k]) & targets
    return len(found) / len(targets)


def first_covering_rank(covered: Sequence[Set[str]], targets: Set[str]) -> int | None:
    """The 1-based rank of the first result covering any target, None when none does."""
    for rank, hits in enumerate(covered, start=1):
        if hits & targets:
            return rank
    return None


def coverage_reciprocal_rank(covered: Sequence[Set[str]], targets: Set[str]) -> float:
    """MRR's term for one query: 1 / the rank of the first result covering any target, else 0.0."""
    rank = first_covering_rank(covered, targets)
    return 0.0 if rank is None else 1.0 / rank


def coverage_ndcg_at_k(covered: Sequence[Set[str]], targets: Set[str], k: int) -> float:
    """nDCG of the top `k` with each result's gain the number of targets it newly covers."""
    return ndcg_at_k(coverage_gains(covered[:k], targets), len(targets), k)


def any_covered_at_k(covered: Sequence[Set[str]], targets: Set[str], k: int) -> float:
    """1.0 when some result in the top `k` covers at least one target (recall_any@k), else 0.0.

    With no targets there is nothing to find: 1.0, as `coverage_recall_at_k`.
    """
    _check_k(k)
    if not targets:
        return 1.0
    return 1.0 if any(hits & targets for hits in covered[:k]) else 0.0


def all_covered_at_k(covered: Sequence[Set[str]], targets: Set[str], k: int) -> float:
    """1.0 when the top `k` together cover every target (recall_all@k), else 0.0."""
    return 1.0 if coverage_recall_at_k(covered, targets, k) == 1.0 else 0.0


def percentile(values: Iterable[float], p: float) -> float:
    """The `p`th percentile by the nearest-rank method (an observed value, never interpolated); 0.0 for
    no values. p50 of 1..4 is 2, p95 of 20 values is the 19th smallest."""
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    items = sorted(values)
    if not items:
        return 0.0
    return items[max(0, math.ceil(p / 100 * len(items)) - 1)]
