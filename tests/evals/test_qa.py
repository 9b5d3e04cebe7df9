"""Reading an evidence-line QA set: everything is checked before anything is backfilled, and each fault is
one line naming the file and the item."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.evals.benchmark import BenchmarkError, Evidence
from cairn.evals.qa import DEFAULT_QA, DEFAULT_QA_TRANSCRIPTS, load_qa, resolve_qa
from tests.evals.helpers import write_json


def item(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "d07",
        "session": "proj/x.jsonl",
        "question": "why?",
        "answer": "because",
        "category": "decision",
        "evidence": [{"file": "proj/x.jsonl", "line": 2}, {"file": "proj/y.jsonl", "line": 1}],
    }
    return {**base, **changes}


def write(tmp_path: Path, data: Any) -> Path:
    return write_json(tmp_path / "qa.json", data)


def test_a_good_set_names_every_transcript_once(tmp_path: Path, transcripts: Path) -> None:
    second = item(id="d08", category="exact", evidence=[{"file": "proj/x.jsonl", "line": 5}] * 2)
    loaded = load_qa(write(tmp_path, [item(), second]), transcripts)
    assert list(loaded.files) == ["proj/x.jsonl", "proj/y.jsonl"]
    assert loaded.files["proj/y.jsonl"] == transcripts / "proj" / "y.jsonl"
    first, other = loaded.questions
    assert first.id == "d07" and first.category == "decision" and first.session == "proj/x.jsonl"
    assert first.evidence == (Evidence("proj/x.jsonl", 2), Evidence("proj/y.jsonl", 1))
    assert other.evidence == (Evidence("proj/x.jsonl", 5),)  # duplicates count once


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[{", "qa.json: not JSON: "),
        ({"questions": []}, "qa.json: expected a non-empty JSON list of questions"),
        ([], "qa.json: expected a non-empty JSON list of questions"),
        (["d07"], "qa.json: item #1: expected an object, got str"),
        (
            [item(session="proj/gone.jsonl")],
            "qa.json: item d07: transcript proj/gone.jsonl not found in ",
        ),
        (
            [item(evidence=[{"file": "proj/x.jsonl", "line": 950}])],
            "qa.json: item d07: evidence line 950 is past the end of proj/x.jsonl (5 lines)",
        ),
        (
            [item(evidence=[{"file": "proj/y.jsonl", "line": 2}])],
            "qa.json: item d07: evidence line 2 is past the end of proj/y.jsonl (1 lines)",
        ),
        (
            [item(category="trivia")],
            "qa.json: item d07: category 'trivia' is unknown (use decision, problem, howto, exact, todo)",
        ),
        ([item(evidence=[])], "qa.json: item d07: evidence: List should have at least 1 item"),
        ([item(evidence=[{"file": "proj/x.jsonl", "line": 0}])], "qa.json: item d07: evidence.0.line: "),
        ([{k: v for k, v in item().items() if k != "question"}], "qa.json: item d07: question is missing"),
        ([{k: v for k, v in item().items() if k != "id"}], "qa.json: item #1: id is missing"),
        ([item(), item()], "qa.json: item d07: the id is used twice"),
        (
            [item(session="/etc/passwd")],
            "qa.json: item d07: session: '/etc/passwd' must be a path relative to the transcripts directory",
        ),
        (
            [item(evidence=[{"file": "../x.jsonl", "line": 1}])],
            "qa.json: item d07: evidence.0.file: '../x.jsonl' must be a path relative to the transcripts",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_file_and_the_item(
    tmp_path: Path, transcripts: Path, data: Any, message: str
) -> None:
    with pytest.raises(BenchmarkError) as caught:
        load_qa(write(tmp_path, data), transcripts)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_missing_file_or_directory(tmp_path: Path, transcripts: Path) -> None:
    with pytest.raises(BenchmarkError, match=r"qa\.json: cannot read"):
        load_qa(tmp_path / "qa.json", transcripts)
    with pytest.raises(BenchmarkError, match="no such transcripts directory"):
        load_qa(write(tmp_path, [item()]), tmp_path / "nowhere")


def test_the_repository_carries_the_default_set_and_its_transcripts() -> None:
    """`cairn eval qa` with no file scores coding-qa-dev from the clone itself: no folder beside it."""
    qa_file, transcripts = resolve_qa(None, None)
    assert (qa_file, transcripts) == (DEFAULT_QA, DEFAULT_QA_TRANSCRIPTS)
    data = load_qa(qa_file, transcripts)
    assert len(data.questions) == 60 and len(data.files) == 6
    assert all(path.is_relative_to(transcripts) and path.is_file() for path in data.files.values())


def test_a_set_of_ones_own_must_name_its_transcripts(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="--transcripts DIR"):
        resolve_qa(tmp_path / "mine.json", None)
    assert resolve_qa(tmp_path / "mine.json", tmp_path) == (tmp_path / "mine.json", tmp_path)
