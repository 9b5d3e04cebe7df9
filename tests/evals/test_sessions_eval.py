"""`cairn eval sessions` end to end through the CLI on one small real session (fasthooks, 63 lines), listed
twice in a splits file of our own — once as `train` with one set of labels, once as `validation` with
another — so the run must keep the two splits apart. The kept stores are read back with plain sqlite3 to
check the figures against what the indexer actually stored. `cairn eval recall --split` runs its
SessionStart part over the same splits file."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cairn.evals.sessions import WEIGHTS_ENV, offline_weights
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.paths import REAL_TRANSCRIPTS

KEY = "fasthooks/sample_main_transcript.jsonl"
TOLERANCE = 3
#: Labels written for this test from reading the file: the session's real closed items and fix, plus a
#: decision and an open item placed on lines of our choosing so both kinds are exercised.
TRAIN = {
    "cwd": "/workspace",
    "open_items": [{"text": "nothing is pending (compact summary)", "line": 60, "why_open": "test"}],
    "closed_items": [
        {"text": "Run `ls -la`.", "raised_line": 2, "resolved_line": 7},
        {"text": "Create hello_world.py", "raised_line": 10, "resolved_line": 16},
        {
            "text": "Do something requiring multiple tools in one turn.",
            "raised_line": 35,
            "resolved_line": 55,
        },
    ],
    "decisions": [{"text": "use python3 rather than python", "line": 52}],
    "fixes": [{"problem": "python: command not found", "fix": "python3", "problem_line": 48, "fix_line": 52}],
    "declined": [{"text": "cat a missing file", "line": 27}],
}
VALIDATION = {"cwd": "/workspace", "decisions": [{"text": "a decision nobody made", "line": 30}]}


@dataclass(frozen=True)
class Run:
    report: dict[str, Any]
    kept: Path


def stored(home: Path) -> tuple[int, list[int], list[tuple[int, int]]]:
    """What a kept store holds, read with sqlite3: user/assistant messages, idea lines, answered links."""
    with sqlite3.connect(home / "cairn.db") as db:
        messages = db.execute("SELECT count(*) FROM messages WHERE role IN ('user', 'assistant')").fetchone()[
            0
        ]
        lines = [r[0] for r in db.execute("SELECT source_line FROM ideas WHERE source_line IS NOT NULL")]
        links = db.execute(
            "SELECT source_line, resolved_line FROM ideas "
            "WHERE answered_at IS NOT NULL AND resolved_line IS NOT NULL"
        ).fetchall()
    return messages, lines, links


def near(line: int, targets: list[int]) -> bool:
    return any(abs(line - t) <= TOLERANCE for t in targets)


def write_splits(root: Path) -> Path:
    """Two sets over the repository's fixture transcripts, the one session in each: `a` train, `b`
    validation."""
    (root / "train.json").write_text(json.dumps({KEY: TRAIN}))
    (root / "validation.json").write_text(json.dumps({KEY: VALIDATION}))
    transcripts = "{repo}/tests/fixtures/transcripts"
    (root / "splits.json").write_text(
        json.dumps(
            {
                "sets": {
                    "a": {"truth": "train.json", "transcripts": transcripts},
                    "b": {"truth": "validation.json", "transcripts": transcripts},
                },
                "sessions": [
                    {"set": "a", "key": KEY, "project": "fasthooks", "split": "train"},
                    {"set": "b", "key": KEY, "project": "fasthooks", "split": "validation"},
                ],
            }
        )
    )
    return root / "splits.json"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("sessions-eval")
    write_splits(root)
    with pytest.MonkeyPatch.context() as mp:  # the `cairn_home` fixture's isolation, for the module
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        kept = root / "kept"
        report = cairn_json(
            "eval", "sessions", "--splits", str(root / "splits.json"), "--keep-store", str(kept),
            "--out", str(root / "runs"),
        )  # fmt: skip
        yield Run(report, kept)


def test_the_report_holds_each_split_and_session(run: Run) -> None:
    report = run.report
    assert report["benchmark"] == "sessions" and report["model"] == "offline" and report["weights"] is None
    assert list(report["splits"]) == ["train", "validation"]
    assert [(s["set"], s["split"], s["project"]) for s in report["sessions"]] == [
        ("a", "train", "fasthooks"),
        ("b", "validation", "fasthooks"),
    ]
    for split in ("train", "validation"):
        figures = report["splits"][split]
        assert figures["totals"]["sessions"] == 1 and set(figures["projects"]) == {"fasthooks"}
        assert set(figures["totals"]["session_start"]) == {"open", "decisions", "fixes", "conclusions"}
    assert len(list((run.kept.parent / "runs").glob("*-sessions-offline-*.json"))) == 1


def test_the_figures_agree_with_what_the_store_holds(run: Run) -> None:
    train = run.report["sessions"][0]
    messages, lines, links = stored(Path(train["home"]))
    assert lines, "the offline indexer kept nothing from the session"
    assert (train["messages"], train["ideas"]) == (messages, len(lines))
    assert train["ideas_per_100_messages"] == round(100 * len(lines) / messages, 2)
    coverage = train["coverage"]
    closed = [(c["raised_line"], c["resolved_line"]) for c in TRAIN["closed_items"]]
    covered = sum(any(near(line, list(pair)) for line in lines) for pair in closed)
    assert (coverage["closed"]["covered"], coverage["closed"]["labels"]) == (covered, 3)
    assert coverage["decisions"]["covered"] == int(any(near(line, [52]) for line in lines))
    assert coverage["open"]["covered"] == int(any(near(line, [60]) for line in lines))
    # Every uncovered label is listed with its text and lines.
    missed = [m["text"] for part in coverage.values() for m in part["missed"]]
    assert len(missed) == sum(part["labels"] - part["covered"] for part in coverage.values())
    marked = [60, 2, 7, 10, 16, 35, 55, 52, 48, 52]  # declined 27 is not a label to be near
    assert train["near_label"]["near"] == sum(near(line, marked) for line in lines)
    right = sum(near(q, [r]) and near(a, [s]) for q, a in links for r, s in closed)
    assert train["answered_links"]["links"] == len(links)
    assert train["answered_links"]["correct"] == right


def test_the_splits_are_scored_apart(run: Run) -> None:
    train, validation = (run.report["splits"][s]["totals"] for s in ("train", "validation"))
    assert train["coverage"]["closed"]["labels"] == 3 and validation["coverage"]["closed"]["labels"] == 0
    assert validation["coverage"]["decisions"]["labels"] == 1
    assert (
        train["session_start"]["open"]["labels"] == 1 and validation["session_start"]["open"]["labels"] == 0
    )
    # The same transcript, the same offline indexer: the same ideas in both stores.
    assert train["ideas"] == validation["ideas"] and train["messages"] == validation["messages"]


def test_bad_choices_are_refused_in_one_line(cairn_home: Path, tmp_path: Path) -> None:
    unknown = cairn("eval", "sessions", "--split", "test", check=False)
    assert unknown.returncode == 2 and "unknown split test: use train, validation, cross" in unknown.stderr
    shared = cairn("eval", "sessions", "--split", "validation", "--shared", str(tmp_path / "no"), check=False)
    assert shared.returncode == 2 and "--shared PATH or set CAIRN_SHARED" in " ".join(shared.stderr.split())
    weights = cairn("eval", "sessions", "--weights", str(tmp_path / "none.json"), check=False)
    assert weights.returncode == 2 and "no such weights file" in weights.stderr
    assert "Traceback" not in unknown.stderr + shared.stderr + weights.stderr


def test_weights_are_set_for_the_run_and_restored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(WEIGHTS_ENV, "/before.json")
    with offline_weights(tmp_path / "w.json") as in_effect:
        assert in_effect == os.environ[WEIGHTS_ENV] == str(tmp_path / "w.json")
    assert os.environ[WEIGHTS_ENV] == "/before.json"
    monkeypatch.delenv(WEIGHTS_ENV)
    with offline_weights(tmp_path / "w.json"):
        pass
    assert WEIGHTS_ENV not in os.environ
    with offline_weights(None) as in_effect:
        assert in_effect is None


def test_eval_recall_scores_session_start_on_a_split(cairn_home: Path, tmp_path: Path) -> None:
    splits = write_splits(tmp_path)
    qa = tmp_path / "qa.json"
    question = {"id": "q1", "session": KEY, "question": "Why did running number_generator.py fail?",
                "answer": "python: command not found", "category": "problem",
                "evidence": [{"file": KEY, "line": 48}]}  # fmt: skip
    qa.write_text(json.dumps([question]))
    everyday = tmp_path / "everyday.json"
    everyday.write_text(json.dumps(["thanks, looks good"]))
    common = ("eval", "recall", str(qa), "--transcripts", str(REAL_TRANSCRIPTS), "--everyday", str(everyday))
    run = cairn_json(*common, "--split", "train", "--splits", str(splits))
    assert run["split"] == ["train"] and run["truth"] == "splits.json"
    session_start = run["session_start"]
    assert list(session_start["per_session"]) == [f"a/{KEY}"]  # the train session only, keyed by its set
    assert (
        session_start["totals"]["open"]["labels"] == 1 and session_start["totals"]["decisions"]["labels"] == 1
    )
    both = cairn(*common, "--split", "train", "--truth", str(tmp_path / "train.json"), check=False)
    assert both.returncode == 2 and "--truth and --split exclude each other" in both.stderr
