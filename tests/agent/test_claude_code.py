"""The `claude-code` model: cairn's real indexing agent through the real Claude Code CLI.

The CLI claude-agent-sdk bundles talks to the fake Messages API on 127.0.0.1 (`point_cli_at`), so the
whole path runs here as on a user's machine: the SDK, the CLI, cairn's tools through the in-process MCP
server, the structured result, the executor. What the tests hold it to: it stores what the model said
and records what it cost; the CLI's own tools (shell, files, web) do not exist for it; every failure is
one line, leaves the store as it was and no CLI behind, and the next healthy run indexes the batch once.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

from cairn.agent import claude_code_cli
from cairn.agent.claude_code_errors import ClaudeCodeRateLimited, rate_limited
from cairn.agent.claude_code_tools import TOOL_PREFIX, ParkedCalls
from cairn.agent.indexer import FAILED, OK, build_agent, index_batch, index_pending
from cairn.agent.models import ModelConfigError, resolve_model
from cairn.config import Settings
from cairn.prompts import load_prompt
from cairn.store.store import Store
from cairn.tools import ToolDeps
from tests.agent.claude_code_helpers import (
    cli_processes,
    descendants,
    idea_per_session,
    point_cli_at,
    require_cli,
)
from tests.agent.fake_anthropic import FakeAnthropic, Reply, message
from tests.helpers.indexer import (
    SESSION,
    TOOLS,
    idea,
    idea_contents,
    indexed_line,
    only_batch,
    result,
    run_rows,
    store,
)

__all__ = ["store"]  # the indexer tests' store: one small transcript, captured, not indexed
CACHED_USAGE = {
    "input_tokens": 100,
    "cache_read_input_tokens": 50,
    "cache_creation_input_tokens": 30,
    "output_tokens": 20,
}
# A plan login's rate limit, as the API reports it (a reset in the future, whole minutes).
RESET = int((datetime.now(UTC) + timedelta(hours=2)).replace(second=0, microsecond=0).timestamp())
PLAN_LIMIT_HEADERS = {
    "anthropic-ratelimit-unified-status": "rejected",
    "anthropic-ratelimit-unified-representative-claim": "five_hour",
    "anthropic-ratelimit-unified-reset": str(RESET),
}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeAnthropic]:
    """The fake API, the CLI pointed at it, model requests allowed; afterwards no CLI may be left."""
    require_cli()
    with FakeAnthropic(tool_prefix=TOOL_PREFIX) as server, override_allow_model_requests(True):
        point_cli_at(monkeypatch, server, tmp_path / "cli-home")
        yield server
    assert descendants() == []


def expected_tools() -> set[str]:
    return {TOOL_PREFIX + name for name in TOOLS | {"final_result"}}


async def test_a_batch_is_indexed_through_the_cli_and_its_tokens_recorded(
    store: Store, settings: Settings, fake: FakeAnthropic
) -> None:
    planned = await only_batch(store)
    fake.usage = CACHED_USAGE
    fake.tool_use("search_ideas", {"query": "SQLite WAL"})
    fake.final(result(planned, ideas=[idea(2, "acme keeps SQLite in WAL mode")], skip_lines=[1, 3]))

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    [run] = report.runs
    assert run.outcome == OK, run.error
    assert await idea_contents(store) == ["acme keeps SQLite in WAL mode"]
    assert await indexed_line(store) == 4
    [row] = await run_rows(store)
    assert row["model"] == "claude-code:claude-haiku-4-5"
    # Two requests, each 100 fresh + 50 cache-read + 30 cache-written input tokens and 20 output.
    assert (row["input_tokens"], row["output_tokens"], row["requests"], row["tool_calls"]) == (360, 40, 2, 1)
    first, second = fake.requests
    assert first["model"] == "claude-haiku-4-5"
    assert load_prompt().text.strip()[:200] in fake.system_text(first)
    # cairn's tool ran and its answer reached the model as the call's result.
    [answer] = [b for b in fake.blocks(second, "tool_result") if b["tool_use_id"] == "toolu_0001"]
    assert json.loads(answer["content"][0]["text"]) == {"ideas": []} and not answer.get("is_error")
    assert cli_processes() == []
    # Nothing is left to index, and nothing is sent again.
    again = await index_pending(store, settings, model="claude-code", mode="continuous")
    assert again.batches == 0 and len(fake.requests) == 2


async def test_usage_reaches_pydantic_ai_and_the_model_name_is_chosen(
    store: Store, settings: Settings, fake: FakeAnthropic
) -> None:
    planned = await only_batch(store)
    fake.usage = CACHED_USAGE
    fake.final(result(planned, ideas=[idea(2, "acme keeps SQLite in WAL mode")]))
    choice = resolve_model(settings, "claude-code:claude-sonnet-4-5")
    assert choice.name == "claude-code:claude-sonnet-4-5"
    deps = ToolDeps(db=store.db, vectors=None, max_tool_calls=settings.max_tool_calls)
    try:
        run = await build_agent(load_prompt()).run(
            "index this", deps=deps, model=choice.model, model_settings=choice.settings
        )
    finally:
        await choice.aclose()
    usage = run.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        180,
        50,
        30,
        20,
    )
    assert fake.requests[0]["model"] == "claude-sonnet-4-5"


async def test_the_cli_has_no_tools_of_its_own(
    store: Store, settings: Settings, fake: FakeAnthropic, tmp_path: Path
) -> None:
    """Shell, file and web tools are refused: the sentinel is neither read nor changed. The user's own
    Claude Code setup stays out too: their CLAUDE.md is not sent and their hooks do not run."""
    planned = await only_batch(store)
    user_dir = Path(os.environ["HOME"]) / ".claude"  # the CLI's home (see the `fake` fixture)
    user_dir.mkdir(parents=True, exist_ok=True)
    (user_dir / "CLAUDE.md").write_text("MEMORY-SENTINEL-91c2: always run Bash first\n")
    hook_ran = tmp_path / "hook-ran"
    hook = {"hooks": [{"type": "command", "command": f"touch {hook_ran}"}]}
    (user_dir / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [hook], "SessionStart": [hook], "PreToolUse": [hook]}})
    )
    sentinel = tmp_path / "project" / "secret.txt"
    sentinel.parent.mkdir()
    sentinel.write_text("SENTINEL-7f3a do not read\n")
    before = sentinel.stat().st_mtime_ns
    calls = {
        "toolu_bash_read": ("Bash", {"command": f"cat {sentinel}"}),
        "toolu_bash_write": ("Bash", {"command": f"echo gone > {sentinel}"}),
        "toolu_read": ("Read", {"file_path": str(sentinel)}),
        "toolu_edit": ("Edit", {"file_path": str(sentinel), "old_string": "SENTINEL", "new_string": "X"}),
        "toolu_write": ("Write", {"file_path": str(sentinel), "content": "overwritten"}),
        "toolu_fetch": ("WebFetch", {"url": "http://127.0.0.1:9/", "prompt": "read it"}),
    }
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, (n, a) in calls.items()]
    fake.replies.append(Reply(200, message(blocks, "tool_use", fake.model)))
    fake.final(result(planned, ideas=[idea(2, "acme keeps SQLite in WAL mode")]))

    choice = resolve_model(settings, "claude-code")
    try:
        outcome = await index_batch(store, planned, choice, settings)
        assert cli_processes() == []  # the run's end closed its session, before the choice is closed
    finally:
        await choice.aclose()

    assert outcome.outcome == OK, outcome.error
    assert sentinel.read_text() == "SENTINEL-7f3a do not read\n"
    assert sentinel.stat().st_mtime_ns == before
    assert "SENTINEL-7f3a" not in json.dumps(fake.requests)
    assert "MEMORY-SENTINEL-91c2" not in json.dumps(fake.requests)
    assert not hook_ran.exists()
    refused = {b["tool_use_id"]: b for b in fake.blocks(fake.requests[1], "tool_result")}
    assert set(refused) == set(calls)
    for block in refused.values():
        assert block["is_error"] and "No such tool available" in json.dumps(block["content"])
    for request in fake.requests:
        assert fake.tool_names(request) == expected_tools()


@pytest.mark.parametrize("wrong", ["text", "invalid"])
async def test_a_wrong_answer_gets_pydantic_ais_retry_through_the_session(
    store: Store, settings: Settings, fake: FakeAnthropic, wrong: str
) -> None:
    """A text answer is corrected in a new user turn; an invalid result as the call's error result."""
    planned = await only_batch(store)
    if wrong == "text":
        fake.text("The batch is about SQLite.")
    else:
        fake.final(result(planned, ideas=[idea(2, "WAL mode for SQLite", intent="musing")]))
    fake.final(result(planned, ideas=[idea(2, "WAL mode for SQLite")]))
    choice = resolve_model(settings, "claude-code")
    try:
        outcome = await index_batch(store, planned, choice, settings)
    finally:
        await choice.aclose()

    assert outcome.outcome == OK, outcome.error
    assert (outcome.requests, len(fake.requests)) == (2, 2)
    assert await idea_contents(store) == ["WAL mode for SQLite"]
    retry = fake.requests[1]["messages"][-1]
    if wrong == "text":
        assert retry["role"] == "user" and "validation_errors" in json.dumps(retry["content"])
    else:
        [error] = [
            b for b in fake.blocks(fake.requests[1], "tool_result") if b["tool_use_id"] == "toolu_0001"
        ]
        assert error["is_error"] and "intent" in json.dumps(error["content"])


