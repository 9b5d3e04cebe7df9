"""`cairn.evals.splits`: `{repo}` and `{shared}` resolved, sets read only when used, and every problem
refused in one line that says what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.evals.questions import BenchmarkError
from cairn.evals.splits import DEFAULT_SPLITS, SHARED_ENV, load_sessions, load_splits, select, shared_folder
from tests.evals.helpers import write_json

LABELS = {"cwd": "/proj", "decisions": [{"text": "d", "line": 2}]}


@pytest.fixture
def layout(tmp_path: Path, transcripts: Path) -> dict[str, Path]:
    """A fake repository and shared folder, each with a set: `local` at {repo}, `far` at {shared}."""
    repo, shared = tmp_path / "repo", tmp_path / "shared"
    (repo / "data").mkdir(parents=True)
    transcripts.rename(repo / "data" / "transcripts")
    (shared / "corpus" / "proj").mkdir(parents=True)
    (repo / "data" / "transcripts" / "proj" / "x.jsonl").replace(shared / "corpus" / "proj" / "z.jsonl")
    write_json(tmp_path / "local.json", {"proj/y.jsonl": {"cwd": "/proj"}})
    write_json(tmp_path / "far.json", {"proj/z.jsonl": LABELS})
    return {"root": tmp_path, "repo": repo, "shared": shared}


def splits_file(root: Path, sessions: list[dict[str, Any]] | None = None, **sets: Any) -> Path:
    return write_json(
        root / "splits.json",
        {
            "sets": sets
            or {
                "local": {"truth": "local.json", "transcripts": "{repo}/data/transcripts"},
                "far": {"truth": "far.json", "transcripts": "{shared}/corpus"},
            },
            "sessions": sessions
            or [
                {"set": "local", "key": "proj/y.jsonl", "project": "proj", "split": "train"},
                {"set": "far", "key": "proj/z.jsonl", "project": "proj", "split": "validation"},
            ],
        },
    )


def test_repo_and_shared_are_resolved_and_sessions_loaded(layout: dict[str, Path]) -> None:
    path = splits_file(layout["root"])
    splits = load_splits(path, repo=layout["repo"], shared=layout["shared"])
    assert splits.transcripts == {
        "local": layout["repo"] / "data" / "transcripts",
        "far": layout["shared"].resolve() / "corpus",
    }
    assert splits.truth["far"] == layout["root"] / "far.json"  # relative to the splits file
    assert splits.present() == ["train", "validation"]
    sessions = load_sessions(splits, select(splits, ["validation"]))
    assert [(s.name, s.split, s.project) for s in sessions] == [("far/proj/z.jsonl", "validation", "proj")]
    assert sessions[0].path == layout["shared"].resolve() / "corpus" / "proj" / "z.jsonl"
    assert sessions[0].truth.decisions[0].line == 2


def test_the_shared_folder_defaults_beside_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    assert shared_folder(None, repo, env={}) == (tmp_path / "shared").resolve()
    assert shared_folder(None, repo, env={SHARED_ENV: str(tmp_path / "elsewhere")}) == tmp_path / "elsewhere"
    assert shared_folder(tmp_path / "given", repo, env={SHARED_ENV: "/nope"}) == tmp_path / "given"


def test_a_split_of_only_repository_sessions_needs_no_shared_folder(layout: dict[str, Path]) -> None:
    splits = load_splits(splits_file(layout["root"]), repo=layout["repo"], shared=layout["root"] / "missing")
    assert [s.key for s in load_sessions(splits, select(splits, ["train"]))] == ["proj/y.jsonl"]


def test_a_missing_shared_folder_says_to_pass_it(layout: dict[str, Path]) -> None:
    splits = load_splits(splits_file(layout["root"]), repo=layout["repo"], shared=layout["root"] / "missing")
    with pytest.raises(BenchmarkError) as caught:
        load_sessions(splits, select(splits))
    message = str(caught.value)
    assert "set far" in message and str(layout["root"] / "missing") in message
    assert "--shared PATH" in message and SHARED_ENV in message and "\n" not in message


def test_a_missing_transcript_names_it(layout: dict[str, Path]) -> None:
    (layout["shared"] / "corpus" / "proj" / "z.jsonl").unlink()
    splits = load_splits(splits_file(layout["root"]), repo=layout["repo"], shared=layout["shared"])
    with pytest.raises(
        BenchmarkError, match=r"set far: far.json: session proj/z.jsonl: transcript not found"
    ):
        load_sessions(splits, select(splits, ["validation"]))


def test_unknown_split_names_are_refused(layout: dict[str, Path]) -> None:
    splits = load_splits(splits_file(layout["root"]), repo=layout["repo"], shared=layout["shared"])
    with pytest.raises(BenchmarkError, match="unknown split test: use train, validation, cross"):
        select(splits, ["train", "test"])
    with pytest.raises(BenchmarkError, match="no labelled session in split cross"):
        select(splits, ["cross"])
    with pytest.raises(BenchmarkError, match=r"no labelled session in split train and project other \(its "):
        select(splits, ["train"], "other")
    bad = [{"set": "local", "key": "proj/y.jsonl", "project": "proj", "split": "holdout"}]
    with pytest.raises(BenchmarkError, match=r"session proj/y\.jsonl: unknown split 'holdout'"):
        load_splits(splits_file(layout["root"], bad), repo=layout["repo"])


@pytest.mark.parametrize(
    ("sessions", "error"),
    [
        ([{"set": "nope", "key": "k", "project": "p", "split": "train"}], "unknown set 'nope'"),
        ([{"set": "local", "key": "k", "project": "", "split": "train"}], "`project` must be a non-empty"),
        ([{"set": "local", "key": "proj/y.jsonl", "project": "p", "split": "train"}] * 2, "listed twice"),
    ],
)
def test_bad_entries_are_refused_before_any_work(
    layout: dict[str, Path], sessions: list[dict[str, Any]], error: str
) -> None:
    with pytest.raises(BenchmarkError, match=error):
        load_splits(splits_file(layout["root"], sessions), repo=layout["repo"])


def test_a_key_missing_from_its_truth_file_is_refused(layout: dict[str, Path]) -> None:
    sessions = [{"set": "local", "key": "proj/x.jsonl", "project": "proj", "split": "train"}]
    splits = load_splits(splits_file(layout["root"], sessions), repo=layout["repo"])
    with pytest.raises(BenchmarkError, match=r"session proj/x.jsonl: not in set local's local.json"):
        load_sessions(splits, select(splits))


def test_the_repository_splits_file_is_well_formed() -> None:
    splits = load_splits(DEFAULT_SPLITS)
    assert {"train", "validation"} <= set(splits.present())
    repo_sets = [e for e in splits.entries if e.set not in splits.on_shared]
    assert len(load_sessions(splits, repo_sets)) == len(repo_sets)  # the repository's own transcripts load
