"""Semantic search: Chroma's nearest neighbours per kind, with cosine calibrated to a 0-1 match strength.

MiniLM-sized models put unrelated sentences at a cosine of about 0 to 0.15 and close paraphrases at 0.5
to 0.75, so raw cosine makes a good match look mediocre next to a keyword match's strength. The
calibration maps `search_vector_floor` (noise) to 0 and `search_vector_ceiling` (a paraphrase) to 1;
hits at or below the floor are dropped rather than ranked.

Filters: Chroma applies a metadata `where` by checking every item it allows, which at 100K items costs
hundreds of milliseconds when the filter allows most of them (the default "not superseded" does). So
the query first runs unfiltered for `OVERFETCH` times the candidates and checks the filters here; only
when a narrow filter (one session, a small project) leaves too few does it ask Chroma to filter — and
a narrow filter is exactly what Chroma checks fast. The check reads the fields the metadata holds from
SQLite (`vector_facts`: one indexed statement), not from Chroma: Chroma's metadata costs ~0.1 ms a hit
(300 hits: more than the nearest-neighbour search itself), and SQLite is where it was copied from.

Messages are also found by their passages' vectors (the `passages` collection: the parts of long prose
messages beyond the first ~200 word pieces, which the message's own vector never reads): one more
query, each passage hit counted for its message, which keeps its best cosine and, when a passage gave
it, that passage's id (`VectorMatch.passage_id`). The collection is a small share of the messages', so
a session or project filter goes into that query directly.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cairn.config import Settings
from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind
from cairn.search.vector_facts import passage_facts, row_facts

if TYPE_CHECKING:
    import numpy as np

    from cairn.store.db import Database
    from cairn.store.vectors import VectorHit, VectorIndex


OVERFETCH = 3


PASSAGES = "passages"
#: Passage candidates per message candidate. Each hit's metadata (its message) costs Chroma ~0.05 ms;
#: the collection holds a few percent as many vectors as the messages' (only prose beyond a message's
#: first passage), so a quarter as many candidates is still a wider net.
PASSAGE_SHARE = 0.25


@dataclass(frozen=True)
class VectorMatch:
    row_id: int
    cosine: float
    strength: float
    passage_id: int | None = None
    """For a message matched through one of its passages: that passage (`message_passages.id`)."""


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
    import numpy as np

    ids = list(stored)
    return cosines_of(query, ids, np.asarray([stored[i] for i in ids], dtype=np.float64))


def cosines_of(query: list[float], ids: list[str], matrix: np.ndarray) -> dict[str, float]:
    """`cosines` of the vectors in the rows of `matrix`, by the id of each row."""
    if not ids:
        return {}
    import numpy as np  # at first use: a search without vectors (`cairn search`, no daemon) needs none

    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
    norms[norms == 0] = 1.0
    return dict(zip(ids, (matrix @ q / norms).tolist(), strict=True))


async def vector_matches(
    db: Database,
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
        hits = await asyncio.to_thread(vectors.query, collection, None, wide, embedding=embedding)
        kept = await _accepted(db, kind, hits, filters)
        if len(kept) >= n or len(hits) < wide:
            hits = kept[:n]
        else:
            hits = await asyncio.to_thread(vectors.query, collection, None, n, where, embedding=embedding)
    matches = []
    for hit in hits:
        if hit.id.isdigit() and hit.score > settings.search_vector_floor:
            matches.append(VectorMatch(int(hit.id), hit.score, calibrate(hit.score, settings)))
    if kind == "message":
        matches = _best_per_message(
            matches + await _passage_matches(db, vectors, embedding, filters, n, settings)
        )
    return matches[:n]


async def _accepted(db: Database, kind: Kind, hits: list[VectorHit], filters: Filters) -> list[VectorHit]:
    """The hits whose row passes what `filters.where(kind)` would ask Chroma, judged on the same
    fields read from SQLite. A hit without a row (a vector its deleted row left behind) is kept,
    as Chroma's own metadata would have kept it: loading the candidates drops it."""
    ids = [int(hit.id) for hit in hits if hit.id.isdigit()]
    facts = await row_facts(db, kind, ids, project=bool(filters.project_paths))
    return [
        hit
        for hit in hits
        if not hit.id.isdigit() or int(hit.id) not in facts or filters.accepts(kind, facts[int(hit.id)])
    ]


async def _passage_matches(
    db: Database,
    vectors: VectorIndex,
    embedding: list[float],
    filters: Filters,
    n: int,
    settings: Settings,
) -> list[VectorMatch]:
    """Messages whose passages are close to the query, one match per passage, in one Chroma query;
    each passage's message and the fields the filters check come from SQLite (`passage_facts`)."""
    wanted = max(1, round(n * PASSAGE_SHARE))
    if filters.session is not None or filters.project_paths:
        where = filters.where("message")
        hits = await asyncio.to_thread(
            vectors.query, PASSAGES, None, wanted, where, embedding=embedding, metadata=True
        )
    else:
        hits = await asyncio.to_thread(vectors.query, PASSAGES, None, wanted, embedding=embedding)
        ids = [int(hit.id) for hit in hits if hit.id.isdigit()]
        facts = await passage_facts(db, ids, project=bool(filters.project_paths))
        hits = [
            replace(hit, metadata=facts[int(hit.id)])
            for hit in hits
            if hit.id.isdigit() and int(hit.id) in facts and filters.accepts("message", facts[int(hit.id)])
        ]
    matches = []
    for hit in hits:
        message = hit.metadata.get("message_id")
        if hit.id.isdigit() and isinstance(message, int) and hit.score > settings.search_vector_floor:
            matches.append(VectorMatch(message, hit.score, calibrate(hit.score, settings), int(hit.id)))
    return matches


def _best_per_message(matches: list[VectorMatch]) -> list[VectorMatch]:
    """Each message's closest match (its own vector or a passage's), closest first."""
    best: dict[int, VectorMatch] = {}
    for match in matches:
        kept = best.get(match.row_id)
        if kept is None or match.cosine > kept.cosine:
            best[match.row_id] = match
    return sorted(best.values(), key=lambda match: (-match.cosine, match.row_id))