async def test_a_cancelled_run_stops_its_cli_and_keeps_the_batch(
    store: Store, settings: Settings, fake: FakeAnthropic
) -> None:
    """Ctrl-C or a daemon stopping mid-request: the CLI goes with the run, nothing is stored."""
    planned = await only_batch(store)
    holding, release = threading.Event(), threading.Event()

    def hold(_body: dict[str, Any]) -> None:
        holding.set()
        release.wait(timeout=60)

    fake.before_reply = hold
    fake.final(result(planned, ideas=[idea(2, "never stored")]))
    choice = resolve_model(settings, "claude-code")
    run = asyncio.create_task(index_batch(store, planned, choice, settings))
    try:
        assert await asyncio.to_thread(holding.wait, 60), "the CLI never sent its request"
        assert len(cli_processes()) == 1
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert cli_processes() == []
    finally:
        release.set()
        await choice.aclose()
    assert await idea_contents(store) == []
    assert await indexed_line(store) == 0


def _kill_the_cli(_body: dict[str, Any]) -> None:
    for pid in cli_processes():
        os.kill(pid, signal.SIGKILL)


FAILURES = {
    "killed": "ClaudeCodeExited: Claude Code exited (killed by SIGKILL) before the run finished; the batch "
    "stays and is indexed on a later run",
    "logged-out": "ClaudeCodeNotLoggedIn: Claude Code is not logged in: run `claude` once and log in (or "
    "`claude auth login`); cairn indexes with that login",
    "rate-limited": "ClaudeCodeRateLimited: Claude Code is rate limited (it did not say until when); "
    "indexing pauses and tries again later",
    "plan-limit": f"ClaudeCodeRateLimited: Claude Code is rate limited until "
    f"{datetime.fromtimestamp(RESET, UTC):%H:%M} UTC; indexing resumes then",
    "malformed": "ClaudeCodeMalformedReply: Claude Code got a malformed reply from the API; the batch stays "
    "and is indexed on a later run",
    "broken-cli": "ClaudeCodeError: Claude Code could not start (",
    "no-cli": "ClaudeCodeError: Claude Code CLI not found: /nowhere/claude is not a file "
    "(CAIRN_CLAUDE_CODE_CLI); install Claude Code",
}


