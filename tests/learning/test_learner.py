"""The pure state machine: sessions opened, settled and ended by real-shaped transcript events."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from cairn.learning.learner import (
    MISSING_RESULT,
    LearnerConfig,
    SearchLearner,
    SearchSession,
    read_scores,
    search_query,
)
from cairn.transcripts.tool_events import ToolUse, UserTurn
from tests.helpers.builders import Transcript
from tests.learning.loop_helpers import LOGIN_BUTTON, events_of, login_button_scenario, run_learner

PROJECT = Path("/work/acme-web")


def test_a_weak_search_followed_by_grep_and_read_resolves_at_the_next_prompt(tmp_path: Path) -> None:
    learner = run_learner(events_of(login_button_scenario(PROJECT), tmp_path / "t.jsonl"))

    [session] = learner.changed
    assert learner.resolved == [session]
    assert (session.tool_name, session.query, session.status) == (
        "mcp__cairn__search",
        "login button component",
        "resolved",
    )
    assert (session.best_score, session.result_count, session.error) == (0.42, 2, None)
    assert session.reads == [str(PROJECT / LOGIN_BUTTON)]
    assert session.greps == ["login.*button"]
    assert session.started_at is not None and session.ended_at is not None
    assert session.ended_at > session.started_at  # the prompt's time, not the window's end
    assert learner.open_sessions == []


def test_a_strong_search_is_dismissed_and_learns_nothing(tmp_path: Path) -> None:
    t = Transcript(PROJECT).user("where is the login button?")
    t.search("login button", [0.91, 0.4])
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.user("thanks")

    learner = run_learner(events_of(t, tmp_path / "t.jsonl"))

    [session] = learner.changed
    assert (session.status, session.best_score, session.reads) == ("dismissed", 0.91, [])
    assert learner.resolved == []


def test_the_threshold_is_inclusive_for_a_good_search(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.search("exactly at the bar", [0.65])
    [session] = run_learner(events_of(t, tmp_path / "t.jsonl"), threshold=0.65).changed
    assert session.status == "dismissed"


def test_search_content_is_learned_from_with_concepts_and_terms_as_its_query(tmp_path: Path) -> None:
    """Seed 000 scenario 2, through `search_content` (its scores are `relevance_score`)."""
    t = Transcript(PROJECT).user("where's the user creation endpoint?")
    body = {
        "results": [{"chunk_id": "m1", "relevance_score": 0.38}, {"chunk_id": "m2", "relevance_score": 0.2}]
    }
    t.tool(
        "mcp__cairn__search_content",
        {"semantic_concepts": ["user creation endpoint"], "exact_terms": ["createUser"]},
        json.dumps(body),
    )
    t.tool("Grep", {"pattern": "createUser|user.*create", "type": "ts"}, "src/api/routes/users.ts")
    t.tool("Read", {"file_path": "src/api/routes/users.ts"}, "export async function createUser() {}")
    t.user("add validation to it")

    [session] = run_learner(events_of(t, tmp_path / "t.jsonl")).resolved

    assert session.query == "user creation endpoint; createUser"
    assert session.best_score == 0.38
    assert session.greps == ["createUser|user.*create"]
    assert session.reads == [str(PROJECT / "src/api/routes/users.ts")]  # relative: joined to the cwd


def test_paging_with_a_continuation_is_not_a_new_search(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.tool("mcp__cairn__search", {"query": "", "continuation": "tok"}, json.dumps({"results": []}))
    t.tool("mcp__cairn__search_content", {"continuation_token": "tok"}, json.dumps({"results": []}))
    t.user("next")
    assert run_learner(events_of(t, tmp_path / "t.jsonl")).changed == []


def test_configured_tools_are_search_tools_too(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.search("login", [0.1], tool="mcp__other__find")
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.user("ok")
    events = events_of(t, tmp_path / "t.jsonl")
    assert run_learner(events).changed == []
    tools = frozenset({"mcp__cairn__search", "mcp__other__find"})
    [session] = run_learner(events, tools=tools).resolved
    assert session.query == "login"


def test_a_malformed_result_counts_as_a_weak_search_with_its_error(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.tool("mcp__cairn__search", {"query": "login button"}, "Error: <html>502 Bad Gateway</html>")
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.tool("mcp__cairn__search", {"query": "signup form"}, json.dumps({"items": [1, 2]}))
    t.user("ok")

    first, second = run_learner(events_of(t, tmp_path / "t.jsonl")).changed

    assert (first.status, first.best_score, first.result_count) == ("resolved", 0.0, 0)
    assert first.error is not None and first.error.startswith("unreadable search result: not JSON: Error:")
    assert (second.status, second.best_score) == ("timed_out", 0.0)
    assert second.error is not None and second.error.startswith("unreadable search result: no results list")


def test_an_error_result_is_a_failed_search(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.tool("mcp__cairn__search", {"query": "login button"}, "cairn daemon is not running", is_error=True)
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.user("ok")

    [session] = run_learner(events_of(t, tmp_path / "t.jsonl")).changed

    assert (session.status, session.best_score, session.reads) == (
        "resolved",
        0.0,
        [str(PROJECT / LOGIN_BUTTON)],
    )
    assert session.error == "search failed: cairn daemon is not running"


def test_a_result_that_never_came_ends_the_turn_as_a_missing_result(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.tool("mcp__cairn__search", {"query": "login button"}, None)  # interrupted: no tool_result line
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    learner = run_learner(events_of(t, tmp_path / "t.jsonl"))
    assert [s.status for s in learner.open_sessions] == ["pending"]  # it may still come in a later read

    t.user("never mind")
    [session] = run_learner(events_of(t, tmp_path / "t.jsonl")).changed

    assert (session.status, session.best_score, session.error) == ("timed_out", 0.0, MISSING_RESULT)
    assert session.reads == []  # the read came before any result: not a fallback from it


def test_reads_after_the_window_do_not_count_and_the_session_times_out(tmp_path: Path) -> None:
    t = Transcript(PROJECT)
    t.search("login button component", [0.3])
    t.wait(90)
    t.tool("Grep", {"pattern": "LoginButton"}, LOGIN_BUTTON)
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.user("ok")

    [session] = run_learner(events_of(t, tmp_path / "t.jsonl"), timeout=60.0).changed

    assert (session.status, session.reads, session.greps) == ("timed_out", [], [])
    assert session.started_at is not None and session.ended_at is not None
    assert (session.ended_at - session.started_at).total_seconds() == 60.0  # ended when its window did


def test_a_passed_window_ends_a_session_at_the_next_event_even_without_a_prompt(tmp_path: Path) -> None:
    """A subagent's transcript has no user prompts: its sessions must still end."""
    t = Transcript(PROJECT)
    t.search("login button component", [0.3])
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.search("password reset", [0.2])
    t.wait(120)
    t.tool("Bash", {"command": "npm test"}, "ok")  # any later event shows the windows have passed

    learner = run_learner(events_of(t, tmp_path / "t.jsonl"))

    assert [(s.query, s.status) for s in learner.changed] == [
        ("login button component", "resolved"),
        ("password reset", "timed_out"),
    ]
    assert learner.open_sessions == []


