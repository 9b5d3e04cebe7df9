"""Match tiers read from FTS5's own highlight() marks, on a real FTS5 table with cairn's tokenizer."""

from __future__ import annotations

import sqlite3

import pytest

from cairn.search.query import build
from cairn.search.tiers import ALL_TERMS, CLOSE, NEAR, OPEN, PHRASE, Tiers


def tier(query: str, text: str, window: int = 0) -> float:
    fts = build(query)
    assert fts is not None
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5 (text, tokenize = 'porter unicode61')")
    db.execute("INSERT INTO f (rowid, text) VALUES (1, ?)", (text,))
    row = db.execute(
        f"SELECT highlight(f, 0, '{OPEN}', '{CLOSE}') FROM f WHERE f MATCH ?", (fts.combined,)
    ).fetchone()
    return Tiers(fts, window=window).strength(row[0]) if row else 0.0


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        ("use the cache", "we decided to use the cache for sessions", PHRASE),
        ("use the cache", "the cache: we use it", NEAR),
        ("worktree index corruption", "corruption of the worktree index", NEAR),
        ("worktree index corruption", "index " + "filler " * 40 + "worktree corruption", ALL_TERMS),
        ("worktree index corruption", "the worktree was fine", ALL_TERMS / 3),
        ("retries", "three retries later", PHRASE),
        ("retries", "retriesCount went up", ALL_TERMS),  # a prefix match only
        ("prepare_commit_msg hook", "git calls prepare_commit_msg as a hook", NEAR),
        ("looking inside git", "we looked inside .git for rebase-merge", PHRASE),
        ("caching layer", "a layer that caches", NEAR),  # porter matched what the light stemmer misses
    ],
)
def test_tiers_from_marks(query: str, text: str, expected: float) -> None:
    assert tier(query, text) == pytest.approx(expected)


def test_a_partial_match_counts_the_terms_of_its_best_window() -> None:
    # Two of three terms, next to each other or a file read apart: anywhere, the same; within a window
    # of 10 words, the scattered pair counts as one term, the close pair as two.
    query = "worktree index corruption"
    close = "the worktree index was fine"
    scattered = "worktree " + "filler " * 40 + "index"
    assert tier(query, close) == tier(query, scattered) == pytest.approx(ALL_TERMS * 2 / 3)
    assert tier(query, close, window=10) == pytest.approx(ALL_TERMS * 2 / 3)
    assert tier(query, scattered, window=10) == pytest.approx(ALL_TERMS / 3)
    # Many occurrences far apart never add up; whole matches keep their tier whatever the window.
    apart = ("worktree " + "filler " * 30 + "index " + "filler " * 30) * 20
    assert tier(query, apart, window=10) == pytest.approx(ALL_TERMS / 3)
    everything = "index " + "filler " * 40 + "worktree corruption"
    assert tier(query, everything, window=10) == pytest.approx(ALL_TERMS)


def test_a_text_without_marks_is_no_match() -> None:
    fts = build("anything at all")
    assert fts is not None
    assert Tiers(fts).strength("nothing marked here") == 0.0