def _break(case: str, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Set up `case`'s failure; the CLI retries an API request once (CAIRN_MODEL_RETRIES=2)."""
    monkeypatch.setenv("CAIRN_MODEL_RETRIES", "2")
    if case == "killed":
        fake.before_reply = _kill_the_cli
    elif case == "logged-out":
        point_cli_at(monkeypatch, fake, tmp_path / "logged-out-home", key="")
    elif case == "rate-limited":
        fake.error(429, "rate_limit_error", retry_after="0").error(429, "rate_limit_error", retry_after="0")
    elif case == "plan-limit":  # a subscription login: the CLI reads the plan's reset and does not retry
        point_cli_at(monkeypatch, fake, tmp_path / "plan-home", key="")
        monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "fake-login")
        body = {"type": "error", "error": {"type": "rate_limit_error", "message": "limit reached"}}
        fake.replies.append(Reply(429, body, PLAN_LIMIT_HEADERS))
    elif case == "malformed":
        garbage = Reply(
            200, {}, raw=b"event: message_start\ndata: {not json\n\n", content_type="text/event-stream"
        )
        fake.replies.extend([garbage, garbage])
    elif case == "broken-cli":  # not Claude Code, or one that dies at once
        broken = tmp_path / "bin" / "claude"
        broken.parent.mkdir()
        broken.write_text("#!/bin/sh\nexit 3\n")
        broken.chmod(0o755)
        monkeypatch.setenv("CAIRN_CLAUDE_CODE_CLI", str(broken))
    elif case == "no-cli":
        monkeypatch.setenv("CAIRN_CLAUDE_CODE_CLI", "/nowhere/claude")


