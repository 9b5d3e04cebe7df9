"""The pure parts: FTS5 query sanitising, name keys, rank fusion, size fitting, the shared vocabularies."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.tools.common import clamp
from cairn.tools.matching import fts_match, fuse, name_key, name_key_sql, where
from cairn.tools.results import (
    IdeaBrief,
    IdeaList,
    Notice,
    ProjectNode,
    SessionNode,
    SpanNode,
    TopicHierarchy,
    fit,
    preview,
    result_chars,
)


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = 'porter unicode61')")
    conn.executemany(
        "INSERT INTO t (x) VALUES (?)",
        [("SQLite reports database is locked",), ("NEAR the café, AND or NOT",), ("pydantic_ai RunContext",)],
    )
    yield conn
    conn.close()


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_any_text_is_a_valid_match_expression(fts: sqlite3.Connection, text: str) -> None:
    match = fts_match(text)
    if match is not None:
        fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("sqlite", [1]),
        ('SQLite" OR x', [1]),
        ("locking", [1]),  # porter stemming
        ("AND NEAR(", [2]),  # operators are words
        ("cafe", [2]),  # unicode61 removes diacritics
        ("pydantic_ai", [3]),
        ("the", [2]),  # a stopword alone is still searched
        ("*^:", []),
    ],
)
def test_match_finds_words(fts: sqlite3.Connection, text: str, rows: list[int]) -> None:
    match = fts_match(text)
    found = (
        [] if match is None else [r[0] for r in fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))]
    )
    assert found == rows


def test_match_drops_stopwords_but_keeps_a_lone_one() -> None:
    assert fts_match("where is the SQLite lock") == '"sqlite" OR "lock"'
    assert fts_match("the") == '"the"'
    assert fts_match("  ") is None
    assert fts_match(" ".join(f"w{i}" for i in range(40))).count(" OR ") == 15  # type: ignore[union-attr]


@given(name=st.text(max_size=40))
def test_name_key_in_python_and_sql_agree(name: str) -> None:
    with sqlite3.connect(":memory:") as conn:
        assert conn.execute(f"SELECT {name_key_sql('?')}", (name,)).fetchone()[0] == name_key(name)


def test_name_keys() -> None:
    assert {
        name_key(n) for n in ["pydantic-ai", "pydantic_ai", "PydanticAI", "Pydantic AI", "pydantic.ai"]
    } == {"pydanticai"}
    assert name_key("C++") != name_key("C") != name_key("C#")


def test_fuse_rewards_agreement() -> None:
    assert fuse([[1, 2, 3], [3, 4]]) == [3, 1, 2, 4]
    assert fuse([[], [7, 8]]) == [7, 8]
    assert fuse([]) == []


def test_where() -> None:
    assert where(session_id=None, intent=None) is None
    assert where(session_id="s", intent=None) == {"session_id": "s"}
    assert where(session_id="s", intent="todo") == {"$and": [{"session_id": "s"}, {"intent": "todo"}]}


def test_clamp() -> None:
    assert [clamp(n, 10) for n in (-3, 0, 1, 7, 25, 26, 10_000)] == [10, 10, 1, 7, 25, 25, 25]


def test_preview() -> None:
    assert preview("a  b\n c") == "a b c"
    long = preview("x" * 1000)
    assert len(long) == 300 and long.endswith("…")


def brief(i: int) -> IdeaBrief:
    return IdeaBrief(id=i, intent="context", content="y" * 200)


def test_fit_cuts_the_tail_and_says_so() -> None:
    full = IdeaList(ideas=[brief(i) for i in range(30)])
    cut = fit(full, 2000)
    assert isinstance(cut, IdeaList)
    assert result_chars(cut) <= 2000
    assert [idea.id for idea in cut.ideas] == list(range(len(cut.ideas)))
    assert (
        cut.truncated
        == f"{30 - len(cut.ideas)} entries left out to stay within 2000 characters; ask more narrowly"
    )
    assert fit(full, 100_000) is full
    notice = Notice(notice="n" * 5000)
    assert fit(notice, 100) is notice


def test_fit_keeps_a_tree_broad() -> None:
    def session(name: str) -> SessionNode:
        spans = [SpanNode(id=i, name="s" * 50, start_line=i) for i in range(20)]
        return SessionNode(id=name, spans=spans)

    tree = TopicHierarchy(
        projects=[ProjectNode(name="p", sessions=[session("a"), session("b"), session("c")])]
    )
    cut = fit(tree, 2500)
    assert result_chars(cut) <= 2500
    sessions = cut.projects[0].sessions
    assert [s.id for s in sessions] == ["a", "b", "c"]  # the longest lists (spans) were cut first
    assert max(len(s.spans) for s in sessions) - min(len(s.spans) for s in sessions) <= 1


def test_nulls_are_not_serialised() -> None:
    assert brief(1).model_dump_json() == '{"id":1,"intent":"context","content":"' + "y" * 200 + '"}'
