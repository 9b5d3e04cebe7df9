"""`cairn eval recall` end to end on one small real session (entireio-cli 5dd7775c: prepare-commit-msg
prompting during a rebase, 115 lines): three QA questions whose evidence lines were read off the
transcript, its session-truth labels, three everyday prompts. The default run (every set of the
repository) takes about a minute; this one takes seconds. Checked: the report's shape, that every figure
is a share, that the curves only fall as a floor rises and agree with what recall did at the configured
floors, that the baseline fires whenever the search finds anything, that an impossible specificity floor
silences recall, and that bad input is refused in one line with exit code 2 before any store is built."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cairn.evals.truth import DEFAULT_TRUTH, SECTIONS
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.paths import REAL_TRANSCRIPTS

pytestmark = pytest.mark.slow

KEY = "entireio-cli/5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl"
#: What the prompts of this session should recall, with the lines that answer each (read off the file).
QUESTIONS = [
    # 20: git calls prepare-commit-msg for each replayed commit with no "rebase" source;
    # 58: the fix checks rebase-merge/, rebase-apply/, CHERRY_PICK_HEAD and REVERT_HEAD.
    ("r1", "Why did the prepare-commit-msg hook prompt during git rebase, and how do we detect a rebase?",
     "problem", [20, 58]),
    # 42: golangci-lint "os/exec.Command must not be called. use os/exec.CommandContext"; 44: the switch.
    ("r2", "Which golangci-lint complaint made us switch to exec.CommandContext?", "problem", [42, 44]),
    # 93: the user asks for the existing GetGitDir() helper; 101: isGitSequenceOperation() now uses it.
    ("r3", "Why does isGitSequenceOperation call GetGitDir?", "decision", [93, 101]),
]  # fmt: skip
EVERYDAY = ["run the tests again", "thanks, looks good", "what time is it?"]
FRACTIONS = ("fired", "hit_rate", "precision", "item_precision", "false_fire", "recall")


@dataclass(frozen=True)
class Runs:
    root: Path
    home: Path  #: CAIRN_HOME during the runs: the user's store, which the eval must not touch
    truth: dict[str, Any]
    default: dict[str, Any]  #: with --truth and --keep-store
    silenced: dict[str, Any]  #: --min-specificity 100, no truth
    results: dict[str, int]  #: prompt -> how many results `cairn search` gives it in the kept store


def transcript_cwd(path: Path) -> str:
    cwds = {json.loads(raw).get("cwd") for raw in path.read_text(encoding="utf-8").splitlines() if raw}
    cwds.discard(None)
    assert len(cwds) == 1, cwds
    return str(cwds.pop())


def write_sets(root: Path) -> tuple[Path, Path, Path, Path, dict[str, Any]]:
    """The transcripts directory (one file, at its relative path), QA, truth and everyday files."""
    transcripts = root / "transcripts"
    (transcripts / KEY).parent.mkdir(parents=True)
    shutil.copyfile(REAL_TRANSCRIPTS / KEY, transcripts / KEY)
    qa = root / "qa.json"
    qa.write_text(
        json.dumps(
            [
                {"id": qid, "session": KEY, "question": question, "answer": "-", "category": category,
                 "evidence": [{"file": KEY, "line": line} for line in lines]}
                for qid, question, category, lines in QUESTIONS
            ]
        )
    )  # fmt: skip
    labels = json.loads(DEFAULT_TRUTH.read_text(encoding="utf-8"))[KEY]  # this session's own labels
    truth = {KEY: {**labels, "cwd": transcript_cwd(transcripts / KEY)}}
    truth_file = root / "truth.json"
    truth_file.write_text(json.dumps(truth))
    everyday = root / "everyday.json"
    everyday.write_text(json.dumps(EVERYDAY))
    return transcripts, qa, truth_file, everyday, truth


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("recall-eval")
    transcripts, qa, truth_file, everyday, truth = write_sets(root)
    env = {"HOME": str(root / "user-home")}
    with pytest.MonkeyPatch.context() as mp:  # the `cairn_home` fixture's isolation, for the module
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        common = (str(qa), "--transcripts", str(transcripts), "--everyday", str(everyday))
        keep = root / "kept"
        default = cairn_json(
            "eval", "recall", *common, "--truth", str(truth_file), "--keep-store", str(keep), env=env
        )
        results = {}
        for prompt in [q[1] for q in QUESTIONS] + EVERYDAY:
            found = cairn_json(
                "search", prompt, "--min-score", "0", "--limit", "3",
                env={**env, "CAIRN_HOME": str(keep / "prompts")},
            )  # fmt: skip
            results[prompt] = len(found["results"])
        silenced = cairn_json("eval", "recall", *common, "--min-specificity", "100", env=env)
    yield Runs(root, root / "home", truth, default, silenced, results)


def fractions(node: Any, where: str = "") -> Iterator[tuple[str, float]]:
    """Every share in the report (fired, hit rate, precision, false fires, recall), with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in FRACTIONS and isinstance(value, (int, float)) and not isinstance(value, bool):
                yield f"{where}.{key}", float(value)
            elif key == "by_source":
                yield from ((f"{where}.by_source.{k}", float(v)) for k, v in value.items())
            else:
                yield from fractions(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from fractions(value, f"{where}[{i}]")


def test_the_report_has_every_measure(runs: Runs) -> None:
    run = runs.default
    assert run["benchmark"] == "recall" and run["model"] == "offline" and run["tolerance"] == 3
    assert run["dataset"] == "qa.json" and run["truth"] == "truth.json"
    assert run["store"]["files"] == 1 and run["store"]["messages"] > 0
    for name in ("recall", "baseline"):
        figures = run["prompts"][name]
        assert figures["prompts"] == len(QUESTIONS)
        assert {"fired", "hit_rate", "precision", "items_per_fired", "tokens_per_fired"} <= set(figures)
        assert set(figures["latency_ms"]) == {"p50", "p95"}
    off = run["off_topic"]
    assert off["prompts"] == len(EVERYDAY) and off["sources"] == {"everyday": len(EVERYDAY)}
    assert isinstance(off["recall"]["false_fire"], float) and isinstance(off["baseline"]["false_fire"], float)
    assert set(off["recall"]["by_source"]) == {"everyday"}
    assert set(run["curve"]) == {"min_specificity", "min_score"}
    for over, rows in run["curve"].items():
        assert isinstance(rows, list) and len(rows) > 1
        assert all(set(row) == {over, "fired", "hit_rate", "precision", "false_fire"} for row in rows)
    assert [case["id"] for case in run["cases"]] == [q[0] for q in QUESTIONS]
    session_start = run["session_start"]
    assert session_start["sessions"] == 1 and set(session_start["per_session"]) == {KEY}
    assert set(session_start["totals"]) == set(SECTIONS) == {"open", "decisions", "fixes", "conclusions"}
    assert not Path(runs.home / "cairn.db").exists()  # the user's store is untouched


def test_every_figure_is_a_share(runs: Runs) -> None:
    found = dict(fractions(runs.default)) | {f"silenced{k}": v for k, v in fractions(runs.silenced)}
    assert len(found) > 50  # the walk reached the curves and SessionStart, not just the top
    assert any(".session_start.totals.decisions.recall" in k for k in found)
    outside = {where: value for where, value in found.items() if not 0.0 <= value <= 1.0}
    assert outside == {}


def test_the_curves_only_fall_as_a_floor_rises(runs: Runs) -> None:
    for run in (runs.default, runs.silenced):
        for over, rows in run["curve"].items():
            floors = [row[over] for row in rows]
            assert floors == sorted(floors) and len(set(floors)) == len(floors)
            for name in ("fired", "hit_rate", "false_fire"):
                values = [row[name] for row in rows]
                assert values == sorted(values, reverse=True), (over, name, values)
            assert all(row["hit_rate"] <= row["fired"] for row in rows)


def test_the_curves_agree_with_recall_at_the_configured_floors(runs: Runs) -> None:
    run = runs.default
    settings = run["settings"]
    recall, off = run["prompts"]["recall"], run["off_topic"]["recall"]
    for over in ("min_specificity", "min_score"):
        [row] = [r for r in run["curve"][over] if r[over] == settings[f"recall_{over}"]]
        assert (row["fired"], row["hit_rate"], row["false_fire"]) == (
            recall["fired"],
            recall["hit_rate"],
            off["false_fire"],
        )
    fired = [case for case in run["cases"] if case["injected"]]
    assert recall["fired"] == round(len(fired) / len(QUESTIONS), 4)
    for case in run["cases"]:
        assert len(case["injected"]) <= settings["recall_prompt_lines"]
        for item in case["injected"]:
            assert item["score"] >= settings["recall_min_score"] - 1e-4
            assert item["specificity"] >= settings["recall_min_specificity"]


def test_the_baseline_fires_on_every_prompt_the_search_answers(runs: Runs) -> None:
    run = runs.default
    on_topic = [runs.results[q[1]] > 0 for q in QUESTIONS]
    off_topic = [runs.results[p] > 0 for p in EVERYDAY]
    assert run["prompts"]["baseline"]["fired"] == round(sum(on_topic) / len(on_topic), 4)
    assert run["off_topic"]["baseline"]["false_fire"] == round(sum(off_topic) / len(off_topic), 4)
    assert all(on_topic)  # the session talks about each question
    # The evidence lines are where the search finds the answers: the wiring of files and lines holds.
    assert run["prompts"]["baseline"]["hit_rate"] > 0


def test_session_start_is_scored_against_the_truth_file(runs: Runs) -> None:
    totals = runs.default["session_start"]["totals"]
    labels = runs.truth[KEY]
    assert totals["open"]["labels"] == len(labels["open_items"]) == 0
    assert totals["decisions"]["labels"] == len(labels["decisions"]) == 3
    assert totals["fixes"]["labels"] == len(labels["fixes"]) == 3
    assert "labels" not in totals["conclusions"]
    assert sum(row["shown"] for row in totals.values()) > 0  # the truth's cwd found the session's project
    for section, row in totals.items():
        assert row["correct"] <= row["shown"], section
        if section != "conclusions":
            assert row["recalled"] <= row["labels"], section
    per_session = runs.default["session_start"]["per_session"][KEY]
    assert per_session["text"] and per_session["tokens"] > 0


def test_an_impossible_specificity_floor_silences_recall(runs: Runs) -> None:
    run, default = runs.silenced, runs.default
    assert run["settings"]["recall_min_specificity"] == 100.0
    assert run["prompts"]["recall"]["fired"] == 0.0 and run["prompts"]["recall"]["hit_rate"] == 0.0
    assert run["prompts"]["recall"]["precision"] is None
    assert run["off_topic"]["recall"]["false_fire"] == 0.0 and run["off_topic"]["fired"] == []
    assert all(not case["injected"] for case in run["cases"])
    assert all(row["fired"] == 0.0 for row in run["curve"]["min_score"])  # drawn at that floor
    # The specificity curve sweeps its own floor at the same score floor: the same curve as before.
    assert run["curve"]["min_specificity"] == default["curve"]["min_specificity"]
    assert default["prompts"]["recall"]["fired"] > 0  # the floor, not the store, silenced it
    # The baseline has no floor: the same as without one.
    assert run["prompts"]["baseline"]["fired"] == default["prompts"]["baseline"]["fired"]
    assert run["session_start"] is None and run["truth"] is None  # a QA file alone: no truth by default
    assert not Path(run["home"]).exists()  # the stores are temporary without --keep-store


# ---------------------------------------------------------------------------------------------------
# Bad input: one line, exit code 2, before any store is built


@pytest.fixture
def sets(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    transcripts, qa, truth, everyday, _labels = write_sets(tmp_path)
    return transcripts, qa, truth, everyday


def refused(proc: Any, tmp_path: Path) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.endswith("\n") and proc.stderr.count("\n") == 1, proc.stderr
    assert not list(tmp_path.rglob("cairn.db"))
    return str(proc.stderr)


def test_a_qa_file_needs_its_transcripts(cairn_home: Path, tmp_path: Path, sets: tuple[Path, ...]) -> None:
    _transcripts, qa, _truth, everyday = sets
    proc = cairn("eval", "recall", str(qa), "--everyday", str(everyday), check=False)
    assert refused(proc, tmp_path) == "error: qa.json: say where its transcripts are: --transcripts DIR\n"


def test_a_truth_file_naming_a_missing_transcript(
    cairn_home: Path, tmp_path: Path, sets: tuple[Path, ...]
) -> None:
    transcripts, qa, truth, everyday = sets
    labels = json.loads(truth.read_text())[KEY]
    truth.write_text(json.dumps({KEY: labels, "entireio-cli/missing.jsonl": labels}))
    proc = cairn(
        "eval", "recall", str(qa), "--transcripts", str(transcripts), "--truth", str(truth),
        "--everyday", str(everyday), check=False,
    )  # fmt: skip
    assert refused(proc, tmp_path) == (
        f"error: truth.json: session entireio-cli/missing.jsonl: transcript not found in {transcripts}\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"prompts": ["commit this"]}', "everyday.json: expected a JSON list of non-empty prompt strings"),
        ('["commit this", 3]', "everyday.json: expected a JSON list of non-empty prompt strings"),
        ('["commit this", "  "]', "everyday.json: expected a JSON list of non-empty prompt strings"),
        ('["commit this"', "everyday.json: not JSON: "),
    ],
)
def test_an_everyday_file_must_be_a_list_of_prompts(
    cairn_home: Path, tmp_path: Path, sets: tuple[Path, ...], content: str, message: str
) -> None:
    transcripts, qa, _truth, everyday = sets
    everyday.write_text(content)
    proc = cairn(
        "eval", "recall", str(qa), "--transcripts", str(transcripts), "--everyday", str(everyday), check=False
    )
    assert refused(proc, tmp_path).startswith(f"error: {message}")
