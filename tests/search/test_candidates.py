"""Common terms draw no candidates of their own, yet every row drawn ranks and is marked as before.

A real FTS5 table with cairn's tokenizer: 3,000 rows hold only the query's common words, 150 its rare
one (some of them beside the common words, some with the whole phrase). The number of rows that is
enough to draw from is lowered to 100 so the table stays small.
"""

from __future__ import annotations

import sqlite3

import pytest

from cairn.search import keyword
from cairn.search.keyword import DF_CAP, candidate_match
from cairn.search.query import FtsQuery, build
from cairn.search.tiers import CLOSE, OPEN

QUERY = "flaky retry in the payment webhook"


def _table() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5 (text, tokenize = 'porter unicode61')")
    rows = [f"the payment webhook {i} retried twice" for i in range(3000)]
    rows += [f"a flaky test number {i}" for i in range(100)]
    rows += [f"flaky payment webhook {i} under load" for i in range(40)]
    rows += [f"the flaky retry in the payment webhook again ({i})" for i in range(10)]
    db.executemany("INSERT INTO f (rowid, text) VALUES (?, ?)", enumerate(rows, start=1))
    return db


def _counts(db: sqlite3.Connection, query: FtsQuery) -> list[int]:
    sql = f"SELECT count(*) FROM (SELECT 1 FROM f WHERE f MATCH ? LIMIT {DF_CAP})"
    return [db.execute(sql, (query.term_match(term),)).fetchone()[0] for term in query.terms]


def _ranked(db: sqlite3.Connection, match: str) -> dict[int, tuple[float, str]]:
    rows = db.execute(
        f"SELECT rowid, bm25(f), highlight(f, 0, '{OPEN}', '{CLOSE}') FROM f WHERE f MATCH ?", (match,)
    )
    return {rowid: (score, marked) for rowid, score, marked in rows}


def test_common_terms_only_count_beside_a_rare_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword, "DRAW_ROWS", 100)
    db = _table()
    query = build(QUERY)
    assert query is not None
    counts = _counts(db, query)
    match = candidate_match(query, counts)
    assert match != query.combined

    full, narrowed = _ranked(db, query.combined), _ranked(db, match)
    # Every row holding the rare word is drawn, and none of the 3,000 holding only common ones.
    assert len(full) == 3150
    assert set(narrowed) == set(range(3001, 3151))
    # Each drawn row gets exactly the bm25 and the marks the whole query gives it, so the ranking
    # and the match tiers of the candidates do not change.
    for rowid, (score, marked) in narrowed.items():
        assert marked == full[rowid][1]
        assert abs(score - full[rowid][0]) < 1e-9
    top = sorted(full, key=lambda rowid: full[rowid][0])[:10]
    assert sorted(narrowed, key=lambda rowid: narrowed[rowid][0])[:10] == top


def test_a_small_store_is_searched_with_the_whole_query() -> None:
    query = build(QUERY)
    assert query is not None
    assert candidate_match(query, [3, 40, 400, 500]) == query.combined
    single = build("webhook")
    assert single is not None
    assert candidate_match(single, []) == single.combined


def test_the_draw_stops_before_a_term_that_would_cross_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A term is added to the draw only while the drawn rows stay within the bound: the common term
    that would cross it costs bm25 for every row it holds (most of a large store's query time)."""
    monkeypatch.setattr(keyword, "DRAW_ROWS", 100)
    query = build("certificate verification failing staging")
    assert query is not None
    by_term = dict(zip(query.terms, [30, 60, 5000, 0], strict=True))
    counts = [by_term[term] for term in query.terms]
    match = candidate_match(query, counts)
    drawn = match.rsplit(" NOT ", 1)[0]
    rare, common = drawn.rsplit(" AND ", 1)
    # 30 + 60 rows stay within 100, so both draw; "failing" (5,000) only counts beside them.
    assert query.term_match(query.terms[0]) in rare and query.term_match(query.terms[1]) in rare
    assert query.term_match(query.terms[2]) in common and query.term_match(query.terms[2]) not in rare
    # The rarest term draws even alone above the bound: something must.
    alone = candidate_match(query, [5000, 5000, 5000, 4000])
    assert alone.count(query.term_match(query.terms[3])) == 2
    assert alone.rsplit(" NOT ", 1)[1].count(" OR ") == 2
