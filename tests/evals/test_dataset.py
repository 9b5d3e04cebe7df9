"""Loading eval datasets: a valid one loads whole; every labelling mistake is named with its file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.evals import dataset as dataset_module
from cairn.evals.dataset import DatasetError, load_dataset
from tests.evals import DEMO_QUERIES, demo_labels, make_dataset


def test_a_valid_dataset_loads_with_its_labels_and_queries(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "tiny", queries=DEMO_QUERIES)
    data = load_dataset(root)
    assert data.name == "tiny"
    assert [case.name for case in data.cases] == ["demo"]
    labels = data.cases[0].labels
    assert [idea.key for idea in labels.ideas][:3] == ["i1", "i2", "i3"]
    assert labels.relations[0].from_ == "i3" and labels.relations[0].to == "i2"
    assert labels.entities[1].names == ["PostgreSQL", "Postgres"]
    assert [q.id for q in data.queries] == ["q1"]
    assert data.queries[0].lines == [11]


def _error(root: Path) -> str:
    with pytest.raises(DatasetError) as caught:
        load_dataset(root)
    return str(caught.value)


def _with(tmp_path: Path, **changes: object) -> Path:
    labels = demo_labels()
    labels.update(changes)
    return make_dataset(tmp_path / "ds", labels)


def test_a_session_without_labels_is_named(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds")
    (root / "labels" / "demo.json").unlink()
    message = _error(root)
    assert "labels/demo.json" in message and "missing" in message


def test_labels_without_a_session_are_named(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds")
    (root / "labels" / "other.json").write_text("{}")
    assert "labels without a session: other.json" in _error(root)


def test_no_sessions_at_all(tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    assert "no sessions/*.jsonl" in _error(tmp_path / "ds")


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds")
    (root / "labels" / "demo.json").write_text("{not json")
    message = _error(root)
    assert "demo.json" in message and "not valid JSON" in message


def test_duplicate_idea_keys(tmp_path: Path) -> None:
    labels = demo_labels()
    labels["ideas"][1]["key"] = "i1"
    message = _error(make_dataset(tmp_path / "ds", labels))
    assert "duplicate idea keys: i1" in message


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("relations", [{"type": "supersedes", "from": "i3", "to": "i42"}], "unknown idea key 'i42'"),
        ("answered", [{"question": "i4", "answer": "nope"}], "answered.answer refers to unknown idea key"),
        ("completed", [{"todo": "i99", "line": 27}], "completed.todo refers to unknown idea key"),
        ("relations", [{"type": "supersedes", "from": "i3", "to": "i3"}], "links idea 'i3' to itself"),
    ],
)
def test_references_must_exist(tmp_path: Path, field: str, value: object, expected: str) -> None:
    assert expected in _error(_with(tmp_path, **{field: value}))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("completed", [{"todo": "i7", "line": 30}]),
        ("topics", [{"line": 40, "name": "far"}]),
        ("skip_lines", [0]),
    ],
)
def test_lines_must_lie_inside_the_transcript(tmp_path: Path, field: str, value: object) -> None:
    message = _error(_with(tmp_path, **{field: value}))
    assert "demo.json" in message


def test_an_idea_line_past_the_end(tmp_path: Path) -> None:
    labels = demo_labels()
    labels["ideas"][0]["line"] = 30
    assert "line 30 is outside the transcript (lines 1-29)" in _error(make_dataset(tmp_path / "ds", labels))


def test_an_unknown_intent_or_field_is_refused(tmp_path: Path) -> None:
    labels = demo_labels()
    labels["ideas"][0]["intent"] = "musing"
    assert "ideas.0.intent" in _error(make_dataset(tmp_path / "a", labels))
    labels = demo_labels()
    labels["skiplines"] = [3]
    assert "skiplines" in _error(make_dataset(tmp_path / "b", labels))


def test_case_name_must_match_the_file(tmp_path: Path) -> None:
    assert "'case' is 'other'" in _error(_with(tmp_path, case="other"))


def test_an_empty_secret_is_refused(tmp_path: Path) -> None:
    assert "empty secret" in _error(_with(tmp_path, secrets=["  "]))


def test_queries_must_name_known_cases_keys_and_lines(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds")
    bad = [
        ({"id": "q", "query": "x", "case": "nope", "ideas": ["i1"]}, "unknown case 'nope'"),
        ({"id": "q", "query": "x", "case": "demo", "ideas": ["i77"]}, "unknown idea keys of case demo: i77"),
        ({"id": "q", "query": "x", "case": "demo", "lines": [31]}, "outside the transcript"),
    ]
    for query, expected in bad:
        (root / "queries.json").write_text(json.dumps({"queries": [query]}))
        message = _error(root)
        assert "queries.json: query q" in message and expected in message


def test_split_query_files_are_merged_and_ids_stay_unique(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds")
    first = {"queries": [{"id": "a1", "query": "why locked", "case": "demo", "lines": [2]}]}
    second = {"queries": [{"id": "b1", "query": "postgres?", "case": "demo", "ideas": ["i6"]}]}
    (root / "queries-a.json").write_text(json.dumps(first))
    (root / "queries-b.json").write_text(json.dumps(second))
    assert [q.id for q in load_dataset(root).queries] == ["a1", "b1"]
    (root / "queries-b.json").write_text(json.dumps(first))
    assert "id already used in" in _error(root)


def test_the_default_dataset_missing_says_to_pass_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset_module, "DEFAULT_DATASET", tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="pass --dataset"):
        load_dataset()


def test_a_missing_directory(tmp_path: Path) -> None:
    assert "no such dataset directory" in _error(tmp_path / "absent")
