"""Semantic search: Chroma's nearest neighbours per kind, with cosine calibrated to a 0-1 match strength.

MiniLM-sized models put unrelated sentences at a cosine of about 0 to 0.15 and close paraphrases at 0.5
to 0.75, so raw cosine makes a good match look mediocre next to a keyword match's strength. The
calibration maps `search_vector_floor` (noise) to 0 and `search_vector_ceiling` (a paraphrase) to 1;
hits at or below the floor are dropped rather than ranked.

Filters: Chroma applies a metadata `where` by checking every item it allows, which at 100K items costs
hundreds of milliseconds when the filter allows most of them (the default "not superseded" does). So
the query first runs unfiltered for `OVERFETCH` times the candidates and checks the metadata here; only
when a narrow filter (one session, a small project) leaves too few does it ask Chroma to filter — and
a narrow filter is exactly what Chroma checks fast.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cairn.config import Settings
from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind

if TYPE_CHECKING:
    from cairn.store.vectors import VectorIndex


OVERFETCH = 3


@dataclass(frozen=True)
class VectorMatch:
    row_id: int
    cosine: float
    strength: float


def calibrate(cosine: float, settings: Settings) -> float:
    floor, ceiling = settings.search_vector_floor, settings.search_vector_ceiling
    if ceiling <= floor:
        return 1.0 if cosine > floor else 0.0
    return min(1.0, max(0.0, (cosine - floor) / (ceiling - floor)))


def cosines(query: list[float], stored: dict[str, list[float]]) -> dict[str, float]:
    """Cosine similarity of `query` to each stored vector (by id): how items a nearest-neighbour query
    did not return are scored the same way as those it did."""
    if not stored:
        return {}
    ids = list(stored)
    matrix = np.asarray([stored[i] for i in ids], dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
    norms[norms == 0] = 1.0
    return dict(zip(ids, (matrix @ q / norms).tolist(), strict=True))


async def vector_matches(
    vectors: VectorIndex,
    kind: Kind,
    embedding: list[float],
    filters: Filters,
    n: int,
    settings: Settings,
) -> list[VectorMatch]:
    """The closest `n` items of `kind` above the noise floor that pass `filters`, closest first."""
    collection, where = TABLES[kind].vectors, filters.where(kind)
    if where is None:
        hits = await asyncio.to_thread(vectors.query, collection, None, n, embedding=embedding)
    else:
        wide = n * OVERFETCH
        hits = await asyncio.to_thread(
            vectors.query, collection, None, wide, embedding=embedding, metadata=True
        )
        kept = [hit for hit in hits if filters.accepts(kind, hit.metadata)]
        if len(kept) >= n or len(hits) < wide:
            hits = kept[:n]
        else:
            hits = await asyncio.to_thread(vectors.query, collection, None, n, where, embedding=embedding)
    matches = []
    for hit in hits:
        if hit.id.isdigit() and hit.score > settings.search_vector_floor:
            matches.append(VectorMatch(int(hit.id), hit.score, calibrate(hit.score, settings)))
    return matches
