"""`cairn eval qa` and `cairn eval locomo` end to end, in real processes: a 3-question QA set over cairn's
demo session (short, so quick to backfill), a hand-written LoCoMo-shaped conversation, the run files
`cairn eval compare` reads, and bad input (over a shared real transcript) refused before anything is
written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.evals import DEMO
from tests.evals.helpers import tiny_conversation
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.paths import REAL_TRANSCRIPTS

SESSION = "entireio-cli/5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl"
GROUPS = {
    "bm25",
    *(f"{m}/{k}" for m in ("keyword", "semantic", "hybrid") for k in ("messages", "ideas", "all")),
}
FIGURES = {
    "questions",
    "mrr",
    *(f"recall_{how}@{k}" for how in ("any", "all") for k in (1, 5, 10)),
}


def ask(qid: str, session: str, question: str, category: str, *lines: int) -> dict[str, Any]:
    evidence = [{"file": session, "line": line} for line in lines]
    return {"id": qid, "session": session, "question": question, "answer": "-", "category": category,
            "evidence": evidence}  # fmt: skip


def demo_items() -> list[dict[str, Any]]:
    """Three questions about cairn's demo session (a flaky SQLite test, Postgres, migrations)."""
    demo = DEMO.name
    return [
        ask("t1", demo, "why did the orders tests fail randomly", "problem", 11),
        ask("t2", demo, "should we move orders to Postgres before Black Friday", "decision", 27),
        ask("t3", demo, "where do production migrations run", "howto", 29),
    ]


def said(proc: Any) -> str:
    return " ".join(proc.stderr.split())


