"""The hand-off rules of SessionStart (`cairn.recall.handoff`) and the open rule they share with the MCP
`open_questions` tool (`cairn.search.open_items.still_open`), on the shapes real sessions produce."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.recall.handoff import is_chatter, topic_name
from cairn.search.open_items import still_open


def row(line: int, content: str = "Why does the hook fire twice?", **facts: Any) -> dict[str, Any]:
    return {
        "source_line": line,
        "content": content,
        "source_kind": facts.get("kind", "text"),
        "last_prompt_line": facts.get("last", 100),
        "reopened": facts.get("reopened", 0),
    }


def test_open_is_what_the_session_ended_on() -> None:
    assert still_open(row(120)), "raised after the last prompt: nobody answered it"
    assert not still_open(row(40)), "raised earlier: the turns after it dealt with it"
    assert not still_open(row(100)), "the last prompt itself is answered by the reply that follows"
    assert still_open(row(40, last=None)), "a session without a prompt from the person says nothing"


@pytest.mark.parametrize(
    "content",
    [
        "Let's not make this change in this branch. Can we log a linear issue with the details",
        "Removing the checkout shims is a great follow-up",
        "Out of scope here; next session we migrate the queue",
        "Defer the retry change to a separate PR",
        "Deferred: I'll replace getStagedFiles (the user: let's not make this change in this branch)",
        "Can we remove the checkout shims? (put off: Let's do that in another PR.)",
    ],
)
def test_work_put_off_stays_open_wherever_it_was_said(content: str) -> None:
    assert still_open(row(40, content))


def test_a_failed_tool_call_is_open_only_when_it_never_passed() -> None:
    assert not still_open(row(120, "Bash call failed: python: command not found", kind="tool_result"))
    never = "Bash call failed: Build error occurred (failed 4 times, never passed)"
    assert still_open(row(40, never, kind="tool_result")), "wherever in the session it failed"


@pytest.mark.parametrize(
    "content",
    [
        "Fixed — clean status, no errors.",
        "All resume tests pass now.",
        "No compilation errors are showing.",
        "The development server is running successfully.",
        "The fix is complete. All tests pass including integration tests.",
    ],
)
def test_a_state_report_is_chatter(content: str) -> None:
    assert is_chatter(content)


@pytest.mark.parametrize(
    "content",
    [
        "Fixed the checkout test: open SQLite in WAL mode with BEGIN IMMEDIATE",
        "Replace `getStagedFiles` with a `git diff --cached --name-only` CLI call",
        "The tests pass because the fixture now resets the clock",
        "Use pull_request_target instead so the token can write",
    ],
)
def test_a_fix_that_says_how_is_not_chatter(content: str) -> None:
    assert not is_chatter(content)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("test-repo.git Github-actions github.com Test-repo", "Github-actions Test-repo"),
        ("hello_world.py Minimal Code", "Minimal Code"),
        (
            "Task-notification Task-id home-USER-projects-spotter-worktrees-spotter-gqc Tasks",
            "Task-notification Task-id Tasks",
        ),
        ("Retry queue 3f9a2c1d4e", "Retry queue"),
        ("Change Branch", "Change Branch"),
        ("src/app.py config.toml", None),
        ("Rebase", None),
    ],
)
def test_topic_names_lose_paths_files_hosts_and_ids(name: str, shown: str | None) -> None:
    assert topic_name(name) == shown


def test_recall_injects_what_passes_both_floors_and_leaves_out_weak_companions() -> None:
    from cairn.recall.context import RELATIVE_FLOOR, chosen

    # (score, specificity), best first
    scored = [(0.40, 9.0), (0.30, 2.0), (0.21, 6.0), (0.19, 7.5), (0.05, 12.0)]
    assert chosen(scored, 0.1, 5.0) == [0, 2], "0.30 is not specific; 0.19 < half of 0.40; 0.05 < 0.1"
    assert chosen(scored, 0.1, 0.0) == [0, 1, 2]
    assert chosen(scored, 0.5, 0.0) == [], "nothing reaches the score floor"
    assert chosen([(0.2, 4.9)], 0.1, 5.0) == [], "related, but only by common words"
    assert RELATIVE_FLOOR == 0.5 and chosen([(0.2, 6.0), (0.1, 6.0)], 0.1, 5.0) == [0, 1]
