"""Keyword search: FTS5 BM25 candidates per kind, ordered by match tier, with an absolute strength.

bm25 orders rows well within one query but says nothing absolute: the best row of a query that matches
one common word gets the same top rank as an exact phrase match. So each candidate also gets a
*strength* from the tier it matches:

    exact phrase (or the one query word, whole)        1.0
    all key terms within NEAR_DISTANCE tokens         0.85
    all key terms anywhere                             0.7
    some key terms                                     0.7 x the share matched, each term
                                                       weighted by its rarity (`weights`)

Candidates are ordered by tier, then bm25 — so phrase > NEAR > terms, since the closer the words stand
the likelier the match — and the strength is what the "BM25 is decisive" shortcut and the final score's
match part use.

FTS5 finds the candidates and marks where each matched (`highlight()`, in C, for the rows returned);
the tier is read from those marks (`cairn.search.tiers`), so no Python runs over a candidate's words.
Asking FTS5 for each tier instead (`MATCH ... AND rowid IN (...)`) evaluates the whole expression over
the whole table every time. Snippets, needed only for the page shown, are cut elsewhere
(`cairn.search.snippets`).

Common terms draw no candidates of their own. FTS5 ranks every row an OR query matches before it
keeps the top N, so a query's cost is the rows its terms match: at 100K ideas a term in every twentieth
row ("src", "time", "fix") cost most of the query while adding the least to bm25 and to the strength
(`weights`). Terms are taken rarest first until they match `DF_CAP` rows between them (enough to
choose `n` from); the rest still count, and are still marked, in the rows those terms, the phrase or
NEAR draw (`candidate_match`), but a row holding only common terms is no longer a candidate. Below
`DF_CAP` matching rows (every store of a few thousand items) the query is `FtsQuery.combined`.

Messages are also found by their passages (`message_passages`: a long message's whole text, a clipped
tool result in full, cut into pieces): one more FTS5 query over `message_passages_fts`, under the same
filters through the passage's message, each passage hit counted for its message. A message keeps its
best hit (tier strength, then bm25), whether its own text or one of its passages matched; the hit
says which passage (`KeywordHit.passage_id`) so the passage can be shown (`passage_texts`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind
from cairn.search.query import FtsQuery
from cairn.search.tiers import CLOSE, OPEN, Tiers
from cairn.store.db import Database

PASSAGES_FTS = "message_passages_fts"
# Document frequencies are counted up to this many rows (`term_counts`).
DF_CAP = 5000
# Terms matching this many rows between them draw enough candidates (`candidate_match`).
DRAW_ROWS = DF_CAP

_TEXT: dict[Kind, str] = {
    "idea": "t.content",
    "span": "t.name || ' ' || t.summary",
    "message": "t.text",
}


@dataclass(frozen=True)
class KeywordHit:
    row_id: int
    strength: float
    bm25: float
    passage_id: int | None = None
    """For a message found through one of its passages: that passage (`message_passages.id`)."""

    @property
    def order(self) -> tuple[float, float, int]:
        return (-self.strength, self.bm25, self.row_id)


async def keyword_hits(
    db: Database,
    kind: Kind,
    query: FtsQuery,
    filters: Filters,
    n: int,
    window: int = 0,
    tool_weight: float = 1.0,
) -> list[KeywordHit]:
    """The best `n` rows of `kind` matching `query` under `filters`, strongest first; a partial match
    counts the terms within its best `window` words (0: anywhere; `cairn.search.tiers`), and a message
    matched only in its tool calls counts `tool_weight` of it (`prose_strength`)."""
    spec = TABLES[kind]
    where, params = filters.sql(kind)
    rows_of, counts = await term_counts(db, spec.table, spec.fts, query)
    match = candidate_match(query, counts)
    marked = " || ' ' || ".join(
        f"highlight({spec.fts}, {c}, '{OPEN}', '{CLOSE}')" for c in range(spec.columns)
    )
    if filters.session is not None:
        # A session holds a few hundred rows: bm25 only for its matches, then marks for the kept.
        rows = await db.fetchall(
            f"""
            SELECT f.rowid AS id, {spec.bm25} AS bm25
            FROM {spec.fts} AS f JOIN {spec.table} AS t ON t.id = f.rowid
            WHERE {spec.fts} MATCH ? AND {where}
            ORDER BY bm25 LIMIT ?
            """,
            (match, *params, n),
        )
        # highlight() needs a MATCH: a second one restricted to the kept rows (FTS5 re-reads the
        # query's doclists for each, which only a handful of rows can afford).
        marks = {
            int(row["id"]): str(row["marked"] or "")
            for row in await db.fetchall(
                f"SELECT rowid AS id, {marked} AS marked FROM {spec.fts} "
                f"WHERE {spec.fts} MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
                (match, json.dumps([int(row["id"]) for row in rows])),
            )
        }
    else:
        # FTS5 hands rows over in `rank` order (it ranks every match first: the cost is the rows the
        # expression matches), each is checked against the filters as it comes, and highlight() runs
        # only for the rows kept, up to `n`. CROSS JOIN keeps FTS5 the outer loop. At 100K ideas a
        # project filter cost 0.65 / 2.8 s (p50 / p95) the other way, marking the kept rows by a
        # second MATCH per rowid; this way 0.10 / 0.5 s, results identical.
        rank = f" AND f.rank MATCH '{spec.rank}'" if spec.rank else ""
        rows = await db.fetchall(
            f"""
            SELECT f.rowid AS id, f.rank AS bm25, {marked} AS marked
            FROM {spec.fts} AS f CROSS JOIN {spec.table} AS t ON t.id = f.rowid
            WHERE {spec.fts} MATCH ?{rank} AND {where}
            ORDER BY f.rank LIMIT ?
            """,
            (match, *params, n),
        )
        marks = {int(row["id"]): str(row["marked"] or "") for row in rows}
    tiers = Tiers(query, weights(rows_of, counts), window)
    measure = tiers.strength if kind != "message" else lambda m: prose_strength(tiers, m, tool_weight)
    hits = [
        KeywordHit(int(row["id"]), measure(marks.get(int(row["id"]), "")), float(row["bm25"])) for row in rows
    ]
    if kind == "message":
        passages = await _passage_hits(db, match, filters, n, tiers, tool_weight)
        hits = _best_per_message(hits + passages)[:n]
    hits.sort(key=lambda hit: hit.order)
    return hits


#: Where an assistant message's rendered tool calls begin (`cairn.transcripts.normalise`).
TOOL_CALL = "[tool_use "


def prose_strength(tiers: Tiers, marked: str, tool_weight: float) -> float:
    """A message's match strength, its tool calls' arguments counting `tool_weight` of theirs: a call
    that reads `.github/actions/sync/action.yml` holds a question's words about "the sync action" in a
    path, while the message only says "Let me re-read the action"; its prose counts in full."""
    whole = tiers.strength(marked)
    start = marked.find(TOOL_CALL)
    if start < 0 or tool_weight >= 1:
        return whole
    return max(tiers.strength(marked[:start]), tool_weight * whole)


async def term_counts(db: Database, table: str, fts: str, query: FtsQuery) -> tuple[int, list[int]]:
    """The rows of `table` (estimated by its largest id: deleted rows barely move a logarithm) and how
    many of them each key term matches, counted up to `DF_CAP`: beyond that a term is common whatever
    its exact count, and the count stays cheap. A one-term query needs neither: (0, [])."""
    if len(query.terms) < 2:
        return 0, []
    rows = await db.fetchall(
        f"SELECT (SELECT max(id) FROM {table}) AS n, "
        + ", ".join(
            f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT {DF_CAP})) AS t{i}"
            for i in range(len(query.terms))
        ),
        tuple(query.term_match(term) for term in query.terms),
    )
    n = max(1, int(rows[0]["n"] or 0))  # max(id) of an empty table is NULL
    return n, [int(rows[0][f"t{i}"]) for i in range(len(query.terms))]


def weights(rows: int, counts: list[int]) -> list[float]:
    """Each key term's inverse document frequency, log(1 + rows / rows matching it): a row that holds
    the query's one rare word ("roadtrip") matches it better than a row holding three of its common
    ones ("go", "soon", a name said in every other turn). Empty for a one-term query (`Tiers` then
    weighs its one term 1)."""
    return [math.log(1 + rows / max(1, count)) for count in counts]


def candidate_match(query: FtsQuery, counts: list[int]) -> str:
    """The MATCH expression candidates are drawn with: `query.combined` when its terms match fewer
    than `DRAW_ROWS` rows between them; else only the rarest terms draw rows of their own — the
    rarest always, the next ones while they all match at most `DRAW_ROWS` rows — and the others count
    only beside one of them (so they are still marked and weighed in every row drawn). A row the
    phrase or NEAR draws holds every term anyway.

    The bound is kept rather than crossed: FTS5 computes bm25 for every row a term draws before the
    top-N, so the one common term that crossed it cost most of a query (100K-idea store: "auth*"
    alone, 3,136 rows, 11 ms; with "src" beside it, 41,141 more rows, 120 ms), for candidates that
    hold only that common word."""
    if not counts or sum(counts) < DRAW_ROWS:
        return query.combined
    kept: set[str] = set()
    found = 0
    for count, term in sorted(zip(counts, query.terms, strict=True), key=lambda pair: pair[0]):
        if kept and found + count > DRAW_ROWS:
            break
        kept.add(term)
        found += count
    if len(kept) == len(query.terms):
        return query.combined
    rare = " OR ".join(query.term_match(term) for term in query.terms if term in kept)
    common = " OR ".join(query.term_match(term) for term in query.terms if term not in kept)
    tiers = [f"({part})" for part in (query.phrase, query.near) if part]
    # Rare terms alone, or rare terms beside common ones: each row sees one copy of each term, so
    # its bm25 and marks are exactly those `combined` gives it (`rare OR (rare AND common)` would
    # count the rare terms twice in rows holding both).
    return " OR ".join([*tiers, f"(({rare}) AND ({common}))", f"(({rare}) NOT ({common}))"])


async def _passage_hits(
    db: Database, match: str, filters: Filters, n: int, tiers: Tiers, tool_weight: float = 1.0
) -> list[KeywordHit]:
    """Messages whose passages match `match` (the messages' candidate expression: passages are their
    messages' words), one hit per matching passage (the best `n` passages: a message can have
    several), in one statement. Only searchable messages have passages, so the default filters
    drop few of FTS5's top `n`: each row it returns costs a `highlight()` over its passage.

    A passage counts like its message's own text (`prose_strength`): one that starts inside the
    message's rendered tool calls counts `tool_weight` of its match, or the passage would give back
    the full strength the message's text was denied."""
    where, params = filters.sql("message")
    # Where the message's rendered tool calls begin, 0-based (-1: none; only prose messages have them).
    calls = f"CASE WHEN t.kind = 'text' THEN instr(t.text, '{TOOL_CALL}') - 1 ELSE -1 END"
    marked = f"highlight({PASSAGES_FTS}, 0, '{OPEN}', '{CLOSE}')"
    if filters.narrows:
        # The filters pick the passages (through their messages) before the top-N; marks only for those.
        sql = f"""
            WITH top AS (
                SELECT f.rowid AS id, p.message_id, bm25({PASSAGES_FTS}) AS bm25
                FROM {PASSAGES_FTS} AS f
                JOIN message_passages AS p ON p.id = f.rowid
                JOIN messages AS t ON t.id = p.message_id
                WHERE {PASSAGES_FTS} MATCH ? AND {where}
                ORDER BY bm25 LIMIT ?
            )
            SELECT top.id AS passage_id, top.message_id AS id, top.bm25, {marked} AS marked,
                   p.char_start, {calls} AS calls
            FROM top JOIN {PASSAGES_FTS} ON {PASSAGES_FTS}.rowid = top.id
            JOIN message_passages AS p ON p.id = top.id
            JOIN messages AS t ON t.id = top.message_id
            WHERE {PASSAGES_FTS} MATCH ?
        """
        args: tuple[object, ...] = (match, *params, n, match)
    else:
        sql = f"""
            SELECT c.id AS passage_id, p.message_id AS id, c.bm25, c.marked, p.char_start, {calls} AS calls
            FROM (
                SELECT rowid AS id, rank AS bm25, {marked} AS marked FROM {PASSAGES_FTS}
                WHERE {PASSAGES_FTS} MATCH ? ORDER BY rank LIMIT ?
            ) AS c
            JOIN message_passages AS p ON p.id = c.id
            JOIN messages AS t ON t.id = p.message_id
            WHERE {where}
        """
        args = (match, n, *params)
    hits = []
    for row in await db.fetchall(sql, args):
        marked = str(row["marked"] or "")
        if 0 <= row["calls"] <= row["char_start"]:
            strength = min(1.0, tool_weight) * tiers.strength(marked)
        else:
            strength = prose_strength(tiers, marked, tool_weight)
        hits.append(KeywordHit(int(row["id"]), strength, float(row["bm25"]), int(row["passage_id"])))
    return hits


def _best_per_message(hits: list[KeywordHit]) -> list[KeywordHit]:
    """Each message's best hit (its own text or a passage): strongest tier, then best bm25."""
    best: dict[int, KeywordHit] = {}
    for hit in hits:
        kept = best.get(hit.row_id)
        if kept is None or hit.order < kept.order:
            best[hit.row_id] = hit
    return sorted(best.values(), key=lambda hit: hit.order)


async def passage_texts(db: Database, ids: list[int]) -> dict[int, str]:
    """The text of each message passage, by passage id (`KeywordHit.passage_id`,
    `VectorMatch.passage_id`): the part of a long message that matched, to show as its snippet."""
    if not ids:
        return {}
    rows = await db.fetchall(
        "SELECT id, text FROM message_passages WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    )
    return {int(row["id"]): str(row["text"]) for row in rows}


async def texts_of(db: Database, kind: Kind, ids: list[int]) -> dict[int, str]:
    """The searchable text of each row, by id."""
    if not ids:
        return {}
    spec = TABLES[kind]
    rows = await db.fetchall(
        f"SELECT t.id, {_TEXT[kind]} AS text FROM {spec.table} AS t "
        "WHERE t.id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    )
    return {int(row["id"]): str(row["text"] or "") for row in rows}
