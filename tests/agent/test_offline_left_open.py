"""What a session leaves open and how a fix is cited, on small batches: work put off stays open
(`cairn.agent.offline.deferred`), a failure that never passed stays open (`given_up`), a recap's
labelled bug is settled by its fix (`inbatch`), and a fix reported done is cited at the change that did it
(`anchoring`). Which messages state an idea is the model's call, given by `model_picks`."""

from __future__ import annotations

import pytest

from cairn.agent.offline import build_result
from cairn.agent.offline.tool_calls import ToolCall, tool_calls
from cairn.agent.schema import IndexResult
from tests.agent.offline_helpers import _LINT_AGAIN, _LINT_TAKEN_UP, Picks, batch, fresh


def _by_line(result: IndexResult) -> dict[int, list[tuple[str, str]]]:
    out: dict[int, list[tuple[str, str]]] = {}
    for idea in result.ideas:
        out.setdefault(idea.source_line, []).append((idea.intent, idea.content))
    return out


def _answered(result: IndexResult) -> set[str]:
    return {str(a.question_idea_id) for a in result.answered_questions}


def _completed(result: IndexResult) -> set[str]:
    return {str(c.todo_idea_id) for c in result.completed_todos}


def test_a_question_whose_reply_defers_it_stays_open_with_the_words_that_did(model_picks: Picks) -> None:
    model_picks({1: "raised", 2: "resolved", 3: "raised"}, resolving=[2, 3])
    result = build_result(
        batch(
            ("user", "does this mean we can remove our checkout shims? 😅\n\ncommit please and push"),
            (
                "assistant",
                "Good question! The v5.16.5 release notes mention fixing the deletion of untracked files. "
                "You have regression tests in hard_reset_test.go to find out. But that's a separate PR.",
            ),
            ("assistant", "Pushed. And yes, investigating the checkout shims removal is a great follow-up."),
        ),
        fresh(),
    )
    [question] = [i for i in result.ideas if i.intent == "question"]
    assert question.source_line == 1
    assert question.content.startswith("Does this mean we can remove our checkout shims?")
    assert question.state == "deferred" and "put off" not in question.content, "a state, not words"
    assert str(question.key) not in _answered(result), "put off is not answered"
    assert not [i for i in result.ideas if i.intent == "todo"], "the later restatement is the same item"


def test_a_question_answered_plainly_is_not_put_off() -> None:
    result = build_result(
        batch(
            ("user", "does the exporter retry failed uploads?"),
            ("assistant", "Yes: the exporter retries failed uploads three times, 2 seconds apart."),
        ),
        fresh(),
    )
    [question] = [i for i in result.ideas if i.intent == "question"]
    assert question.state is None and str(question.key) in _answered(result)


def test_a_plan_the_person_defers_is_an_open_todo_no_report_completes(model_picks: Picks) -> None:
    model_picks({1: "decision", 3: "resolved"}, resolving=[3])
    result = build_result(
        batch(
            (
                "assistant",
                "Now implementing the fix. I'll replace `getStagedFiles` to use `git diff --cached "
                "--name-only` instead of go-git's `worktree.Status()`.",
            ),
            ("user", "let's not make this change in this branch. Can we log a linear issue with the details"),
            (
                "assistant",
                "Created ENT-242: replace getStagedFiles' go-git worktree.Status() with git diff --cached "
                "--name-only.",
            ),
        ),
        fresh(),
    )
    ideas = _by_line(result)
    [(intent, content)] = [i for i in ideas[1] if i[0] != "context"]
    assert intent == "todo" and "I'll replace `getStagedFiles`" in content
    [todo] = [i for i in result.ideas if i.intent == "todo"]
    assert todo.state == "deferred" and "the user:" not in todo.content
    assert str(todo.key) not in _completed(result), "logging the issue is not doing the work"
    assert not [i for i in result.ideas if i.intent == "decision" and "getStagedFiles" in i.content]


def test_a_plan_the_person_approves_stays_a_decision(model_picks: Picks) -> None:
    model_picks({1: "decision"})
    result = build_result(
        batch(
            ("assistant", "I'll replace `getStagedFiles` to use `git diff --cached --name-only` instead."),
            ("user", "sounds good, go ahead"),
        ),
        fresh(),
    )
    assert ("decision", "I'll replace `getStagedFiles` to use `git diff --cached --name-only` instead.") in (
        _by_line(result)[1]
    )
    assert not [i for i in result.ideas if i.intent == "todo"]


def test_a_reply_that_takes_the_plan_up_and_puts_the_rest_off_keeps_the_plan() -> None:
    result = build_result(
        batch(
            (
                "assistant",
                "Decision: make Android lint's `FragmentLiveDataObserve` check an error in lint.xml, so "
                "`observe(this)` in a fragment fails the build.",
            ),
            ("user", "ok, do the lint thing now, the three fragments go in a separate PR"),
        ),
        fresh(),
    )
    assert not [i for i in result.ideas if i.state == "deferred"]


