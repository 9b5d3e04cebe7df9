"""Where the offline indexer settles what a batch raised (issue 41, "links that are right"): a request at
the end of the work of its turn, a question the assistant answers right away by that reply, nothing in a
turn the person cut into, a failed check only by the change that made it pass — and the tool results
that say so are read against the calls that made them.

The learned model's part (which messages resolve something) is given here as scores, as in
`test_offline_inbatch.py`; what is tested is where the structure of the turn puts the link.
"""

from __future__ import annotations

from cairn.agent.offline import build_result
from cairn.agent.offline.inbatch import answered, completed
from cairn.agent.offline.tool_calls import answered_calls
from tests.agent.inbatch_helpers import idea, view_of
from tests.agent.offline_helpers import _LINT_AGAIN, _LINT_FAILS, _LINT_TAKEN_UP, Picks, batch, fresh

# A person's request, and the work of its turn: a first proposal, the change, the report at the end.
REQUEST = (
    ("user", "the CSV export drops rows with an empty region, please fix the export"),
    ("assistant", "The export filter skips rows whose region is empty. I'll keep those rows in the export."),
    ("assistant", '[tool_use Edit] file_path="/repo/export.py" old_string="a" new_string="b"'),
    ("tool", "[tool_result Edit] The file /repo/export.py has been updated."),
    ("assistant", "Fixed: the export now keeps rows with an empty region, and the export test passes."),
)
TODO = "Fix the CSV export that drops rows with an empty region."


def test_a_request_is_done_at_the_end_of_the_work_not_at_the_step_the_model_likes_best() -> None:
    view = view_of(*REQUEST)
    todo = idea(view, 1, "todo", TODO)
    # The model finds the proposal (2) more resolving than the report (5); the work ended at 5.
    [(done, line, summary)] = completed(view, [todo], {2: 0.95, 5: 0.6})
    assert (done, line) == (todo, 5) and summary.startswith("Fixed")
    assert completed(view, [todo], {}) == [], "nothing resolving in its turn: still to do"


def test_a_question_answered_right_away_is_answered_by_that_reply() -> None:
    messages = (
        ("user", "does the export keep rows with an empty region?"),
        ("assistant", "No: the export filter skips every row whose region is empty."),
        ("assistant", '[tool_use Read] file_path="/repo/export.py"'),
        ("tool", "[tool_result Read] rows = [r for r in rows if r.region]"),
        ("assistant", "The export filter is the list comprehension on region in export.py."),
        ("assistant", "So the export drops those rows by design of that filter."),
    )
    view = view_of(*messages)
    question = idea(view, 1, "question", "Does the export keep rows with an empty region?")
    # A step on the way (5) scores highest; the reply right after the question answered it.
    [(_q, line, summary)] = answered(view, [question], {2: 0.7, 5: 0.9, 6: 0.6})
    assert line == 2 and summary.startswith("No: the export filter skips")
    # When the end of the work settles it more surely than the first reply, the end answers.
    assert [line for _q, line, _s in answered(view, [question], {2: 0.6, 6: 0.8})] == [6]
    # A request is not answered by the first reply: its work ends later.
    todo = idea(view, 1, "todo", "Check whether the export keeps rows with an empty region.")
    assert [line for _t, line, _s in completed(view, [todo], {2: 0.7, 6: 0.6})] == [6]


def test_an_answer_given_after_a_look_is_the_end_of_the_work() -> None:
    view = view_of(
        ("user", "does the export keep rows with an empty region?"),
        ("assistant", '[tool_use Read] file_path="/repo/export.py"'),
        ("tool", "[tool_result Read] rows = [r for r in rows if r.region]"),
        ("assistant", "No: the export filter in export.py skips rows whose region is empty."),
        ("assistant", "The region filter was added with the export itself."),
    )
    question = idea(view, 1, "question", "Does the export keep rows with an empty region?")
    assert [line for _q, line, _s in answered(view, [question], {4: 0.9, 5: 0.6})] == [5]


