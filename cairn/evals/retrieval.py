"""The retrieval eval: run every dataset query through each search mode and score the rankings.

A query is answered by *targets*: its gold idea keys (`idea:i3`) and its gold transcript lines (`line:14`).
A result covers `idea:<key>` when it is a stored idea the indexing eval matched to that gold idea, and
`line:<n>` when it comes from the query's case and sits at that line — a message whose lines include it, an
idea said there, or a topic span whose range includes it. Scores then come from `cairn.evals.metrics`'
coverage API: recall@1/5/10 (share of targets covered), MRR (first covering result) and nDCG@10 (gain =
targets newly covered), averaged over the queries.

Usage is never recorded: an eval that reinforced what it found would change the ranking it measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from cairn.evals.extents import Extent, ResultExtents
from cairn.evals.metrics import (
    coverage_ndcg_at_k,
    coverage_recall_at_k,
    coverage_reciprocal_rank,
    first_covering_rank,
    mean,
)
from cairn.search.hybrid import search
from cairn.search.models import MAX_LIMIT, Mode, SearchRequest, SearchResult, parse_item_id

if TYPE_CHECKING:
    from cairn.store.store import Store

__all__ = ["DEFAULT_MODES", "Extent", "covered_targets", "evaluate_retrieval", "targets_of"]

DEFAULT_MODES: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
RECALL_CUTOFFS = (1, 5, 10)
NDCG_CUTOFF = 10
DIGITS = 4


class QueryLike(Protocol):
    """What the eval reads from a dataset query (`cairn.evals.dataset.Query` has these fields)."""

    @property
    def id(self) -> str: ...
    @property
    def query(self) -> str: ...
    @property
    def case(self) -> str: ...
    @property
    def ideas(self) -> Sequence[str]: ...
    @property
    def lines(self) -> Sequence[int]: ...


class DatasetLike(Protocol):
    @property
    def queries(self) -> Sequence[QueryLike]: ...


def targets_of(query: QueryLike) -> set[str]:
    """The target ids a query's answers are counted against: `idea:<key>` and `line:<n>`."""
    return {f"idea:{key}" for key in query.ideas} | {f"line:{int(line)}" for line in query.lines}


def covered_targets(
    result: SearchResult,
    extent: Extent,
    query: QueryLike,
    idea_map: Mapping[int, tuple[str, str]],
    case_of_file: Mapping[str, str],
) -> set[str]:
    """The targets of `query` one result covers (see the module docstring for the rules)."""
    hits: set[str] = set()
    if result.kind == "idea":
        matched = idea_map.get(parse_item_id(result.id)[1])
        if matched is not None and matched[0] == query.case and matched[1] in query.ideas:
            hits.add(f"idea:{matched[1]}")
    if extent.file is not None and case_of_file.get(extent.file) == query.case:
        hits |= {f"line:{int(line)}" for line in query.lines if extent.covers(int(line))}
    return hits


async def evaluate_retrieval(
    store: Store,
    dataset: DatasetLike,
    idea_map: Mapping[int, tuple[str, str]],
    case_of_file: Mapping[str, str],
    modes: Sequence[str] = DEFAULT_MODES,
    *,
    k: int = 10,
    min_score: float | None = 0.0,
) -> dict[str, dict[str, Any]]:
    """Score every query of `dataset` in each search mode; returns `{mode: metrics}`.

    `idea_map` maps a stored idea id to the `(case, gold key)` the indexing eval matched it to;
    `case_of_file` maps a transcript path, as the store records it, to its case. Each search asks for the
    top `k` of all kinds with `min_score` (0.0 by default, so the threshold tuned for users does not hide
    what ranks low but is still ranked). The @10 metrics see only `k` results when `k` is below 10.

    Each mode's dict holds `queries` (how many were scored), `recall@1`, `recall@5`, `recall@10`, `mrr`,
    `ndcg@10` (means, 4 places), `per_query` rows (`id`, `query`, `case`, `recall@10`,
    `first_relevant_rank`, `missed` targets) for reading a regression, and `skipped`: ids of queries with no
    gold idea or line, which no ranking can answer.
    """
    if not 1 <= k <= MAX_LIMIT:
        raise ValueError(f"k must be between 1 and {MAX_LIMIT}, got {k}")
    unknown = [m for m in modes if m not in DEFAULT_MODES]
    if unknown:
        raise ValueError(f"unknown search mode(s) {', '.join(unknown)}: use {', '.join(DEFAULT_MODES)}")
    extents = ResultExtents(store.db)
    queries = list(dataset.queries)
    skipped = [q.id for q in queries if not targets_of(q)]
    scored = [q for q in queries if targets_of(q)]
    report: dict[str, dict[str, Any]] = {}
    for mode in modes:
        per_metric: dict[str, list[float]] = {name: [] for name in _metric_names()}
        rows: list[dict[str, Any]] = []
        for query in scored:
            request = SearchRequest(
                query=query.query, mode=cast(Mode, mode), kind="all", limit=k, min_score=min_score
            )
            page = await search(store.db, store.vectors, store.settings, request, record_usage=False)
            results = page.results[:k]
            located = await extents.of(results)
            covered = [
                covered_targets(r, e, query, idea_map, case_of_file)
                for r, e in zip(results, located, strict=True)
            ]
            targets = targets_of(query)
            for cutoff in RECALL_CUTOFFS:
                per_metric[f"recall@{cutoff}"].append(coverage_recall_at_k(covered, targets, cutoff))
            per_metric["mrr"].append(coverage_reciprocal_rank(covered, targets))
            per_metric[f"ndcg@{NDCG_CUTOFF}"].append(coverage_ndcg_at_k(covered, targets, NDCG_CUTOFF))
            found = set().union(*covered[:NDCG_CUTOFF])
            rows.append(
                {
                    "id": query.id,
                    "query": query.query,
                    "case": query.case,
                    "recall@10": round(coverage_recall_at_k(covered, targets, 10), DIGITS),
                    "first_relevant_rank": first_covering_rank(covered, targets),
                    "missed": sorted(targets - found),
                }
            )
        report[mode] = {
            "queries": len(scored),
            **{name: round(mean(values), DIGITS) for name, values in per_metric.items()},
            "per_query": rows,
            "skipped": skipped,
        }
    return report


def _metric_names() -> list[str]:
    return [*(f"recall@{c}" for c in RECALL_CUTOFFS), "mrr", f"ndcg@{NDCG_CUTOFF}"]
