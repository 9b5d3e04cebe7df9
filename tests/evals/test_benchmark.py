"""The benchmark engine's parts that need no store: transcript text, the BM25 baseline on a handmade set,
the hit/tolerance rule and the figures, and how benchmark runs are saved and compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.evals.benchmark import (
    BASELINE,
    Evidence,
    LineBM25,
    LineDoc,
    Located,
    Question,
    Ranked,
    _figures,
    line_docs,
    line_text,
    or_query,
)
from cairn.evals.compare import compare_runs, render_markdown
from cairn.evals.extents import Extent
from cairn.evals.metrics import all_covered_at_k, any_covered_at_k, percentile
from cairn.evals.runs import load_run, run_filename, save_run


def entry(kind: str, content: Any, **extra: Any) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra})


def test_line_text_takes_user_and_assistant_text_tool_results_and_inputs() -> None:
    assert line_text(entry("user", "plain prompt")) == "plain prompt"
    assistant = entry(
        "assistant",
        [
            {"type": "thinking", "thinking": "secret musing"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "git gc --prune=now"}},
        ],
    )
    assert line_text(assistant) == 'Let me look.\n{"command": "git gc --prune=now"}'
    result = entry(
        "user",
        [
            {"type": "tool_result", "tool_use_id": "t1", "content": "fatal: bad object"},
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "ok"}]},
        ],
    )
    assert line_text(result) == "fatal: bad object\nok"
    assert line_text(json.dumps({"type": "summary", "summary": "a summary"})) == ""
    assert line_text("{broken") == ""
    assert line_text(b'{"type": "user"}') == ""


def test_line_docs_number_physical_lines_and_skip_those_without_text(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([json.dumps({"type": "summary"}), entry("user", "first"), "", entry("assistant", "third")])
    )
    assert line_docs({"p/s.jsonl": path}) == [
        LineDoc("p/s.jsonl", 2, "first"),
        LineDoc("p/s.jsonl", 4, "third"),
    ]


def test_or_query_quotes_every_word() -> None:
    assert or_query('Why NEAR("x" AND -y)* busy_timeout?') == (
        '"why" OR "near" OR "x" OR "and" OR "y" OR "busy_timeout"'
    )
    assert or_query("?!") is None


def test_bm25_ranks_rare_matching_words_first() -> None:
    docs = [
        LineDoc("a", 1, "the build is green and the tests pass"),
        LineDoc("a", 2, "the worktree index got corrupted after git gc"),
        LineDoc("a", 3, "the the the the"),
        LineDoc("b", 1, "we ran git gc again and the index was fine"),
    ]
    bm25 = LineBM25(docs)
    try:
        assert len(bm25) == 4
        ranked = bm25.search("why was the worktree index corrupted?", k=10)
        assert ranked[0] == docs[1]  # three rare words beat one
        assert docs[3] in ranked and docs[0] in ranked  # OR: any word matches ("the")
        assert bm25.search("git gc", k=1) in ([docs[1]], [docs[3]])
        assert bm25.search('NEAR( "unbalanced', k=5) == []
        assert bm25.search("...", k=5) == []
        # porter stemming, as cairn's own FTS tables: "corrupting" finds "corrupted".
        assert bm25.search("corrupting", k=5) == [docs[1]]
    finally:
        bm25.close()


QUESTION = Question(
    id="d1",
    question="q",
    category="problem",
    evidence=(Evidence("p/x.jsonl", 20), Evidence("p/x.jsonl", 58)),
)


def at(file: str | None, start: int | None, end: int | None) -> Located:
    return Located(file, start, end, "m1", "message", "preview")


def test_a_hit_is_the_same_file_within_the_tolerance() -> None:
    assert at("p/x.jsonl", 20, 20).hits(QUESTION, 0) == {"p/x.jsonl:20"}
    assert at("p/x.jsonl", 23, 23).hits(QUESTION, 3) == {"p/x.jsonl:20"}
    assert at("p/x.jsonl", 24, 24).hits(QUESTION, 3) == set()
    assert at("p/x.jsonl", 17, 17).hits(QUESTION, 3) == {"p/x.jsonl:20"}
    assert at("p/x.jsonl", 16, 16).hits(QUESTION, 3) == set()
    # A range counts from its nearest end; a wide one can hit both lines.
    assert at("p/x.jsonl", 5, 17).hits(QUESTION, 3) == {"p/x.jsonl:20"}
    assert at("p/x.jsonl", 10, 60).hits(QUESTION, 0) == {"p/x.jsonl:20", "p/x.jsonl:58"}
    assert at("p/x.jsonl", 40, None).hits(QUESTION, 0) == {"p/x.jsonl:58"}  # an open span
    assert at("p/y.jsonl", 20, 20).hits(QUESTION, 3) == set()  # another file
    assert at(None, 20, 20).hits(QUESTION, 3) == set()  # outside the benchmark
    assert at("p/x.jsonl", None, None).hits(QUESTION, 3) == set()
    assert Extent("f", 10, 12).near(15, 3) and not Extent("f", 10, 12).near(16, 3)
    assert at("p/x.jsonl", 4, 9).where() == "p/x.jsonl:4-9" and at("p/x.jsonl", 4, 4).where() == "p/x.jsonl:4"


def test_figures_recall_any_all_and_mrr() -> None:
    q2 = Question("d2", "q", "exact", (Evidence("f", 1),))
    rankings = [
        # d1: one evidence line at rank 2, the other at rank 7.
        (
            QUESTION,
            Ranked([set(), {"p/x.jsonl:20"}, set(), set(), set(), set(), {"p/x.jsonl:58"}], None, 5.0),
        ),
        # d2: never found.
        (q2, Ranked([set()] * 10, None, 15.0)),
    ]
    rankings[0][1].kinds.extend(["message", "span", "idea", "idea", "idea", "idea", "message"])
    assert rankings[0][1].first_hit_kind(QUESTION) == "span"
    assert rankings[1][1].first_hit_kind(q2) is None
    assert _figures(rankings) == {
        "questions": 2,
        "recall_any@1": 0.0,
        "recall_any@5": 0.5,
        "recall_any@10": 0.5,
        "recall_all@1": 0.0,
        "recall_all@5": 0.0,
        "recall_all@10": 0.5,
        "mrr": 0.25,
    }


def test_any_all_and_percentile() -> None:
    covered = [{"a"}, set(), {"b"}]
    assert any_covered_at_k(covered, {"a", "b"}, 1) == 1.0
    assert all_covered_at_k(covered, {"a", "b"}, 2) == 0.0
    assert all_covered_at_k(covered, {"a", "b"}, 3) == 1.0
    assert any_covered_at_k([set()], {"a"}, 1) == 0.0 and any_covered_at_k([], set(), 1) == 1.0
    assert percentile([4, 1, 3, 2], 50) == 2
    assert percentile(range(1, 21), 95) == 19
    assert percentile([], 95) == 0.0
    with pytest.raises(ValueError):
        percentile([1], 0)


def benchmark_run(any10: float, p95: float) -> dict[str, Any]:
    figures = {"questions": 3, "recall_any@1": 0.2, "recall_any@10": any10, "recall_all@10": 0.1, "mrr": 0.3}
    return {
        "benchmark": "qa",
        "dataset": "qa.json",
        "model": "offline",
        "prompt_version": "indexer-v1",
        "created_at": "2026-11-26T10:00:00+00:00",
        "retrieval": {BASELINE: figures, "hybrid/all": figures},
        "cost": {"wall_seconds": 10.0, "latency_ms": {"hybrid/all": {"p50": 50.0, "p95": p95}}},
    }


def test_benchmark_runs_are_saved_by_name_and_compared(tmp_path: Path) -> None:
    a, b = benchmark_run(0.5, 120.0), benchmark_run(0.6, 100.0)
    assert run_filename(a) == "20261126T100000Z-qa-offline-indexer-v1.json"
    loaded = load_run(save_run(a, tmp_path))
    assert loaded == a
    comparison = compare_runs(loaded, b)
    rows = {(r["group"], r["metric"]): r for r in comparison["retrieval"]}
    assert rows[("hybrid/all", "recall_any@10")]["delta"] == 0.1
    assert rows[("bm25", "mrr")]["delta"] == 0
    # Only a benchmark's own metrics, not empty recall@k rows.
    assert {metric for _, metric in rows} == {
        *(f"recall_{how}@{k}" for how in ("any", "all") for k in (1, 5, 10)),
        "mrr",
    }
    assert rows[("hybrid/all", "recall_any@5")]["a"] is None
    cost = {r["metric"]: r for r in comparison["cost"]}
    assert cost["latency_ms.hybrid/all.p95"]["delta"] == -20.0
    assert "| hybrid/all | recall_any@10 | 0.5000 | 0.6000 | +0.1000 |" in render_markdown(comparison)
