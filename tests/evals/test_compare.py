"""Run comparison: the delta arithmetic, the table and Markdown report, and the optional PNG chart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cairn.evals.compare import (
    ChartUnavailableError,
    compare_runs,
    render_chart,
    render_markdown,
    render_table,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

RUN_A: dict[str, Any] = {
    "model": "claude-haiku-4-5",
    "prompt_version": "v1",
    "dataset": "core",
    "created_at": "2025-03-01T10:00:00Z",
    "metrics": {
        "ideas": {"precision": 0.6, "recall": 0.5, "f1": 0.5455, "tp": 6, "fp": 4, "fn": 6},
        "relations": {"precision": 0.25, "recall": 0.5, "f1": 0.3333},
    },
    "cost": {"usd": 0.0123, "input_tokens": 12000, "output_tokens": 800},
    "retrieval": {
        "keyword": {"recall@1": 0.5, "recall@5": 0.7, "recall@10": 0.8, "mrr": 0.6, "ndcg@10": 0.65}
    },
}
RUN_B: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "prompt_version": "v2",
    "dataset": "core",
    "created_at": "2025-03-02T10:00:00Z",
    "metrics": {
        "ideas": {"precision": 0.7, "recall": 0.75, "f1": 0.7241},
        "entities": {"precision": 0.9, "recall": 0.8, "f1": 0.8471},
    },
    "cost": {"usd": 0.0456, "input_tokens": 11000, "output_tokens": 800},
    "retrieval": {
        "keyword": {"recall@1": 0.5, "recall@5": 0.6, "recall@10": 0.9, "mrr": 0.65, "ndcg@10": 0.7},
        "hybrid": {"recall@1": 0.7, "recall@5": 0.9, "recall@10": 1.0, "mrr": 0.8, "ndcg@10": 0.85},
    },
}


def _rows(comparison: dict[str, Any], section: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["group"], row["metric"]): row for row in comparison[section]}


def test_deltas_are_b_minus_a_with_missing_values_as_none() -> None:
    comparison = compare_runs(RUN_A, RUN_B)
    assert comparison["a"] == {
        "label": "claude-haiku-4-5 / v1",
        "model": "claude-haiku-4-5",
        "prompt_version": "v1",
        "dataset": "core",
        "created_at": "2025-03-01T10:00:00Z",
    }
    assert comparison["b"]["label"] == "claude-sonnet-4-5 / v2"

    extraction = _rows(comparison, "extraction")
    # Fields in A's order, then the ones only B has; P/R/F1 each.
    assert list(dict.fromkeys(g for g, _ in extraction)) == ["ideas", "relations", "entities"]
    assert extraction[("ideas", "f1")] == {
        "group": "ideas",
        "metric": "f1",
        "a": 0.5455,
        "b": 0.7241,
        "delta": 0.1786,
    }
    assert extraction[("ideas", "precision")]["delta"] == 0.1  # not 0.09999999999999998
    assert extraction[("ideas", "recall")]["delta"] == 0.25
    assert extraction[("relations", "f1")] == {
        "group": "relations",
        "metric": "f1",
        "a": 0.3333,
        "b": None,
        "delta": None,
    }
    assert extraction[("entities", "recall")]["a"] is None and extraction[("entities", "recall")]["b"] == 0.8
    assert ("ideas", "tp") not in extraction

    retrieval = _rows(comparison, "retrieval")
    assert retrieval[("keyword", "recall@5")]["delta"] == -0.1
    assert retrieval[("keyword", "recall@1")]["delta"] == 0.0
    assert retrieval[("hybrid", "mrr")] == {
        "group": "hybrid",
        "metric": "mrr",
        "a": None,
        "b": 0.8,
        "delta": None,
    }

    cost = _rows(comparison, "cost")
    assert cost[("", "usd")]["delta"] == 0.0333
    assert cost[("", "input_tokens")]["delta"] == -1000
    assert cost[("", "output_tokens")]["delta"] == 0


def test_runs_without_retrieval_or_with_nested_costs_compare() -> None:
    spent = {"usd": 1, "tokens": {"input": 10, "output": 2}, "note": "x"}
    a = {"model": "m", "metrics": {"cases": 3}, "cost": spent}
    b = {"model": "m", "metrics": {}, "cost": {"usd": 2, "tokens": {"input": 15}}}
    comparison = compare_runs(a, b)
    assert comparison["retrieval"] == [] and comparison["extraction"] == []
    cost = _rows(comparison, "cost")
    assert list(cost) == [("", "usd"), ("", "tokens.input"), ("", "tokens.output")]
    assert cost[("", "tokens.input")]["delta"] == 5
    assert cost[("", "tokens.output")]["b"] is None
    assert comparison["a"]["label"] == "m"


def test_markdown_report_names_both_runs_and_shows_the_numbers() -> None:
    report = render_markdown(compare_runs(RUN_A, RUN_B))
    assert report.startswith("# Eval comparison: claude-haiku-4-5 / v1 vs claude-sonnet-4-5 / v2\n")
    assert "| `2025-03-01T10:00:00Z` | `2025-03-02T10:00:00Z` |" in report.replace("created_at ", "")
    for heading in ("## Extraction", "## Retrieval", "## Cost"):
        assert heading in report
    lines = report.splitlines()
    ideas = next(line for line in lines if line.startswith("| ideas |"))
    # f1 A, B, delta; precision A, B, delta; recall A, B, delta.
    assert ideas == (
        "| ideas | 0.5455 | 0.7241 | +0.1786 | 0.6000 | 0.7000 | +0.1000 | 0.5000 | 0.7500 | +0.2500 |"
    )
    relations = next(line for line in lines if line.startswith("| relations |"))
    assert relations.startswith("| relations | 0.3333 | - | - |")
    # Retrieval, one line per mode and metric. A regression is bold; an unchanged value is plain 0.
    assert "| keyword | recall@1 | 0.5000 | 0.5000 | 0 |" in lines
    assert "| keyword | recall@5 | 0.7000 | 0.6000 | **-0.1000** |" in lines
    assert "| keyword | ndcg@10 | 0.6500 | 0.7000 | +0.0500 |" in lines
    assert "| hybrid | mrr | - | 0.8000 | - |" in lines
    # Cost: dearer is a regression, fewer tokens an improvement; whole numbers print as counts.
    assert "| usd | 0.0123 | 0.0456 | **+0.0333** |" in lines
    assert "| input_tokens | 12,000 | 11,000 | -1,000 |" in lines


def test_markdown_says_when_a_section_is_empty() -> None:
    report = render_markdown(compare_runs({"model": "a"}, {"model": "b"}))
    assert "No extraction metrics in either run." in report
    assert "No retrieval metrics in either run." in report
    assert "No cost figures in either run." in report


def test_table_renders_every_row() -> None:
    comparison = compare_runs(RUN_A, RUN_B)
    table = render_table(comparison)
    rows = sum(len(comparison[s]) for s in ("extraction", "retrieval", "cost"))
    assert table.row_count == rows
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    text = console.export_text()
    assert "claude-haiku-4-5 / v1" in text and "+0.1786" in text and "-1,000" in text


def test_chart_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "f1.png"
    render_chart([RUN_A, RUN_B, {"model": "only-model", "metrics": {"ideas": {"f1": 0.9}}}], path)
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000


def test_chart_without_matplotlib_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry in sys.modules makes the import raise ImportError, as when the extra is not installed.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ChartUnavailableError, match=r"pip install 'cairn\[plot\]'"):
        render_chart([RUN_A], tmp_path / "f1.png")
    assert not (tmp_path / "f1.png").exists()


def test_chart_needs_a_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        render_chart([], tmp_path / "f1.png")


def test_a_run_of_the_previous_prompt_compares_with_one_of_the_current(tmp_path: Path) -> None:
    """Issue 15 bumped the indexer prompt to v2 (links inside a batch): runs saved with v1 stay
    comparable — both files load, every field of both shows a delta, the labels tell them apart."""
    from cairn.evals.runs import load_run, save_run
    from cairn.prompts import load_prompt

    fields = ("ideas", "relations", "answered", "completed", "topics", "entities")
    before = {f: {"precision": 1.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0, "fn": 9} for f in fields}
    after = {f: {"precision": 0.8, "recall": 0.5, "f1": 0.6154, "tp": 5, "fp": 1, "fn": 4} for f in fields}
    old = {"model": "offline", "prompt_version": "indexer-v1", "created_at": "2026-11-26T10:00:00Z"}
    new = {
        "model": "offline",
        "prompt_version": load_prompt("indexer").id,
        "created_at": "2026-11-26T11:00:00Z",
    }
    a = load_run(save_run({**old, "dataset": "core", "metrics": {**before, "skip": {"n": 0}}}, tmp_path))
    b = load_run(save_run({**new, "dataset": "core", "metrics": {**after, "skip": {"n": 0}}}, tmp_path))
    assert len(list(tmp_path.glob("*.json"))) == 2
    comparison = compare_runs(a, b)
    assert (comparison["a"]["label"], comparison["b"]["label"]) == (
        "offline / indexer-v1",
        f"offline / {new['prompt_version']}",
    )
    deltas = {(row["group"], row["metric"]): row["delta"] for row in comparison["extraction"]}
    assert {group for group, _metric in deltas} == set(fields)
    assert deltas[("answered", "f1")] == 0.6154
