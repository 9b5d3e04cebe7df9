"""`cairn.evals.coverage` on hand-built labels and ideas: which labels an idea covers, the share of ideas
near a label, answered-link precision, and the sums over sessions."""

from __future__ import annotations

from cairn.evals.coverage import Idea, Link, add, score_distilled
from cairn.evals.truth import SessionTruth

TRUTH = SessionTruth.model_validate(
    {
        "cwd": "/p",
        "open_items": [{"text": "log an issue for the flaky test", "line": 90, "why_open": "deferred"}],
        "closed_items": [
            {"text": "why does the hook prompt during rebase?", "raised_line": 10, "resolved_line": 20},
            {"text": "run the linter", "raised_line": 40, "resolved_line": 44},
        ],
        "decisions": [{"text": "use CommandContext", "line": 30}],
        "fixes": [{"problem": "lint fails", "fix": "switch call", "problem_line": 50, "fix_line": 60}],
        "declined": [{"text": "skip the hook entirely", "line": 70}],
    }
)


def ideas(*lines: int) -> list[Idea]:
    return [Idea(i, "context", line) for i, line in enumerate(lines, start=1)]


def test_a_label_is_covered_by_an_idea_of_any_kind_within_the_tolerance() -> None:
    # 13: 3 from raised 10 (covered); 34: 4 from decision 30 (not); 63: 3 from fix line 60 (covered);
    # 86: 4 from open 90 (not); 47: 3 from resolved 44 (covered).
    figures = score_distilled(TRUTH, ideas(13, 34, 63, 86, 47), messages=50, tolerance=3)
    coverage = figures["coverage"]
    assert {part: (row["covered"], row["labels"]) for part, row in coverage.items()} == {
        "decisions": (0, 1),
        "fixes": (1, 1),
        "closed": (2, 2),
        "open": (0, 1),
    }
    assert coverage["decisions"]["missed"] == [{"text": "use CommandContext", "line": 30}]
    assert coverage["open"]["missed"] == [{"text": "log an issue for the flaky test", "line": 90}]
    assert coverage["closed"]["share"] == 1.0 and coverage["decisions"]["share"] == 0.0
    assert figures["messages"] == 50 and figures["ideas"] == 5 and figures["ideas_per_100_messages"] == 10.0
    # A wider tolerance covers both misses.
    wide = score_distilled(TRUTH, ideas(13, 34, 63, 86, 47), messages=50, tolerance=4)["coverage"]
    assert wide["decisions"]["covered"] == 1 and wide["open"]["covered"] == 1


def test_near_a_label_counts_ideas_at_labelled_lines_but_not_at_declined_ones() -> None:
    # 11 near raised 10; 58 near fix 60; 70 sits on the declined suggestion only; 200 near nothing.
    near = score_distilled(TRUTH, ideas(11, 58, 70, 200), messages=8)["near_label"]
    assert near == {"ideas": 4, "near": 2, "share": 0.5}


def test_an_answered_link_is_right_only_with_both_ends_at_one_closed_item_or_fix() -> None:
    right = Link(idea=1, line=11, answer_line=21)  # raised 10, resolved 20
    crossed = Link(idea=2, line=11, answer_line=44)  # raised of one item, resolved of the other
    nowhere = Link(idea=3, line=150, answer_line=152)
    figures = score_distilled(TRUTH, ideas(11), messages=4, answered=[right, crossed, nowhere])
    links = figures["answered_links"]
    assert (links["correct"], links["links"], links["precision"]) == (1, 3, 0.3333)
    assert [w["idea"] for w in links["wrong"]] == [2, 3]
    assert links["wrong"][0] == {"idea": 2, "line": 11, "answer_line": 44}
    assert links["by_fix"] == 0
    assert figures["done_links"] == {"links": 0, "correct": 0, "precision": None, "by_fix": 0, "wrong": []}


def test_a_failure_settled_at_the_change_that_fixed_it_is_a_right_link() -> None:
    """Issue 41: "a fix names the change that made the failure pass". A failed check settled by its fix
    matches a labelled fix pair (problem 50, fix 60); the change's line elsewhere does not."""
    at_fix = Link(idea=1, line=51, answer_line=62)
    elsewhere = Link(idea=2, line=51, answer_line=70)
    links = score_distilled(TRUTH, ideas(51), messages=4, answered=[at_fix, elsewhere])["answered_links"]
    assert (links["correct"], links["links"], links["by_fix"]) == (1, 2, 1)
    assert [w["idea"] for w in links["wrong"]] == [2]


def test_a_session_with_no_labels_has_no_shares_but_counts_its_ideas() -> None:
    empty = SessionTruth.model_validate({"cwd": "/q"})
    figures = score_distilled(empty, ideas(1, 2, 3), messages=0, answered=[Link(1, 1, 2)])
    assert all(
        row == {"labels": 0, "covered": 0, "share": None, "missed": []}
        for row in figures["coverage"].values()
    )
    assert figures["near_label"] == {"ideas": 3, "near": 0, "share": 0.0}
    assert figures["answered_links"]["precision"] == 0.0  # a link where nothing was closed is wrong
    assert figures["ideas_per_100_messages"] is None  # no messages: no rate


def test_sums_are_micro_averaged_over_sessions() -> None:
    empty = SessionTruth.model_validate({"cwd": "/q"})
    a = score_distilled(TRUTH, ideas(13, 47), messages=100, answered=[Link(1, 11, 21)])
    b = score_distilled(empty, ideas(5, 6, 7, 8), messages=100, answered=[Link(1, 5, 6)])
    total = add([a, b])
    assert total["sessions"] == 2 and total["messages"] == 200 and total["ideas"] == 6
    assert total["ideas_per_100_messages"] == 3.0
    assert total["coverage"]["closed"] == {"labels": 2, "covered": 2, "share": 1.0}
    assert total["near_label"] == {"ideas": 6, "near": 2, "share": 0.3333}  # not the mean of 1.0 and 0.0
    assert total["answered_links"] == {"links": 2, "correct": 1, "precision": 0.5, "by_fix": 0}