def test_overlapping_sessions_record_the_same_reads(tmp_path: Path) -> None:
    t = Transcript(PROJECT).user("login and signup")
    t.search("login button", [0.3])
    t.search("signup form", [0.5])
    t.search("session cookie", [0.9])
    t.tool("Glob", {"pattern": "src/**/*Button.tsx"}, LOGIN_BUTTON)
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")
    t.tool("Read", {"file_path": str(PROJECT / LOGIN_BUTTON)}, "...")  # read twice, kept once
    t.user("ok")

    learner = run_learner(events_of(t, tmp_path / "t.jsonl"))

    assert [(s.query, s.status) for s in learner.changed] == [
        ("login button", "resolved"),
        ("signup form", "resolved"),
        ("session cookie", "dismissed"),
    ]
    for session in learner.resolved:
        assert session.reads == [str(PROJECT / LOGIN_BUTTON)]
        assert session.greps == ["src/**/*Button.tsx"]


def test_open_sessions_resume_and_known_searches_are_not_redone(tmp_path: Path) -> None:
    t = login_button_scenario(PROJECT)
    events = events_of(t, tmp_path / "t.jsonl")
    cut = next(i for i, e in enumerate(events) if isinstance(e, ToolUse) and e.name == "Read")
    first = run_learner(events[:cut])
    [open_session] = first.open_sessions
    assert open_session.status == "active" and open_session.greps == ["login.*button"]

    second = SearchLearner(LearnerConfig(), open_sessions=first.open_sessions).feed(events[cut:])
    [resolved] = second.resolved
    assert resolved.reads == [str(PROJECT / LOGIN_BUTTON)]

    again = SearchLearner(LearnerConfig(), seen={resolved.key}).feed(events)
    assert again.changed == []


