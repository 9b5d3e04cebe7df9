"""Session-truth sets: the loader checks everything up front and fails in one line naming the file and the
session; the SessionStart scorer matches shown items to labels one to one, nearest first, within a line
tolerance, and counts the costly errors (a finished or rejected item shown as open, a rejected suggestion
shown as a fact) apart. Scoring rules: evals/datasets/session-truth-dev/README.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.evals.questions import BenchmarkError
from cairn.evals.truth import (
    DEFAULT_TRUTH,
    SECTIONS,
    SessionTruth,
    Shown,
    Stored,
    idea_totals,
    load_truth,
    score_ideas,
    score_session,
    totals,
)
from tests.evals.helpers import write_json
from tests.helpers.paths import REAL_TRANSCRIPTS

# ---------------------------------------------------------------------------------------------------
# Loading


def session(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cwd": "/work/proj",
        "summary": "a short session",
        "open_items": [{"text": "still to do", "line": 2, "why_open": "nothing later"}],
        "closed_items": [{"text": "done", "raised_line": 1, "resolved_line": 3}],
        "decisions": [{"text": "use WAL", "line": 4}],
        "fixes": [{"problem": "flaky", "fix": "retry", "problem_line": 1, "fix_line": 5}],
        "declined": [{"text": "not Postgres", "line": 3}],
    }
    return {**base, **changes}


def write(tmp_path: Path, data: Any) -> Path:
    return write_json(tmp_path / "truth.json", data)


def test_the_repository_set_loads_eight_sessions_with_eight_open_items() -> None:
    loaded = load_truth(DEFAULT_TRUTH, REAL_TRANSCRIPTS)
    assert len(loaded.sessions) == 8
    assert sum(len(t.open_items) for t in loaded.sessions.values()) == 8
    # The README's table, total row.
    assert sum(len(t.closed_items) for t in loaded.sessions.values()) == 59
    assert sum(len(t.decisions) for t in loaded.sessions.values()) == 24
    assert sum(len(t.fixes) for t in loaded.sessions.values()) == 18
    assert sum(len(t.declined) for t in loaded.sessions.values()) == 7
    assert set(loaded.files) == set(loaded.sessions)
    assert all(path == REAL_TRANSCRIPTS / key and path.is_file() for key, path in loaded.files.items())
    no_open = [key for key, t in loaded.sessions.items() if not t.open_items]
    assert sorted(key.rsplit("/", 1)[-1][:8] for key in no_open) == ["5dd7775c", "cd46624d", "sample_m"]


def test_a_good_set_keeps_every_label(tmp_path: Path, transcripts: Path) -> None:
    loaded = load_truth(
        write(tmp_path, {"proj/x.jsonl": session(), "proj/y.jsonl": session(**empty_lists(), cwd="/y")}),
        transcripts,
    )
    assert loaded.path == tmp_path / "truth.json" and loaded.transcripts == transcripts
    assert loaded.files == {
        "proj/x.jsonl": transcripts / "proj" / "x.jsonl",
        "proj/y.jsonl": transcripts / "proj" / "y.jsonl",
    }
    x = loaded.sessions["proj/x.jsonl"]
    assert x.cwd == "/work/proj" and x.open_items[0].line == 2 and x.fixes[0].fix_line == 5
    assert sorted(x.lines()) == [1, 1, 2, 3, 3, 4, 5]  # open, closed x2, decision, fix x2, declined
    assert loaded.sessions["proj/y.jsonl"].lines() == []


def empty_lists() -> dict[str, list[Any]]:
    return {name: [] for name in ("open_items", "closed_items", "decisions", "fixes", "declined")}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{", "truth.json: not JSON: "),
        ([session()], "truth.json: expected a non-empty JSON object keyed by transcript path"),
        ({}, "truth.json: expected a non-empty JSON object keyed by transcript path"),
        (
            {"proj/x.jsonl": ["not", "a", "session"]},
            "truth.json: session proj/x.jsonl: Input should be a valid dictionary",
        ),
        (
            {"proj/gone.jsonl": session()},
            "truth.json: session proj/gone.jsonl: transcript not found in ",
        ),
        (
            {"proj/x.jsonl": session(open_items=[{"text": "t", "line": 6}])},
            "truth.json: session proj/x.jsonl: line 6 is past the end (5 lines)",
        ),
        (
            {"proj/x.jsonl": session(closed_items=[{"text": "t", "raised_line": 1, "resolved_line": 9}])},
            "truth.json: session proj/x.jsonl: line 9 is past the end (5 lines)",
        ),
        (
            {"proj/y.jsonl": session(**{**empty_lists(), "declined": [{"text": "t", "line": 2}]})},
            "truth.json: session proj/y.jsonl: line 2 is past the end (1 lines)",
        ),
        (
            {"proj/x.jsonl": session(decisions=[{"text": "use WAL"}])},
            "truth.json: session proj/x.jsonl: decisions.0.line is missing",
        ),
        (
            {"proj/x.jsonl": session(fixes=[{"problem": "p", "fix": "f", "problem_line": 1}])},
            "truth.json: session proj/x.jsonl: fixes.0.fix_line is missing",
        ),
        (
            {"proj/x.jsonl": {k: v for k, v in session().items() if k != "cwd"}},
            "truth.json: session proj/x.jsonl: cwd is missing",
        ),
        (
            {"proj/x.jsonl": session(open_items=[{"text": "t", "line": 0}])},
            "truth.json: session proj/x.jsonl: open_items.0.line: ",
        ),
        (
            {"/etc/passwd": session()},
            "truth.json: session /etc/passwd: '/etc/passwd' must be a path relative to the transcripts "
            "directory",
        ),
        (
            {"../proj/x.jsonl": session()},
            "truth.json: session ../proj/x.jsonl: '../proj/x.jsonl' must be a path relative to the "
            "transcripts directory",
        ),
        (
            {"proj/../proj/x.jsonl": session()},
            "truth.json: session proj/../proj/x.jsonl: 'proj/../proj/x.jsonl' must be a path relative",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_file_and_the_session(
    tmp_path: Path, transcripts: Path, data: Any, message: str
) -> None:
    with pytest.raises(BenchmarkError) as caught:
        load_truth(write(tmp_path, data), transcripts)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_fault_in_a_later_session_fails_the_whole_set(tmp_path: Path, transcripts: Path) -> None:
    """Everything is checked before any work: a good first session does not get through alone."""
    data = {"proj/x.jsonl": session(), "proj/y.jsonl": session(decisions=[{"text": "d", "line": 4}])}
    with pytest.raises(BenchmarkError, match=r"^truth\.json: session proj/y\.jsonl: line \d is past the end"):
        load_truth(write(tmp_path, data), transcripts)


def test_a_missing_file_or_transcripts_directory(tmp_path: Path, transcripts: Path) -> None:
    with pytest.raises(BenchmarkError, match=r"^truth\.json: cannot read"):
        load_truth(tmp_path / "truth.json", transcripts)
    with pytest.raises(BenchmarkError, match="no such transcripts directory"):
        load_truth(write(tmp_path, {"proj/x.jsonl": session()}), tmp_path / "nowhere")


# ---------------------------------------------------------------------------------------------------
# Scoring


def labels(**lists: list[dict[str, Any]]) -> SessionTruth:
    return SessionTruth.model_validate({"cwd": "/w", **lists})


def shown(section: str, *lines: int, idea: int = 0) -> Shown:
    return Shown(section, idea, f"{section} item #{idea}", tuple(lines))


def test_open_items_match_one_to_one_nearest_first() -> None:
    truth = labels(open_items=[{"text": "o", "line": 10}])
    # The farther item comes first: a first-come matcher would pair it and leave the nearer one out.
    figures = score_session(truth, [shown("open", 12, idea=1), shown("open", 11, idea=2)])
    row = figures["open"]
    assert (row["shown"], row["correct"], row["labels"], row["recalled"]) == (2, 1, 1, 1)
    assert row["misses"] == [{"idea": 1, "lines": [12], "text": "open item #1"}]
    assert row["wrong_open"] == 0 and row["declined_shown"] == 0


def test_tolerance_is_inclusive_and_nothing_beyond_it_matches() -> None:
    truth = labels(open_items=[{"text": "o", "line": 10}])
    assert score_session(truth, [shown("open", 14)], tolerance=3)["open"]["correct"] == 0
    assert score_session(truth, [shown("open", 14)], tolerance=3)["open"]["recalled"] == 0
    assert score_session(truth, [shown("open", 13)], tolerance=3)["open"]["correct"] == 1
    assert score_session(truth, [shown("open", 7)], tolerance=3)["open"]["correct"] == 1
    assert score_session(truth, [shown("open", 14)], tolerance=4)["open"]["correct"] == 1
    assert score_session(truth, [shown("open", 11)], tolerance=0)["open"]["correct"] == 0


def test_two_open_labels_each_take_their_nearest_item() -> None:
    truth = labels(open_items=[{"text": "a", "line": 10}, {"text": "b", "line": 30}])
    figures = score_session(truth, [shown("open", 31, idea=1), shown("open", 9, idea=2)])["open"]
    assert (figures["correct"], figures["recalled"], figures["misses"]) == (2, 2, [])


def test_an_unmatched_open_item_near_finished_or_rejected_work_is_a_wrong_open() -> None:
    truth = labels(
        open_items=[{"text": "o", "line": 100}],
        closed_items=[{"text": "c", "raised_line": 10, "resolved_line": 40}],
        declined=[{"text": "no", "line": 70}],
        decisions=[{"text": "d", "line": 130}],
    )
    items = [
        shown("open", 11, idea=1),  # near the closed item's raised line
        shown("open", 42, idea=2),  # near its resolved line
        shown("open", 68, idea=3),  # near the declined suggestion
        shown("open", 131, idea=4),  # near a decision only: wrong, but not a wrong open
        shown("open", 200, idea=5),  # near nothing
        shown("open", 99, idea=6),  # the open label itself
    ]
    row = score_session(truth, items)["open"]
    assert row["shown"] == 6 and row["correct"] == 1 and row["recalled"] == 1
    assert row["wrong_open"] == 3
    assert row["declined_shown"] == 1
    assert [m["idea"] for m in row["misses"]] == [1, 2, 3, 4, 5]


def test_an_open_label_takes_precedence_over_a_closed_item_on_the_same_line() -> None:
    """README: some lines carry an open item and a closed one; the open labels are tried first."""
    truth = labels(
        open_items=[{"text": "o", "line": 482}],
        closed_items=[{"text": "c", "raised_line": 480, "resolved_line": 482}],
    )
    row = score_session(truth, [shown("open", 482)])["open"]
    assert (row["correct"], row["wrong_open"]) == (1, 0)
    # A second one there finds the open label taken: it is the wrong open.
    row = score_session(truth, [shown("open", 482, idea=1), shown("open", 481, idea=2)])["open"]
    assert (row["correct"], row["wrong_open"], row["misses"][0]["idea"]) == (1, 1, 2)


def test_an_unmatched_decision_near_a_declined_line_is_declined_shown() -> None:
    truth = labels(
        decisions=[{"text": "d", "line": 20}],
        declined=[{"text": "no", "line": 50}, {"text": "also no", "line": 22}],
        closed_items=[{"text": "c", "raised_line": 80, "resolved_line": 81}],
    )
    items = [
        shown("decisions", 51, idea=1),  # a rejected suggestion shown as a decision
        shown("decisions", 21, idea=2),  # the decision (also near declined 22, but matched)
        shown("decisions", 80, idea=3),  # near a closed item only: wrong, not declined
    ]
    row = score_session(truth, items)["decisions"]
    assert (row["shown"], row["correct"], row["labels"], row["recalled"]) == (3, 1, 1, 1)
    assert row["declined_shown"] == 1
    assert "wrong_open" not in row
    assert [m["idea"] for m in row["misses"]] == [1, 3]


def test_a_fix_matches_by_its_problem_line_or_its_fix_line() -> None:
    truth = labels(
        fixes=[
            {"problem": "p1", "fix": "f1", "problem_line": 20, "fix_line": 40},
            {"problem": "p2", "fix": "f2", "problem_line": 100, "fix_line": 120},
        ]
    )
    by_fix = shown("fixes", 41, idea=1)  # the fix's own line
    by_problem = shown("fixes", 160, 101, idea=2)  # its line is far; the problem it answers is not
    far = shown("fixes", 160, 60, idea=3)
    row = score_session(truth, [by_fix, by_problem, far])["fixes"]
    assert (row["shown"], row["correct"], row["labels"], row["recalled"]) == (3, 2, 2, 2)
    assert [m["idea"] for m in row["misses"]] == [3]
    assert row["misses"][0]["lines"] == [160, 60]
    # One to one: two shown items on the same pair (one near each end) recall it once.
    row = score_session(truth, [shown("fixes", 19, idea=1), shown("fixes", 39, idea=2)])["fixes"]
    assert (row["correct"], row["recalled"]) == (1, 1)


def test_conclusions_count_near_any_labelled_line_but_a_declined_one() -> None:
    truth = labels(
        open_items=[{"text": "o", "line": 10}],
        closed_items=[{"text": "c", "raised_line": 30, "resolved_line": 50}],
        decisions=[{"text": "d", "line": 70}],
        fixes=[{"problem": "p", "fix": "f", "problem_line": 90, "fix_line": 110}],
        declined=[{"text": "no", "line": 130}],
    )
    near = [11, 29, 52, 70, 71, 88, 113]  # open, raised, resolved, decision (twice), problem, fix
    items = [shown("conclusions", line, idea=i) for i, line in enumerate(near)]
    items += [shown("conclusions", 131, idea=100), shown("conclusions", 200, idea=101)]
    row = score_session(truth, items)["conclusions"]
    assert row["shown"] == 9 and row["correct"] == 7  # not one to one: 70 and 71 both count
    assert row["labels"] is None and row["recalled"] is None
    assert row["declined_shown"] == 1
    assert [m["idea"] for m in row["misses"]] == [100, 101]


def test_every_section_is_reported_and_other_sections_do_not_leak() -> None:
    truth = labels(open_items=[{"text": "o", "line": 10}], decisions=[{"text": "d", "line": 10}])
    figures = score_session(truth, [shown("decisions", 10)])
    assert list(figures) == list(SECTIONS)
    assert figures["open"]["shown"] == 0 and figures["open"]["recalled"] == 0
    assert figures["decisions"]["correct"] == 1
    assert figures["fixes"] == {
        "shown": 0,
        "correct": 0,
        "labels": 0,
        "recalled": 0,
        "declined_shown": 0,
        "misses": [],
    }


def test_totals_micro_average_and_say_none_when_nothing_was_shown() -> None:
    first = labels(open_items=[{"text": "o", "line": 10}], decisions=[{"text": "d", "line": 50}])
    second = labels(
        open_items=[{"text": "a", "line": 10}, {"text": "b", "line": 30}, {"text": "c", "line": 60}],
        closed_items=[{"text": "c", "raised_line": 80, "resolved_line": 90}],
    )
    per_session = {
        "a.jsonl": score_session(first, [shown("open", 10), shown("conclusions", 51)]),
        "b.jsonl": score_session(second, [shown("open", 31), shown("open", 91)]),  # 91: a wrong open
    }
    result = totals(per_session)
    assert list(result) == list(SECTIONS)
    open_ = result["open"]
    # Micro: 2 right of 3 shown, 2 recalled of 4 labels (a macro average would give 0.75 and 0.6667).
    assert (open_["shown"], open_["correct"], open_["precision"]) == (3, 2, 0.6667)
    assert (open_["labels"], open_["recalled"], open_["recall"]) == (4, 2, 0.5)
    assert open_["wrong_open"] == 1 and open_["declined_shown"] == 0
    decisions = result["decisions"]
    assert decisions["shown"] == 0 and decisions["precision"] is None
    assert (decisions["labels"], decisions["recalled"], decisions["recall"]) == (1, 0, 0.0)
    fixes = result["fixes"]
    assert fixes["precision"] is None and fixes["labels"] == 0 and fixes["recall"] is None
    conclusions = result["conclusions"]
    assert (conclusions["shown"], conclusions["correct"], conclusions["precision"]) == (1, 1, 1.0)
    assert "labels" not in conclusions and "recall" not in conclusions and "wrong_open" not in conclusions


def test_totals_round_to_four_places() -> None:
    truth = labels(open_items=[{"text": "o", "line": 10}])
    per_session = {"a": score_session(truth, [shown("open", 10), shown("open", 100), shown("open", 200)])}
    assert totals(per_session)["open"]["precision"] == 0.3333


# ---------------------------------------------------------------------------------------------------
# The indexer itself


def test_score_ideas_counts_captured_labels_and_their_state() -> None:
    truth = SessionTruth.model_validate(
        session(
            open_items=[{"text": "a", "line": 20}, {"text": "b", "line": 60}],
            closed_items=[{"text": "c", "raised_line": 30, "resolved_line": 35}],
            decisions=[{"text": "d", "line": 40}],
            fixes=[{"problem": "p", "fix": "f", "problem_line": 50, "fix_line": 55}],
            declined=[{"text": "no", "line": 70}, {"text": "no either", "line": 80}],
        )
    )
    ideas = [
        Stored(1, "question", 21, settled=False, abandoned=False),  # open, left open: right
        Stored(2, "todo", 63, settled=True, abandoned=False),  # open, but marked done: wrong state
        Stored(3, "problem", 30, settled=True, abandoned=False),  # closed and settled: right
        Stored(4, "conclusion", 40, settled=False, abandoned=False),  # near a decision, wrong kind
        Stored(5, "problem", 52, settled=True, abandoned=False),  # the fix's problem line
        Stored(6, "solution", 70, settled=False, abandoned=False),  # a declined suggestion, live
        Stored(7, "decision", 81, settled=False, abandoned=True),  # declined and abandoned: fine
    ]
    figures = score_ideas(truth, ideas)
    assert figures["open"] == {"labels": 2, "captured": 2, "state_right": 1}
    assert figures["closed"] == {"labels": 1, "captured": 1, "state_right": 1}
    assert figures["decisions"] == {"labels": 1, "captured": 0}
    assert figures["fixes"] == {"labels": 1, "captured": 1}
    assert figures["declined_as_fact"] == 1
    both = idea_totals({"a": figures, "b": score_ideas(truth, [])})
    assert both["open"]["captured_share"] == 0.5 and both["open"]["state_right_share"] == 0.25
    assert both["decisions"]["captured_share"] == 0.0 and both["declined_as_fact"] == 1
