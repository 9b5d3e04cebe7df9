"""The retrieval eval on a real store (SQLite + embedded Chroma) written with plain SQL: which results cover
which targets, and the metric numbers for rankings whose order keyword search makes certain."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from cairn.evals.retrieval import Extent, covered_targets, evaluate_retrieval, targets_of
from cairn.search.models import SearchResult, SessionInfo, SourceLocation
from cairn.store.store import Store, message_hash
from tests.tools.memory import add_idea, add_span, insert

FILE_A = "/t/case-a.jsonl"
FILE_B = "/t/case-b.jsonl"
CASE_OF_FILE = {FILE_A: "case-a", FILE_B: "case-b"}
SAID_AT = "2025-03-01T10:00:00.000Z"


@dataclass(frozen=True)
class Q:
    id: str
    query: str
    case: str
    ideas: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


@dataclass
class Data:
    queries: list[Q]


@dataclass
class World:
    ideas: dict[str, int] = field(default_factory=dict)
    idea_map: dict[int, tuple[str, str]] = field(default_factory=dict)


@pytest.fixture
async def world(store: Store) -> World:
    w = World()
    async with store.db.write() as conn:
        project = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/shop', 'shop')")
        await conn.executemany(
            "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
            [("sa", project, SAID_AT, SAID_AT), ("sb", project, SAID_AT, SAID_AT)],
        )
        add_file = "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)"
        file_a = await insert(conn, add_file, (FILE_A, "sa"))
        file_b = await insert(conn, add_file, (FILE_B, "sb"))
        w.ideas["pool"] = await add_idea(
            conn,
            "sa",
            "decision",
            "Switch the connection pool to pgbouncer transaction mode",
            14,
            file_id=file_a,
            said_at=SAID_AT,
        )
        w.ideas["seed"] = await add_idea(
            conn, "sa", "todo", "Retry the flaky checkout test with a fixed seed", 20, file_id=file_a
        )
        # Same line number in the other case: must never count for a case-a query.
        w.ideas["other"] = await add_idea(
            conn,
            "sb",
            "decision",
            "Keep the connection pool in pgbouncer session mode",
            14,
            file_id=file_b,
            said_at=SAID_AT,
        )
        text = "The nightly export writes parquet files to the cold storage bucket"
        # An assistant message merged from JSONL lines 30-32: a gold line inside it is covered.
        await conn.execute(
            "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash, timestamp) "
            "VALUES ('sa', ?, 30, 32, 3000, 3300, 'assistant', 'text', ?, ?, ?)",
            (file_a, text, message_hash("assistant", "text", text), SAID_AT),
        )
        # No file_id, as older spans: the eval falls back to the session's transcript file.
        await add_span(conn, "sa", "Grafana dashboards", 40, 60, summary="Latency panels for checkout")
    # The indexing eval matched "pool" to gold idea i3 of case-a and "other" to i3 of case-b.
    w.idea_map = {w.ideas["pool"]: ("case-a", "i3"), w.ideas["other"]: ("case-b", "i3")}
    await store.sync_vectors()
    return w


QUERIES = [
    Q("q1", "pgbouncer transaction mode", "case-a", ideas=["i3"], lines=[14]),
    Q("q2", "parquet cold storage bucket", "case-a", lines=[31]),
    Q("q3", "Grafana dashboards latency panels", "case-a", lines=[45]),
    # The only phrase match is case-b's idea at line 14, which does not answer a case-a query.
    Q("q4", "pgbouncer session mode", "case-a", lines=[14]),
    Q("q5", "a query with no gold answer", "case-a"),
]


async def test_keyword_rankings_give_the_hand_computed_metrics(store: Store, world: World) -> None:
    report = await evaluate_retrieval(store, Data(QUERIES), world.idea_map, CASE_OF_FILE, ["keyword"])
    assert list(report) == ["keyword"]
    keyword = report["keyword"]
    rows = {row["id"]: row for row in keyword["per_query"]}
    assert keyword["queries"] == 4 and keyword["skipped"] == ["q5"]
    assert list(rows) == ["q1", "q2", "q3", "q4"]
    # q1: the pool idea is first and covers both targets (it is i3 and it sits at line 14).
    assert rows["q1"] == {
        "id": "q1",
        "query": "pgbouncer transaction mode",
        "case": "case-a",
        "recall@10": 1.0,
        "first_relevant_rank": 1,
        "missed": [],
    }
    # q2: the merged message (lines 30-32) covers line 31; q3: the span (40-60) covers line 45.
    assert (rows["q2"]["first_relevant_rank"], rows["q2"]["recall@10"]) == (1, 1.0)
    assert (rows["q3"]["first_relevant_rank"], rows["q3"]["recall@10"]) == (1, 1.0)
    # q4: case-b's phrase match ranks first and covers nothing; case-a's pool idea (pgbouncer, mode at
    # line 14) follows it at rank 2.
    assert rows["q4"]["first_relevant_rank"] == 2 and rows["q4"]["missed"] == []
    assert keyword["recall@1"] == 0.75  # (1 + 1 + 1 + 0) / 4
    assert keyword["recall@5"] == keyword["recall@10"] == 1.0
    assert keyword["mrr"] == 0.875  # (1 + 1 + 1 + 1/2) / 4
    # q4's single target found at rank 2: (1/log2(3)) / 1 = 0.6309; the others are perfect.
    assert keyword["ndcg@10"] == round((3 + 1 / math.log2(3)) / 4, 4) == 0.9077


async def test_every_mode_is_scored_and_usage_is_not_recorded(store: Store, world: World) -> None:
    report = await evaluate_retrieval(store, Data(QUERIES[:3]), world.idea_map, CASE_OF_FILE, k=5)
    assert list(report) == ["keyword", "semantic", "hybrid"]
    for mode, metrics in report.items():
        assert metrics["queries"] == 3, mode
        for name in ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"):
            assert 0.0 <= metrics[name] <= 1.0, (mode, name)
        assert metrics["recall@1"] <= metrics["recall@5"] <= metrics["recall@10"]
    # The three queries are close paraphrases of their answers: every mode finds them in the top 5.
    assert report["hybrid"]["recall@5"] == 1.0
    assert report["semantic"]["recall@5"] == 1.0
    used = await store.db.scalar("SELECT sum(usage_count) FROM ideas")
    assert used == 0


async def test_bad_arguments_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown search mode"):
        await evaluate_retrieval(store, Data(QUERIES), {}, CASE_OF_FILE, ["fuzzy"])
    with pytest.raises(ValueError, match="k must be"):
        await evaluate_retrieval(store, Data(QUERIES), {}, CASE_OF_FILE, k=0)


def _result(kind: str, rid: str, file: str | None, line: int | None) -> SearchResult:
    return SearchResult.model_validate(
        {
            "id": rid,
            "kind": kind,
            "content": "x",
            "preview": "x",
            "score": 0.5,
            "scores": {"fusion": 0.5, "recency": 1.0},
            "match": "keyword",
            "snippet": "x",
            "session": SessionInfo(id="sa"),
            "source": SourceLocation(file=file, line=line),
        }
    )


def test_covered_targets_rules() -> None:
    query = Q("q", "anything", "case-a", ideas=["i3", "i4"], lines=[14, 50])
    idea_map = {7: ("case-a", "i3"), 8: ("case-b", "i4"), 9: ("case-a", "i9")}
    assert targets_of(query) == {"idea:i3", "idea:i4", "line:14", "line:50"}

    def cover(kind: str, rid: str, extent: Extent) -> set[str]:
        result = _result(kind, rid, extent.file, extent.start)
        return covered_targets(result, extent, query, idea_map, CASE_OF_FILE)

    # A matched idea at a gold line covers both; one matched in another case or to a non-gold key, neither.
    assert cover("idea", "7", Extent(FILE_A, 14, 14)) == {"idea:i3", "line:14"}
    assert cover("idea", "8", Extent(FILE_B, 14, 14)) == set()
    assert cover("idea", "9", Extent(FILE_A, 13, 13)) == set()
    # Unmatched ideas and messages count only by line, and only in the query's own case's files.
    assert cover("idea", "10", Extent(FILE_A, 50, 50)) == {"line:50"}
    assert cover("message", "m1", Extent(FILE_A, 12, 15)) == {"line:14"}
    assert cover("message", "m2", Extent("/t/unknown.jsonl", 14, 14)) == set()
    assert cover("message", "m3", Extent(None, 14, 14)) == set()
    # A span covers every gold line in its range; an open span (no end) everything from its start.
    assert cover("span", "s1", Extent(FILE_A, 10, 60)) == {"line:14", "line:50"}
    assert cover("span", "s2", Extent(FILE_A, 20, None)) == {"line:50"}