def test_eval_qa_and_locomo_report_the_baseline_and_every_mode_and_kind(
    cairn_home: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    qa_file = tmp_path / "qa.json"
    qa_file.write_text(json.dumps(demo_items()))
    run = cairn_json("eval", "qa", str(qa_file), "--transcripts", str(DEMO.parent), "--out", str(runs))
    assert run["benchmark"] == "qa" and run["model"] == "offline" and run["questions"] == 3
    assert run["tolerance"] == 3 and run["files"] == 1
    assert set(run["retrieval"]) == GROUPS
    for figures in run["retrieval"].values():
        assert set(figures) == FIGURES and figures["questions"] == 3
        assert all(0.0 <= figures[name] <= 1.0 for name in FIGURES - {"questions"})
    assert run["retrieval"]["bm25"]["recall_any@10"] == 1.0  # 28 lines with text, 10 results
    assert run["retrieval"]["keyword/messages"]["recall_any@10"] > 0
    assert set(run["per_category"]["hybrid/all"]) == {"problem", "decision", "howto"}
    assert set(run["cost"]["latency_ms"]) == GROUPS
    assert run["store"]["messages"] > 0 and run["store"]["ideas"] > 0 and run["store"]["bm25_documents"] == 28
    assert set(run["ranks"]) == {"t1", "t2", "t3"}
    assert set(run["first_hit_kinds"]["bm25"]) == {"line"}
    assert set(run["shown"]) == GROUPS - {"bm25"}  # the baseline shows lines, not snippets
    for figures in run["shown"].values():
        assert 0 < figures["results"] <= 30 and 0 <= figures["repeats"] <= figures["results"]
        assert figures["unreadable_share"] == round(figures["unreadable"] / figures["results"], 4)
    assert set(run["first_hit_kinds"]["hybrid/messages"]) <= {"message"}
    assert all(m["evidence"][0].startswith(DEMO.name) for g in GROUPS for m in run["misses"][g])
    assert not Path(run["home"]).exists()
    assert not (cairn_home / "cairn.db").exists()  # the user's store is untouched

    # LoCoMo on a terminal: the table; the run file has the figures.
    conversation = tmp_path / "7.json"
    conversation.write_text(json.dumps(tiny_conversation()))
    shown = cairn("eval", "locomo", str(conversation), "--mode", "keyword", "--out", str(runs)).stdout
    shown = " ".join(shown.split())
    assert "locomo:7: 4 questions over 3 transcript files" in shown
    assert "a hit is a result at an evidence line" in shown
    assert "bm25" in shown and "keyword/ideas" in shown and "any@10" in shown
    assert "misses in keyword/all" in shown
    assert "what a person sees in the top 10" in shown and "raw JSON" in shown
    saved = sorted(runs.glob("*.json"))  # both runs may start within one second: named by time, then kind
    assert len(saved) == 2
    [qa_run] = [p for p in saved if "-qa-offline-" in p.name]
    [locomo_run] = [p for p in saved if "-locomo-offline-" in p.name]
    locomo = json.loads(locomo_run.read_text())
    assert locomo["benchmark"] == "locomo" and locomo["tolerance"] == 0
    assert set(locomo["retrieval"]) == {"bm25", "keyword/messages", "keyword/ideas", "keyword/all"}
    assert locomo["questions"] == 4 and locomo["conversations"]["conv-7"]["skipped"]["no evidence"] == 2
    assert set(locomo["per_category"]["bm25"]) == {"temporal", "single-hop", "multi-hop", "open-domain"}
    assert locomo["retrieval"]["bm25"]["recall_any@10"] == 1.0  # six turns, ten results
    assert locomo["unknown_evidence"] == [
        {"question": "conv-7/q4", "evidence": "D9:9"},
        {"question": "conv-7/q7", "evidence": "D7:1"},
    ]

    comparison = cairn_json("eval", "compare", str(qa_run), str(locomo_run))
    rows = {(r["group"], r["metric"]): r for r in comparison["retrieval"]}
    assert rows[("bm25", "recall_any@10")]["a"] == 1.0 and rows[("bm25", "recall_any@10")]["b"] == 1.0
    assert rows[("hybrid/all", "recall_any@10")]["b"] is None  # only the QA run searched hybrid


def test_bad_input_exits_2_with_one_line_and_writes_nothing(cairn_home: Path, tmp_path: Path) -> None:
    """Every message is checked in test_qa.py and test_locomo.py; here, that the CLI refuses before any
    work with exit code 2 and the message on one line of stderr."""
    runs = tmp_path / "runs"
    qa_file = tmp_path / "qa.json"
    qa_file.write_text(
        json.dumps(
            [
                ask("t1", SESSION, "Which lint complaint made us use exec.CommandContext?", "problem", 42),
                ask("t2", SESSION, "Why reuse GetGitDir in the rebase check?", "decision", 93, 950),
            ]
        )
    )
    past = cairn(
        "eval", "qa", str(qa_file), "--transcripts", str(REAL_TRANSCRIPTS), "--out", str(runs), check=False
    )
    assert past.returncode == 2
    assert (
        past.stderr
        == f"error: qa.json: item t2: evidence line 950 is past the end of {SESSION} (115 lines)\n"
    )
    (tmp_path / "copy" / "entireio-cli").mkdir(parents=True)
    missing = cairn("eval", "qa", str(qa_file), "--transcripts", str(tmp_path / "copy"), check=False)
    assert missing.returncode == 2 and f"qa.json: item t1: transcript {SESSION} not found" in said(missing)

    odd = tmp_path / "26.json"
    odd.write_text(json.dumps([tiny_conversation()]))
    good = tmp_path / "7.json"
    good.write_text(json.dumps(tiny_conversation()))
    shape = cairn("eval", "locomo", str(good), str(odd), "--out", str(runs), check=False)
    assert shape.returncode == 2
    assert said(shape).startswith("error: 26.json: expected one LoCoMo conversation")
    kind = cairn("eval", "locomo", str(good), "--kind", "everything", check=False)
    assert kind.returncode == 2 and "unknown --kind everything" in said(kind)
    assert not runs.exists() and not list(tmp_path.glob("**/cairn.db"))