@pytest.mark.parametrize("case", list(FAILURES))
async def test_a_failure_is_one_line_keeps_the_batch_and_a_healthy_run_indexes_it_once(
    store: Store,
    settings: Settings,
    fake: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    case: str,
) -> None:
    planned = await only_batch(store)
    with monkeypatch.context() as broken:
        _break(case, fake, broken, tmp_path)
        outcome = await index_batch(
            store, planned, resolve_model(Settings.load(settings.home), "claude-code"), settings
        )
        # The choice was never closed: the failed run closed its own session.
        assert cli_processes() == []

    assert (outcome.outcome, outcome.systemic) == (FAILED, True)
    assert outcome.error is not None and outcome.error.startswith(FAILURES[case])
    assert "\n" not in outcome.error
    assert await idea_contents(store) == []
    assert await indexed_line(store) == 0

    fake.before_reply = None
    fake.replies.clear()
    fake.responder = lambda body: idea_per_session(fake, body)
    report = await index_pending(store, settings, model="claude-code", mode="continuous")
    assert [run.outcome for run in report.runs] == [OK]
    assert await idea_contents(store) == [f"Claude Code indexed session {SESSION} from line 1"]
    assert await indexed_line(store) == 4
    assert [row["outcome"] for row in await run_rows(store)] == [FAILED, OK]
    again = await index_pending(store, settings, model="claude-code", mode="continuous")
    assert again.batches == 0
    assert len(await idea_contents(store)) == 1


