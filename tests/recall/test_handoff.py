"""The hand-off rules of SessionStart (`cairn.recall.handoff`), on the shapes real sessions produce. What
is open is defined once, in `cairn.store.open_ideas`, and tested in `tests/search/test_open_state.py`."""

from __future__ import annotations

import pytest

from cairn.recall.handoff import is_chatter, topic_name


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