def test_a_search_replayed_within_one_read_is_not_opened_twice(tmp_path: Path) -> None:
    events = events_of(login_button_scenario(PROJECT), tmp_path / "t.jsonl")
    learner = run_learner(events + events)
    assert len(learner.changed) == 1 and len(learner.resolved) == 1


def test_events_without_timestamps_count_as_inside_the_window() -> None:
    use = ToolUse("toolu_1", "mcp__cairn__search", {"query": "login"}, None, "s1", str(PROJECT), 1)
    learner = SearchLearner(LearnerConfig())
    learner.on_event(use)
    [session] = learner.open_sessions
    assert session.started_at is None
    session.status = "active"
    learner.on_event(ToolUse("toolu_2", "Read", {"file_path": "/work/acme-web/a.py"}, None, "s1", None, 2))
    learner.on_event(UserTurn(datetime(2025, 9, 3, 10, 5), "s1", None, 3))  # naive: read as UTC
    assert [(s.status, s.reads) for s in learner.changed] == [("resolved", ["/work/acme-web/a.py"])]


def test_odd_inputs_are_ignored_rather_than_crashing() -> None:
    learner = SearchLearner(LearnerConfig())
    learner.on_event(ToolUse("t1", "Read", {"file_path": 42}, None, "s", None, 1))
    learner.on_event(ToolUse("t2", "Grep", {"pattern": ["x"]}, None, "s", None, 2))
    learner.on_event(ToolUse("t3", "mcp__cairn__search", {"query": {"text": "x"}}, None, "s", None, 3))
    learner.on_event(UserTurn(None, "s", None, 4))
    assert learner.changed == []


def test_search_query_and_read_scores() -> None:
    assert search_query({"query": "  login  "}) == "login"
    assert search_query({"semantic_concepts": ["a", 3, " "], "exact_terms": ["B"]}) == "a; B"
    assert search_query({"continuation": "tok"}) is None
    assert read_scores(json.dumps({"results": []})) == (0.0, 0)
    assert read_scores(json.dumps({"results": [{"score": 0.2}, {"score": True}, "x", {"score": 0.7}]})) == (
        0.7,
        4,
    )
    assert read_scores("not json", {"results": [{"relevance_score": 0.5}]}) == (0.5, 1)
    assert read_scores(json.dumps([1, 2])) == "no results list: [1, 2]"
    assert read_scores(json.dumps({"results": [{"score": float("nan")}]})) == (0.0, 1)


def test_sessions_round_trip_their_key() -> None:
    session = SearchSession("s1", "toolu_1", "mcp__cairn__search", "q", None)
    assert session.key == ("s1", "toolu_1") and session.is_open