def test_a_recap_that_labels_a_bug_and_its_fix_settles_the_bug(model_picks: Picks) -> None:
    model_picks({2: "fix"})  # the bug is told by its label
    result = build_result(
        batch(
            ("user", "consecutive commits get the same checkpoint ID, can you fix it?"),
            (
                "assistant",
                "All tests pass. Here's a summary:\n\n**Bug:** Consecutive commits got the same checkpoint "
                "ID because `PendingCheckpointID` was reused by `PrepareCommitMsg`.\n\n"
                "**Fix (2 files changed):**\n\n1. `manual_commit_hooks.go` - Removed `PendingCheckpointID` "
                "reuse in `PrepareCommitMsg`\n2. `phase_test.go` - the test now checks unique checkpoint IDs",
            ),
        ),
        fresh(),
    )
    [problem] = [i for i in result.ideas if i.intent == "problem"]
    [fix] = [i for i in result.ideas if i.intent == "solution"]
    assert problem.source_line == fix.source_line == 2
    assert problem.content.startswith("Consecutive commits got the same checkpoint ID")
    assert "PendingCheckpointID" in fix.content
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(problem.key, 2)]


def test_a_fix_reported_done_is_cited_at_the_command_that_did_it(model_picks: Picks) -> None:
    model_picks({1: "problem", 6: "fix"})
    result = build_result(
        batch(
            ("user", "we are stuck mid rebase: fatal: unable to read e53647ba in worktree 2"),
            (
                "assistant",
                "Let's get you unstuck first.\n"
                '[tool_use Bash] command="git -C .worktrees/2 read-tree HEAD 2>&1"',
            ),
            ("tool", "[tool_result Bash] "),
            ("assistant", '[tool_use Bash] command="git -C .worktrees/2 status 2>&1 | head -10"'),
            ("tool", "[tool_result Bash] interactive rebase in progress; onto dbdc06e2"),
            ("assistant", "OK, index is fixed and rebase state is intact."),
        ),
        fresh(),
    )
    [fix] = [i for i in result.ideas if i.intent == "solution"]
    assert fix.source_line == 2, "the read-tree, not the status look, nor the report line"
    ran = "(ran `git -C .worktrees/2 read-tree HEAD 2>&1`)"
    assert fix.content.endswith(f"index is fixed and rebase state is intact {ran}.")


@pytest.mark.parametrize(
    ("command", "report"),
    [
        # someone fixed it before
        ("git -C .worktrees/1 read-tree HEAD", "The cache-tree error is just the index (already fixed)."),
        # nothing changed in its turn: a test run, a script run to measure
        ("pytest -q tests/test_store.py", "The import error is fixed now and the tests pass."),
        ("python train.py --max-steps 400", "Memory is flat at 18.2 GiB, so the leak is fixed now."),
    ],
)
def test_a_report_with_no_change_of_its_own_stays_where_it_was_said(
    command: str, report: str, model_picks: Picks
) -> None:
    model_picks({4: "fix"})
    result = build_result(
        batch(
            ("user", "the tests fail with ImportError: cannot import name 'Store'"),
            ("assistant", f'[tool_use Bash] command="{command}"'),
            ("tool", "[tool_result Bash] 12 passed"),
            ("assistant", report),
        ),
        fresh(),
    )
    assert [i.source_line for i in result.ideas if i.intent == "solution"] == [4]


_BUILD = ("assistant", 'Let me build it.\n[tool_use Bash] command="npm run build"')
_FAILED = (
    "tool",
    "[tool_result Bash error] npm warn Unknown env config\n\n> Build error occurred\n"
    "[TypeError: generate is not a function]",
)


def test_a_failure_that_repeats_and_never_passes_stays_open() -> None:
    result = build_result(
        batch(
            ("user", "wire the components into the main page and check the build"),
            _BUILD,
            _FAILED,
            ("assistant", 'A build issue. Let me retry.\n[tool_use Bash] command="npm run build"'),
            _FAILED,
            ("assistant", '[tool_use Bash] command="npm run build"'),
            _FAILED,
            ("assistant", "Great! No compilation errors are showing in the dev server."),
        ),
        fresh(),
    )
    [problem] = [i for i in result.ideas if i.intent == "problem"]
    assert problem.content == (
        "`npm run build` fails: Build error occurred [TypeError: generate is not a function]"
    )
    assert problem.state == "given_up"
    assert str(problem.key) not in _answered(result), "no statement settles a build that never passed"


