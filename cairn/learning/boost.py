"""How learned search associations take part in ranking: which apply to a search, how much, what they lift.

An association says "after a search for *query* came back weak, the agent found what it wanted in
*file*". A later search close to that query should therefore find the file. Three things decide how
strongly an association applies to a search (its `weight`, in [0, `learn_boost`]):

- **closeness** of the search text to the association's query: 1 for the same query (case and spacing
  folded, the `query_key` the learner stores), else the cosine of their embeddings rising linearly from 0
  at `learn_min_similarity` to 1 at `learn_full_similarity`. A ramp rather than a step, so a query just
  over the minimum barely moves anything and no cliff decides a ranking. Measured with the packaged
  MiniLM: "login button" vs "login button component" 0.82 and "user creation" vs "user creation
  endpoint" 0.79 (close to full), "sign in button" vs "login button component" 0.68 (a little), while
  "user deletion endpoint" vs "user creation endpoint" 0.64 and "logout button" vs "login button
  component" 0.53 — near misses that name another thing — stay under the minimum, and unrelated pairs
  sit between -0.05 and 0.25;
- **decay**: 0.5 ** (age / `learn_half_life_days`), the age counted from the later of when it was last
  learned and when it last lifted a result, so an association that keeps helping stays strong and one
  nobody needs fades without a hard cut-off;
- **`learn_boost`**: how far a fresh, exact association may lift a result toward 1.

The searches apply the weight (`score + (1 - score) x weight` for a file's chunks in `search_content`,
relevance x (1 + weight) for ideas linked to the file in `search`) and, when the results reach a caller,
`reinforce` the associations that lifted something on the page.

Only embeddings already computed by the search are used (no second embedding per search), and a store
without associations pays one indexed SQL lookup.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cairn.config import Settings
from cairn.dates import parse_stored
from cairn.store.db import Database
from cairn.store.usage import record_use

if TYPE_CHECKING:
    from cairn.store.vectors import VectorIndex

log = logging.getLogger(__name__)

#: Nearest association vectors asked of Chroma per search. Associations close enough to apply are few
#: (a handful of phrasings per file); more only costs time.
ASSOCIATION_CANDIDATES = 20
VECTOR_KIND = "associations"


def query_key(query: str) -> str:
    """What makes two queries the same association: case and runs of whitespace do not count. Defined
    here, beside the look-up that uses it on every search, so a search does not load the module that
    records associations (`cairn.learning.associations`: file policy, redaction)."""
    return " ".join(query.lower().split())


@dataclass(frozen=True)
class AssociationBoost:
    """One association that applies to a search, and how strongly (`weight`)."""

    association_id: int
    project_id: int | None
    file_path: str
    rel_path: str | None
    query: str
    closeness: float
    weight: float


def closeness(cosine: float, settings: Settings) -> float:
    """How close a query is to an association's query, from their cosine: 0 at or under the minimum
    similarity, rising linearly to 1 at `learn_full_similarity`."""
    low, full = settings.learn_min_similarity, settings.learn_full_similarity
    if cosine <= low:
        return 0.0
    if full <= low:
        return 1.0
    return min(1.0, (cosine - low) / (full - low))


def decay(learned_at: str | None, last_used_at: str | None, settings: Settings, now: datetime) -> float:
    """0.5 ** (days since the association was last learned or used / half-life); 1 when unknown."""
    times = [t for t in (parse_stored(learned_at), parse_stored(last_used_at)) if t is not None]
    if not times:
        return 1.0
    age_days = max(0.0, (now - max(times)).total_seconds() / 86_400)
    return float(0.5 ** (age_days / settings.learn_half_life_days))


async def associations_for(
    db: Database,
    vectors: VectorIndex | None,
    settings: Settings,
    *,
    text: str,
    embedding: list[float] | None,
    project_ids: Sequence[int] | None,
    now: datetime | None = None,
) -> list[AssociationBoost]:
    """The associations that apply to a search for `text`, strongest first.

    `embedding` is the search's own embedding of `text` (None when the search has none: only the
    same query then applies). `project_ids` narrows to associations of those projects (None: all).
    A vector index that fails is logged and leaves the exact matches: a boost is a refinement, never
    a reason for a search to fail.
    """
    if settings.learn_boost <= 0 or not text.strip():
        return []
    scope, scope_params = _project_scope(project_ids)
    if not await db.scalar(f"SELECT EXISTS (SELECT 1 FROM search_associations WHERE {scope})", scope_params):
        return []
    close: dict[int, float] = {}
    if embedding is not None and vectors is not None:
        try:
            close = await _nearest(vectors, settings, embedding, project_ids)
        except Exception as exc:
            log.warning("association lookup by meaning failed; only the same query applies: %s", exc)
    keys = [query_key(text)]
    rows = await db.fetchall(
        f"""
        SELECT id, project_id, file_path, rel_path, query, query_key, learned_at, last_used_at
        FROM search_associations
        WHERE (query_key IN (SELECT value FROM json_each(?)) OR id IN (SELECT value FROM json_each(?)))
          AND {scope}
        """,
        (json.dumps(keys), json.dumps(sorted(close)), *scope_params),
    )
    moment = now or datetime.now(UTC)
    boosts = []
    for row in rows:
        near = 1.0 if row["query_key"] in keys else close.get(int(row["id"]), 0.0)
        weight = settings.learn_boost * near * decay(row["learned_at"], row["last_used_at"], settings, moment)
        if weight > 0:
            boosts.append(
                AssociationBoost(
                    association_id=int(row["id"]),
                    project_id=row["project_id"],
                    file_path=str(row["file_path"]),
                    rel_path=row["rel_path"],
                    query=str(row["query"]),
                    closeness=near,
                    weight=weight,
                )
            )
    boosts.sort(key=lambda b: (-b.weight, b.association_id))
    return boosts


def _project_scope(project_ids: Sequence[int] | None) -> tuple[str, tuple[Any, ...]]:
    if project_ids is None:
        return "1", ()
    return "project_id IN (SELECT value FROM json_each(?))", (json.dumps(list(project_ids)),)


async def _nearest(
    vectors: VectorIndex, settings: Settings, embedding: list[float], project_ids: Sequence[int] | None
) -> dict[int, float]:
    """Association id -> closeness, for the nearest association queries that are close enough."""
    where = None if project_ids is None else {"project_id": {"$in": list(project_ids)}}
    hits = await asyncio.to_thread(
        vectors.query, VECTOR_KIND, None, ASSOCIATION_CANDIDATES, where, embedding=embedding
    )
    found: dict[int, float] = {}
    for hit in hits:
        near = closeness(hit.score, settings)
        if hit.id.isdigit() and near > 0:
            found[int(hit.id)] = near
    return found


async def boosted_documents(db: Database, boosts: Sequence[AssociationBoost]) -> dict[int, AssociationBoost]:
    """Indexed file documents the boosts point at (document id -> its strongest boost).

    An association names its file by project and relative path; one without them (written before
    associations had a project) by its absolute path, compared with the document's project path.
    """
    if not boosts:
        return {}
    rows = await db.fetchall(
        """
        WITH b AS MATERIALIZED (
            SELECT key AS i, json_extract(value, '$[0]') AS project_id,
                   json_extract(value, '$[1]') AS rel_path, json_extract(value, '$[2]') AS file_path
            FROM json_each(?)
        )
        SELECT d.id AS document, b.i AS i
        FROM b JOIN file_documents AS d ON d.project_id = b.project_id AND d.rel_path = b.rel_path
        UNION
        SELECT d.id AS document, b.i AS i
        FROM b JOIN projects AS p ON substr(b.file_path, 1, length(p.path) + 1) = p.path || '/'
        JOIN file_documents AS d
          ON d.project_id = p.id AND d.rel_path = substr(b.file_path, length(p.path) + 2)
        """,
        (json.dumps([[b.project_id, b.rel_path, b.file_path] for b in boosts]),),
    )
    return _strongest(rows, "document", boosts)


async def boosted_ideas(db: Database, boosts: Sequence[AssociationBoost]) -> dict[int, AssociationBoost]:
    """Ideas linked to an entity naming a boosted file (idea id -> its strongest boost).

    The indexing agent names file entities "as written in the project", so an entity (or one of its
    aliases) names the file when it equals the absolute path or the relative path, ends with "/" + the
    relative path (a path written from a parent directory or another checkout), or is a trailing part
    of the relative path with a directory in it (`auth/LoginButton.tsx`, the offline indexer's
    two-component names). A bare file name does not count: `index.ts` or `README.md` would tie
    unrelated files together. Only ideas of the association's project count: another project's
    `src/app.ts` is another file.

    Every name but another checkout's is a tail of the absolute path, so those are looked up by name
    (`_names_of`) in the name and alias indexes, for any entity. A name ending with "/" + the relative
    path that the absolute path does not (`/other/checkout/src/app.ts`) cannot be looked up: it is
    looked for among file entities and their aliases only, whose names are paths, so the cost of a
    search does not follow the number of concepts, people and technologies in the store.
    """
    if not boosts:
        return {}
    # Entities naming a boosted file first (indexed lookups of its names, and one pass over the file
    # entities for another checkout's path), then their ideas through the idea_entities index (CROSS
    # JOIN keeps SQLite from scanning that table instead): the cost follows the entities, not the ideas.
    # Entity names compare as written (the name index folds case, so it finds and `=` confirms); an
    # alias equal to a path compares without case (the alias column's collation), a longer tail as written.
    rows = await db.fetchall(
        """
        WITH b AS MATERIALIZED (
            SELECT key AS i, json_extract(value, '$[0]') AS rel_path,
                   json_extract(value, '$[1]') AS project_id
            FROM json_each(?)
        ),
        name AS MATERIALIZED (
            SELECT json_extract(value, '$[0]') AS i, json_extract(value, '$[1]') AS name,
                   json_extract(value, '$[2]') AS whole, json_extract(value, '$[3]') AS project_id
            FROM json_each(?)
        ),
        files AS MATERIALIZED (
            SELECT id, canonical_name FROM entities WHERE type = 'file'
        ),
        named AS MATERIALIZED (
            SELECT e.id AS entity_id, n.i AS i, n.project_id AS project_id
            FROM name AS n CROSS JOIN entities AS e
              ON e.canonical_name = n.name COLLATE NOCASE AND e.canonical_name = n.name COLLATE BINARY
            UNION
            SELECT a.entity_id, n.i, n.project_id
            FROM name AS n CROSS JOIN entity_aliases AS a
              ON a.alias = n.name AND (n.whole OR a.alias = n.name COLLATE BINARY)
            UNION
            SELECT f.id, b.i, b.project_id
            FROM files AS f JOIN b
              ON b.rel_path IS NOT NULL
             AND substr(f.canonical_name, -length(b.rel_path) - 1) = '/' || b.rel_path
            UNION
            SELECT a.entity_id, b.i, b.project_id
            FROM files AS f CROSS JOIN entity_aliases AS a ON a.entity_id = f.id
            JOIN b
              ON b.rel_path IS NOT NULL AND substr(a.alias, -length(b.rel_path) - 1) = '/' || b.rel_path
        )
        SELECT DISTINCT ie.idea_id AS idea, n.i AS i
        FROM named AS n CROSS JOIN idea_entities AS ie ON ie.entity_id = n.entity_id
        WHERE n.project_id IS NULL
           OR (SELECT s.project_id FROM ideas AS i JOIN sessions AS s ON s.id = i.session_id
               WHERE i.id = ie.idea_id) = n.project_id
        """,
        (
            json.dumps([[b.rel_path, b.project_id] for b in boosts]),
            json.dumps(
                [
                    [i, name, whole, b.project_id]
                    for i, b in enumerate(boosts)
                    for name, whole in _names_of(b.file_path, b.rel_path).items()
                ]
            ),
        ),
    )
    return _strongest(rows, "idea", boosts)


def _names_of(file_path: str, rel_path: str | None) -> dict[str, bool]:
    """The names that name a file and are tails of its absolute path, each with whether it is the whole
    absolute or relative path (True) or a longer or shorter tail (False).

    These are the absolute and the relative path; every tail of the absolute path that ends with "/" +
    the relative path (`webapp/src/app.ts`, written from a parent directory); and every tail of the
    relative path after a "/" that has a directory in it and does not start with one (`src/app.ts`,
    `ui/Cta.tsx`, not `Cta.tsx`).
    """
    names = {file_path: True}
    if rel_path is None:
        return names
    names[rel_path] = True
    if file_path.endswith("/" + rel_path):
        for start in range(len(file_path) - len(rel_path)):
            names.setdefault(file_path[start:], False)
    slashed = "/" + rel_path
    for start, char in enumerate(slashed):
        tail = slashed[start + 1 :]
        if char == "/" and "/" in tail and not tail.startswith("/"):
            names.setdefault(tail, False)
    return names


def _strongest(
    rows: Iterable[sqlite3.Row], column: str, boosts: Sequence[AssociationBoost]
) -> dict[int, AssociationBoost]:
    """Per target, the boost with the highest weight: several associations pointing at one file do not
    add up, or a file learned under many phrasings would outrank everything."""
    best: dict[int, AssociationBoost] = {}
    for row in rows:
        target, boost = int(row[column]), boosts[int(row["i"])]
        current = best.get(target)
        if current is None or (boost.weight, -boost.association_id) > (
            current.weight,
            -current.association_id,
        ):
            best[target] = boost
    return best


async def reinforce(db: Database, association_ids: Iterable[int]) -> None:
    """Associations that lifted a result a caller received: one more hit, used now (their decay
    restarts). One write; a store that cannot be written still answers the search."""
    await record_use(db, "search_associations", association_ids)