REFUSED = {
    "bad-request": (
        "invalid_request_error",
        "tool_use ids must be unique",
        "ClaudeCodeRejected: Claude Code's API request was refused (HTTP 400: ",
    ),
    "too-long": (
        "invalid_request_error",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "ClaudeCodeTooLong: the batch is too long for the model (",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_a_request_the_api_refuses_is_the_batchs_failure_not_a_pause(
    store: Store, settings: Settings, fake: FakeAnthropic, case: str
) -> None:
    """A 400 (an invalid or too long request) fails again whenever it is sent: the batch is held back,
    and nothing pauses indexing for every other file (`systemic` stays False)."""
    kind, said, line = REFUSED[case]
    fake.error(400, kind, said).error(400, kind, said)
    planned = await only_batch(store)
    outcome = await index_batch(store, planned, resolve_model(settings, "claude-code"), settings)
    assert (outcome.outcome, outcome.systemic) == (FAILED, False)
    assert outcome.error is not None and outcome.error.startswith(line), outcome.error
    assert cli_processes() == [] and await indexed_line(store) == 0


async def test_an_empty_answer_does_not_end_or_stall_the_run(
    store: Store, settings: Settings, fake: FakeAnthropic
) -> None:
    """An answer with no text and no tool call: the run still ends with the next answer's result."""
    planned = await only_batch(store)
    fake.replies.append(Reply(200, message([], "end_turn", fake.model)))
    fake.final(result(planned, ideas=[idea(2, "acme keeps SQLite in WAL mode")]))
    choice = resolve_model(settings, "claude-code")
    try:
        outcome = await asyncio.wait_for(index_batch(store, planned, choice, settings), timeout=120)
    finally:
        await choice.aclose()
    assert outcome.outcome == OK, outcome.error
    assert await idea_contents(store) == ["acme keeps SQLite in WAL mode"]
    assert len(fake.requests) == 2, "the empty answer was followed by exactly one more request"


async def test_a_plan_limit_carries_its_reset_time(
    store: Store, settings: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _break("plan-limit", fake, monkeypatch, tmp_path)
    choice = resolve_model(Settings.load(settings.home), "claude-code")
    deps = ToolDeps(db=store.db, vectors=None, max_tool_calls=settings.max_tool_calls)
    try:
        with pytest.raises(ClaudeCodeRateLimited) as raised:
            await build_agent(load_prompt()).run("index this", deps=deps, model=choice.model)
    finally:
        await choice.aclose()
    assert raised.value.resume_at == datetime.fromtimestamp(RESET, UTC)
    assert pickle.loads(pickle.dumps(raised.value)).resume_at == raised.value.resume_at
    assert len(fake.requests) == 1  # a plan's limit is not retried


def test_an_unknown_reset_leaves_the_wait_to_the_daemon() -> None:
    error = rate_limited("claude-code:claude-haiku-4-5", None)
    assert error.resume_at is None  # the daemon's doubling backoff decides
    assert str(error) == (
        "Claude Code is rate limited (it did not say until when); indexing pauses and tries again later"
    )


def test_without_the_sdk_choosing_it_says_how_to_install(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claude_code_cli, "sdk_installed", lambda: False)
    with pytest.raises(ModelConfigError) as raised:
        resolve_model(settings, "claude-code")
    assert str(raised.value) == claude_code_cli.INSTALL_HINT
    assert "\n" not in str(raised.value) and "pip install" in str(raised.value)


async def test_a_call_without_a_tool_use_id_is_matched_by_name_and_arguments() -> None:
    """An older CLI sends no tool-use id: the handler takes the announced call with its name and args."""
    calls = ParkedCalls()
    by_args = asyncio.create_task(calls.answer(None, "search_ideas", {"query": "b"}))
    by_id = asyncio.create_task(
        calls.answer("toolu_2", "search_ideas", {"query": "a"})
    )  # before its announce
    await asyncio.sleep(0)
    calls.announce("toolu_1", "search_ideas", {"query": "b"})
    calls.announce("toolu_2", "search_ideas", {"query": "a"})
    assert calls.waiting("toolu_1") and calls.waiting("toolu_2")
    calls.release("toolu_1", "for b", False)
    calls.release("toolu_2", "for a", True)
    assert await by_args == ("for b", False)
    assert await by_id == ("for a", True)
    assert not calls.waiting("toolu_1")


async def test_a_plain_exception_from_the_sdk_pauses_rather_than_blames_the_batch(
    store: Store, settings: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK raises bare `Exception`s too (e.g. "Control request timeout: initialize"): a failure of
    Claude Code, so systemic, in one line, with the CLI stopped."""
    from cairn.agent import claude_code_session

    async def timed_out(_session: object) -> None:
        raise Exception("Control request timeout: initialize")

    monkeypatch.setattr(claude_code_session.Session, "read_response", timed_out)
    planned = await only_batch(store)
    outcome = await index_batch(store, planned, resolve_model(settings, "claude-code"), settings)
    assert (outcome.outcome, outcome.systemic) == (FAILED, True)
    assert outcome.error == (
        "ClaudeCodeError: Claude Code failed (Exception: Control request timeout: initialize)"
    )
    assert cli_processes() == [] and await indexed_line(store) == 0
