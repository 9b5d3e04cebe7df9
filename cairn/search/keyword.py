"""Keyword search: FTS5 BM25 candidates per kind, ordered by match tier, with an absolute strength.

bm25 orders rows well within one query but says nothing absolute: the best row of a query that matches
one common word gets the same top rank as an exact phrase match. So each candidate also gets a
*strength* from which tier it matches, checked with FTS5 itself (the same tokenizer and stemming as
the index) on just the candidate rows:

    exact phrase (or the one query word, unprefixed)   1.0
    all key terms within NEAR_DISTANCE tokens         0.85
    all key terms anywhere                             0.7
    some key terms                                     0.7 x the share matched

Candidates are ordered by tier, then bm25 — so phrase > NEAR > terms, as the seed asks — and the
strength is what the "BM25 is decisive" shortcut and the final score's match part use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind
from cairn.search.query import FtsQuery
from cairn.store.db import Database

PHRASE, NEAR, ALL_TERMS = 1.0, 0.85, 0.7
SNIPPET_TOKENS = 24

_IN_IDS = "rowid IN (SELECT value FROM json_each(?))"


@dataclass(frozen=True)
class KeywordHit:
    row_id: int
    strength: float
    bm25: float


async def keyword_hits(
    db: Database, kind: Kind, query: FtsQuery, filters: Filters, n: int
) -> list[KeywordHit]:
    """The best `n` rows of `kind` matching `query` under `filters`, strongest first."""
    spec = TABLES[kind]
    where, params = filters.sql(kind)
    rows = await db.fetchall(
        f"""
        SELECT f.rowid AS id, {spec.bm25} AS bm25
        FROM {spec.fts} AS f JOIN {spec.table} AS t ON t.id = f.rowid
        WHERE {spec.fts} MATCH ? AND {where}
        ORDER BY bm25 LIMIT ?
        """,
        (query.combined, *params, n),
    )
    if not rows:
        return []
    ids = [int(row["id"]) for row in rows]
    strength = await _strengths(db, spec.fts, query, ids)
    hits = [KeywordHit(int(row["id"]), strength[int(row["id"])], float(row["bm25"])) for row in rows]
    hits.sort(key=lambda hit: (-hit.strength, hit.bm25, hit.row_id))
    return hits


async def _strengths(db: Database, fts: str, query: FtsQuery, ids: list[int]) -> dict[int, float]:
    """Each candidate's tier strength, from FTS5 matches restricted to the candidates."""
    id_list = json.dumps(ids)

    async def matching(expression: str) -> set[int]:
        rows = await db.fetchall(
            f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? AND {_IN_IDS}", (expression, id_list)
        )
        return {int(row["rowid"]) for row in rows}

    if len(query.terms) == 1 and query.phrase is None:
        exact = await matching(f'"{query.terms[0]}"')
        return {i: PHRASE if i in exact else ALL_TERMS for i in ids}
    strength = dict.fromkeys(ids, 0.0)
    covered = dict.fromkeys(ids, 0)
    for term in query.terms:
        for row_id in await matching(query.term_match(term)):
            covered[row_id] += 1
    for row_id in ids:
        strength[row_id] = ALL_TERMS * covered[row_id] / len(query.terms)
    if query.near is not None:
        for row_id in await matching(query.near):
            strength[row_id] = max(strength[row_id], NEAR)
    if query.phrase is not None:
        for row_id in await matching(query.phrase):
            strength[row_id] = PHRASE
    return strength


async def snippets(db: Database, kind: Kind, query: FtsQuery, ids: list[int]) -> dict[int, str]:
    """The best passage of each row with the query's words in `**bold**` (rows that match at all).

    Transcript text is full of markdown's own `**`, so the text's asterisks are escaped (`\\*`) and only
    the markers around matched words are bare: `**word**` always means "this matched".
    """
    if not ids:
        return {}
    fts = TABLES[kind].fts
    rows = await db.fetchall(
        f"""
        SELECT rowid, snippet({fts}, -1, char(2), char(3), '…', {SNIPPET_TOKENS}) AS snippet
        FROM {fts} WHERE {fts} MATCH ? AND {_IN_IDS}
        """,
        (query.any, json.dumps(ids)),
    )
    return {int(row["rowid"]): mark(str(row["snippet"])) for row in rows}


def mark(raw: str) -> str:
    """A snippet with FTS5's \\x02/\\x03 markers as `**`, the text's own asterisks escaped, on one line."""
    return plain(raw).replace("\x02", "**").replace("\x03", "**")


def plain(text: str) -> str:
    """`text` on one line with its asterisks escaped, so it cannot fake a match marker."""
    return " ".join(text.split()).replace("*", "\\*")