def test_a_turn_the_person_cut_into_settles_nothing() -> None:
    cut = (
        *REQUEST[:2],
        ("assistant", '[tool_use Edit] file_path="/repo/export.py" old_string="a" new_string="b"'),
        ("user", "wait, don't touch export.py, the filter is on purpose"),
        ("assistant", "Understood: I'll leave the export filter in export.py as it is."),
    )
    view = view_of(*cut)
    todo = idea(view, 1, "todo", TODO)
    assert completed(view, [todo], {2: 0.9}) == [], "the work was in flight when the person cut in"
    # The same turn at the end of a batch (the work may go on in the next one) is judged as it stands.
    view = view_of(*cut[:3])
    assert [line for _t, line, _s in completed(view, [idea(view, 1, "todo", TODO)], {2: 0.9})] == [2]
    # A turn that ends on its report is not cut off by the person's next words.
    view = view_of(*REQUEST, ("user", "thanks, now the invoices page"))
    assert [line for _t, line, _s in completed(view, [idea(view, 1, "todo", TODO)], {5: 0.9})] == [5]


def test_a_failed_check_is_settled_only_by_a_run_of_it_that_passed() -> None:
    messages = (
        *_LINT_TAKEN_UP,
        (
            "assistant",
            "The lint error about exec.Command needs a context: I'll skip the noctx linter for now.",
        ),
    )
    view = view_of(*messages)
    failure = idea(view, 3, "problem", _LINT_FAILS[1].split("] ", 1)[1], origin="tool_error")
    # The words after it share the failure's words and the model finds them resolving: no pass, no answer.
    assert answered(view, [failure], {4: 0.9, 5: 0.9}) == []
    # A run of it that passed with nothing changed in between settles it there.
    view = view_of(*messages, _LINT_AGAIN, ("tool", "[tool_result Bash] 0 issues."))
    failure = idea(view, 3, "problem", failure.content, origin="tool_error")
    assert [(line, s) for _q, line, s in answered(view, [failure], {})] == [
        (7, "`mise run lint 2>&1` passed")
    ]


def test_calls_made_together_are_answered_in_the_order_they_were_made() -> None:
    view = view_of(
        ("user", "why is the build slow?"),
        (
            "assistant",
            '[tool_use Bash] command="ls -la build/cache"\n[tool_use Bash] command="npm run build"',
        ),
        ("tool", "[tool_result Bash error] ls: build/cache: No such file or directory"),
        ("tool", "[tool_result Bash] built in 92s"),
        ("assistant", '[tool_use Bash] command="npm run build -- --profile"'),
        ("tool", "[tool_result Bash] built in 90s"),
        ("assistant", '[tool_use Bash] command="rm -rf build/"'),
        (
            "tool",
            "[tool_result Bash error] The user doesn't want to proceed with this tool use. "
            "To tell you how to proceed, the user said:\nkeep the build folder",
        ),
        ("assistant", '[tool_use Bash] command="du -sh build/"'),
        ("tool", "[tool_result Bash] 2.1G build/"),
    )
    calls = answered_calls(view)
    assert {line: call.command for line, call in calls.items()} == {
        3: "ls -la build/cache",
        4: "npm run build",
        6: "npm run build -- --profile",
        10: "du -sh build/",  # the rejected call (7) was answered by the person's words (8), not by 10
    }


def test_a_look_that_failed_beside_a_check_is_no_failed_check(model_picks: Picks) -> None:
    """The `ls` of two calls made together failed and the lint run beside it passed. Read against the
    lint run, the failed look became a failed lint run, settled by the lint run's next pass."""
    model_picks({})
    result = build_result(
        batch(
            ("user", "why is the build cache never used?"),
            (
                "assistant",
                '[tool_use Bash] command="ls -la build/cache"\n[tool_use Bash] command="mise run lint 2>&1"',
            ),
            ("tool", "[tool_result Bash error] ls: build/cache: No such file or directory"),
            ("tool", "[tool_result Bash] 0 issues."),
            ("assistant", "The build cache directory does not exist, so every build starts cold."),
            _LINT_AGAIN,
            ("tool", "[tool_result Bash] 0 issues."),
        ),
        fresh(),
    )
    [problem] = [i for i in result.ideas if i.intent == "problem"]
    assert problem.source_line == 3, "control: the failed look is a problem the reply takes up"
    assert result.answered_questions == [], "no run of the look passed"
