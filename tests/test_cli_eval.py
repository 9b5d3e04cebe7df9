"""`cairn eval` end to end, as someone tuning the indexer runs it: real processes, a tiny labelled dataset."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cairn.prompts import load_prompt
from tests.evals import DEMO_QUERIES, make_dataset
from tests.helpers.cli import cairn, cairn_json


def said(proc: subprocess.CompletedProcess[str]) -> str:
    """stderr with rich's line wrapping undone."""
    return " ".join(proc.stderr.split())


def test_eval_indexing_offline_prints_metrics_and_saves_the_run(cairn_home: Path, tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "tiny")
    runs = tmp_path / "runs"
    run = cairn_json("eval", "indexing", "--model", "offline", "--dataset", str(dataset), "--out", str(runs))
    assert run["dataset"] == "tiny" and run["model"] == "offline"
    assert run["prompt_version"] == load_prompt().id
    assert set(run["metrics"]) == {
        "ideas",
        "relations",
        "answered",
        "completed",
        "topics",
        "entities",
        "skip",
        "redaction",
    }
    assert 0.5 < run["metrics"]["ideas"]["f1"] <= 1.0
    assert run["metrics"]["redaction"] == {"secrets": 1, "leaked": 0}
    assert run["cost"]["batches"] >= 1 and run["cost"]["dollars"] is None
    assert not Path(run["home"]).exists()  # the temporary store is gone
    saved = list(runs.glob(f"*-offline-{load_prompt().id}.json"))
    assert len(saved) == 1
    assert json.loads(saved[0].read_text())["metrics"] == run["metrics"]
    # Nothing was written to the user's store.
    assert not (cairn_home / "cairn.db").exists()


def test_eval_indexing_table_record_replay_and_keep_store(cairn_home: Path, tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "tiny")
    recording = tmp_path / "offline.jsonl"
    kept = tmp_path / "kept"
    shown = cairn(
        "eval", "indexing", "--dataset", str(dataset), "--record", str(recording), "--keep-store", str(kept)
    ).stdout
    assert "extraction" in shown and "ideas" in shown and "cost" in shown
    assert "secrets leaked: 0 of 1" in shown
    assert (kept / "cairn.db").is_file()
    replayed = cairn_json("eval", "indexing", "--dataset", str(dataset), "--replay", str(recording))
    first = cairn_json("eval", "indexing", "--dataset", str(dataset))
    assert replayed["metrics"] == first["metrics"]
    assert replayed["cost"]["input_tokens"] == first["cost"]["input_tokens"]


def test_eval_refuses_clearly(cairn_home: Path, tmp_path: Path) -> None:
    missing = cairn("eval", "indexing", "--dataset", str(tmp_path / "none"), check=False)
    assert missing.returncode == 1 and "no such dataset directory" in said(missing)
    dataset = make_dataset(tmp_path / "tiny")
    prompt = cairn("eval", "indexing", "--dataset", str(dataset), "--prompt", "v99", check=False)
    assert prompt.returncode == 1 and "no version v99" in said(prompt)
    paid = cairn(
        "eval", "indexing", "--dataset", str(dataset), "--model", "anthropic:claude-haiku-4-5", check=False
    )
    assert paid.returncode == 1 and "ANTHROPIC_API_KEY" in said(paid)


def test_eval_retrieval_and_compare(cairn_home: Path, tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "tiny", queries=DEMO_QUERIES)
    runs = tmp_path / "runs"
    run = cairn_json("eval", "retrieval", "--dataset", str(dataset), "--mode", "keyword", "--out", str(runs))
    assert set(run["retrieval"]) == {"keyword"}
    assert run["retrieval"]["keyword"]["queries"] == 1
    assert 0.0 <= run["retrieval"]["keyword"]["mrr"] <= 1.0
    cairn_json("eval", "indexing", "--dataset", str(dataset), "--out", str(runs))
    first, second = sorted(runs.glob("*.json"))
    markdown = tmp_path / "compare.md"
    comparison = cairn_json("eval", "compare", str(first), str(second), "--markdown", str(markdown))
    ideas_f1 = next(r for r in comparison["extraction"] if r["group"] == "ideas" and r["metric"] == "f1")
    assert ideas_f1["delta"] == 0
    assert markdown.read_text().startswith("# Eval comparison")
    bad = cairn("eval", "compare", str(first), str(markdown), check=False)
    assert bad.returncode == 1 and "not JSON" in said(bad)