@pytest.mark.parametrize(
    "after",
    [
        # the same command passes in the end
        [_BUILD, _FAILED, _BUILD, ("tool", "[tool_result Bash] Compiled successfully")],
        # failed twice only: a retry, not a failure left behind
        [("assistant", "Let me look at the config.")],
    ],
)
def test_a_failure_that_passes_or_is_not_retried_is_a_step(after: list[tuple[str, str]]) -> None:
    result = build_result(
        batch(
            ("user", "check the build"),
            _BUILD,
            _FAILED,
            ("assistant", 'A build error: retrying once.\n[tool_use Bash] command="npm run build"'),
            *after,
        ),
        fresh(),
    )
    [problem] = [i for i in result.ideas if i.content.startswith("Bash call failed")]
    assert problem.content == "Bash call failed: Build error occurred [TypeError: generate is not a function]"


_EDIT = ("assistant", '[tool_use Edit] file_path="/repo/cmd/hooks.go" old_string="a" new_string="b"')


def test_a_failure_a_change_made_pass_is_a_fix_cited_at_the_change(model_picks: Picks) -> None:
    model_picks({})  # the tool calls alone show the fix
    result = build_result(
        batch(
            *_LINT_TAKEN_UP,
            _EDIT,
            ("tool", "[tool_result Edit] The file /repo/cmd/hooks.go has been updated."),
            _LINT_AGAIN,
            ("tool", "[tool_result Bash] 0 issues."),
        ),
        fresh(),
    )
    [problem] = [i for i in result.ideas if i.intent == "problem"]
    [fix] = [i for i in result.ideas if i.intent == "solution"]
    assert fix.source_line == 5, "cited at the edit"
    assert fix.content == (
        "Fixed `mise run lint 2>&1` failing with lint failed: hooks.go:42: noctx: exec.Command needs a ctx: "
        "edited hooks.go (then it passed)"
    )
    # Settled by the change that made the lint run pass (issue 41: "a fix names the change that made the
    # failure pass"), where its fix idea is: the labelled fix pair, not the run that only confirms it.
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(problem.key, 5)]
    [answer] = result.answered_questions
    assert answer.answer_summary == "edited hooks.go, then `mise run lint 2>&1` passed"


@pytest.mark.parametrize(
    "messages",
    [
        # changed, but the same run never passed
        [_EDIT, ("tool", "[tool_result Edit] updated.")],
        # passed, but nothing was changed in between
        [_LINT_AGAIN, ("tool", "[tool_result Bash] 0 issues.")],
        # the change is said in prose right there
        [
            _EDIT,
            ("assistant", "The fix is to pass a context: exec.CommandContext in hooks.go."),
            _LINT_AGAIN,
            ("tool", "[tool_result Bash] 0 issues."),
        ],
    ],
)
def test_no_fix_is_made_up_from_tool_calls(messages: list[tuple[str, str]]) -> None:
    result = build_result(
        batch(*_LINT_TAKEN_UP, *messages),
        fresh(),
    )
    assert [i.intent for i in result.ideas if i.source_line == 3] == ["problem"], "control: a problem"
    assert not [i for i in result.ideas if i.content.startswith("Fixed ")]


def test_a_look_that_failed_is_no_problem_to_fix() -> None:
    result = build_result(
        batch(
            ("user", "where are the types?"),
            ("assistant", '[tool_use Bash] command="ls -la types/"'),
            ("tool", "[tool_result Bash error] ls: cannot access 'types/': No such file or directory"),
            ("assistant", "The types directory is missing: that is the problem, I will create it."),
            ("assistant", '[tool_use Write] file_path="/repo/types/state.ts" content="x"'),
            ("tool", "[tool_result Write] File created"),
            ("assistant", '[tool_use Bash] command="ls -la types/"'),
            ("tool", "[tool_result Bash] state.ts"),
        ),
        fresh(),
    )
    assert [i.intent for i in result.ideas if i.source_line == 3] == ["problem"], "control: a problem"
    assert not [i for i in result.ideas if i.content.startswith("Fixed ")]


def test_tool_calls_are_read_once_for_every_rule() -> None:
    text = (
        "Let me fix it.\n"
        '[tool_use Bash] command="git -C .worktrees/2 read-tree HEAD && echo \\"done\\"" description="Fix"\n'
        '[tool_use Edit] replace_all=false file_path="/repo/cmd/hooks.go" old_string="a"\n'
        '[tool_use Bash] command="git status" description="Look"'
    )
    write, edit, look = tool_calls(text)
    assert write.command == 'git -C .worktrees/2 read-tree HEAD && echo "done"'
    assert write.changes == 'ran `git -C .worktrees/2 read-tree HEAD && echo "done"`' and not write.looks
    assert edit.edited == "/repo/cmd/hooks.go" and edit.changes == "edited hooks.go" and edit.command is None
    assert look.changes is None and look.looks
    again = ToolCall("Bash", 'command="git status" description="Look again" timeout=600')
    assert again.key == look.key, "a shell call is the same call whatever its description"
    assert ToolCall("Read", 'file_path="a.py"').key != ToolCall("Read", 'file_path="b.py"').key
