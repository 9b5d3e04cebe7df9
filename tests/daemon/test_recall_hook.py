"""The recall hook as Claude Code runs it: the command `cairn install` writes, a real daemon, real memory.

A store is indexed offline once per module (the demo session, about a flaky orders test in the project
`/home/dev/acme-api`, and one small real transcript of another project) and kept as a snapshot no
daemon ever serves; the module's daemon serves a copy, and the tests that need a differently
configured daemon (or none) copy the snapshot again. The hook gets Claude Code's JSON on stdin and
must answer with exactly the documented `hookSpecificOutput` object, or with nothing at all.

Speed is the benchmark's business (`benchmarks/recall.py`): the tests that check what is injected give
the hook a generous deadline so a loaded machine cannot make them flaky, and only the daemon-down cases
run with the real one, asserting a bound loose enough to catch nothing but a hang.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.tokens import count_tokens
from tests.daemon.helpers import Daemons, alive, pidfile_pid, wait_for
from tests.helpers.cli import cairn
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.helpers.recall_hook import (
    DEMO_CWD,
    HANG_S,
    ON_TOPIC,
    PATIENT_MS,
    fake_daemon,
    idea_ids,
    injected,
    new_session,
    payload,
    prompt,
    run_hook,
    serving,
    session_start,
    warm,
)

DEMO = Path(__file__).resolve().parents[2] / "cairn" / "demo" / "demo-session.jsonl"
OTHER = REAL_TRANSCRIPTS / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
OTHER_CWD = "/path/to/Demo"
DAEMON_ENV = {
    "CAIRN_MODEL": "offline",
    "CAIRN_BATCH_WINDOW_SECONDS": "0.2",
    "CAIRN_IDLE_EXIT_SECONDS": "3600",
}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An indexed CAIRN_HOME that no daemon serves, and the module's environment (no outside CAIRN_*)."""
    root = tmp_path_factory.mktemp("recall-hook")
    home = root / "snapshot"
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(home))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        for key, value in DAEMON_ENV.items():
            mp.setenv(key, value)
        report = json.loads(cairn("index", str(DEMO), str(OTHER), "--model", "offline", "--json").stdout)
        assert report["runs_failed"] == 0 and report["messages_added"] > 20
        yield home


def copy_store(snapshot: Path, dest: Path) -> Path:
    shutil.copytree(snapshot, dest)
    return dest


@pytest.fixture(scope="module")
def served(snapshot: Path) -> Iterator[Path]:
    """A copy of the snapshot with a daemon on the default recall settings."""
    with serving(copy_store(snapshot, snapshot.with_name("served"))) as home:
        yield home


def log_lines(home: Path) -> list[str]:
    try:
        return (home / "logs" / "hook.log").read_text().splitlines()
    except FileNotFoundError:
        return []


# With the daemon up


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_session_start_injects_the_projects_open_items_and_decisions(served: Path, source: str) -> None:
    context = injected(run_hook(served, session_start(new_session(), source)), "SessionStart")
    assert context is not None
    assert "acme-api" in context
    # The demo session settles what it asks: the Postgres question is answered and the load test done,
    # so neither is open; what settled them is shown instead.
    assert "Open questions:" not in context and "Open todos:" not in context
    assert "We do not need Postgres for Black Friday" in context, "the conclusion that answered it"
    # "20 runs in a row passed. The flaky failure is fixed." reports a state, not the change: the
    # change is the decision, and the report is progress chatter a hand-off leaves out.
    assert "The flaky failure is fixed" not in context
    assert "BEGIN IMMEDIATE" in context and "WAL" in context, "the decision"
    assert count_tokens(context) <= Settings.load(served).recall_session_tokens
    ids = idea_ids(context)
    assert ids and len(ids) == len(set(ids))


def test_session_start_recalls_only_the_sessions_own_project(served: Path) -> None:
    other = injected(run_hook(served, session_start(new_session(), cwd=OTHER_CWD)), "SessionStart")
    assert other is None or ("orders" not in other and "Postgres" not in other)
    elsewhere = run_hook(served, session_start(new_session(), cwd="/home/dev/never-seen"))
    assert injected(elsewhere, "SessionStart") is None
    below = run_hook(served, session_start(new_session(), cwd=f"{DEMO_CWD}/src/orders"))
    context = injected(below, "SessionStart")
    assert context is not None and "Postgres" in context, "a subdirectory belongs to its project"


def test_a_prompt_on_a_remembered_topic_injects_the_related_ideas(served: Path) -> None:
    context = injected(run_hook(served, prompt(new_session(), ON_TOPIC)), "UserPromptSubmit")
    assert context is not None
    assert "database is locked" in context or "test_concurrent_checkout" in context
    ids = idea_ids(context)
    assert 0 < len(ids) <= Settings.load(served).recall_prompt_lines


@pytest.mark.parametrize(
    "text", ["what's a good recipe for banana bread?", "translate 'good morning' into Portuguese"]
)
def test_an_unrelated_prompt_injects_nothing(served: Path, text: str) -> None:
    assert injected(run_hook(served, prompt(new_session(), text)), "UserPromptSubmit") is None


def test_a_prompt_outside_any_known_project_injects_nothing(served: Path) -> None:
    proc = run_hook(served, prompt(new_session(), ON_TOPIC, cwd="/home/dev/never-seen"))
    assert injected(proc, "UserPromptSubmit") is None


def test_the_same_prompt_twice_in_a_session_injects_nothing_it_was_shown(served: Path) -> None:
    session = new_session()
    first = injected(run_hook(served, prompt(session, ON_TOPIC)), "UserPromptSubmit")
    assert first is not None
    second = injected(run_hook(served, prompt(session, ON_TOPIC)), "UserPromptSubmit")
    assert second is None or not set(idea_ids(second)) & set(idea_ids(first)), "only the next best, if any"
    again = injected(run_hook(served, prompt(new_session(), ON_TOPIC)), "UserPromptSubmit")
    assert again is not None and idea_ids(again) == idea_ids(first), (
        "what one session saw, another still gets"
    )


def test_a_refused_request_prints_nothing_and_is_logged(served: Path) -> None:
    before = len(log_lines(served))
    proc = run_hook(served, prompt("   ", ON_TOPIC))
    assert proc.stdout == b""
    new = log_lines(served)[before:]
    assert len(new) == 1 and "cairn-recall:" in new[0] and "session_id" in new[0]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": ',
        json.dumps({"hook_event_name": "Stop", "session_id": "s", "cwd": DEMO_CWD}).encode(),
        json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": DEMO_CWD, "prompt": ON_TOPIC}).encode(),
        json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "  "}).encode(),
        json.dumps({"hook_event_name": "SessionStart", "session_id": 7, "cwd": DEMO_CWD}).encode(),
        json.dumps(prompt("s", ON_TOPIC + " " + "x" * (5 * 1024 * 1024))).encode(),
    ],
    ids=[
        "empty",
        "garbage",
        "array",
        "truncated",
        "other-event",
        "no-session",
        "blank-prompt",
        "bad-id",
        "huge",
    ],
)
def test_garbage_and_foreign_payloads_inject_nothing(served: Path, data: bytes) -> None:
    assert run_hook(served, data).stdout == b""


# Configured differently


def test_recall_switched_off_in_the_daemons_config_injects_nothing(snapshot: Path, tmp_path: Path) -> None:
    with serving(copy_store(snapshot, tmp_path / "home"), CAIRN_RECALL_ENABLED="false") as home:
        session = new_session()
        assert run_hook(home, session_start(session)).stdout == b""
        assert run_hook(home, prompt(session, ON_TOPIC)).stdout == b""
        assert log_lines(home) == [], "switched off is not a failure"


def test_the_token_and_line_budgets_are_respected(served: Path, snapshot: Path, tmp_path: Path) -> None:
    unlimited = injected(run_hook(served, session_start(new_session())), "SessionStart")
    assert unlimited is not None
    budget = {"CAIRN_RECALL_SESSION_TOKENS": "200", "CAIRN_RECALL_PROMPT_LINES": "1"}
    with serving(copy_store(snapshot, tmp_path / "home"), **budget) as home:
        start = injected(run_hook(home, session_start(new_session())), "SessionStart")
        assert start is not None and count_tokens(start) <= 200
        assert 0 < len(idea_ids(start)) < len(idea_ids(unlimited)), "the budget cut the index short"
        related = injected(run_hook(home, prompt(new_session(), ON_TOPIC)), "UserPromptSubmit")
        assert related is not None and len(idea_ids(related)) == 1


# Without a daemon, or with a broken one


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_no_daemon_injects_nothing_at_once_and_logs_nothing(snapshot: Path, event: str) -> None:
    data = session_start(new_session()) if event == "SessionStart" else prompt(new_session(), ON_TOPIC)
    started = time.monotonic()
    proc = run_hook(snapshot, data, deadline_ms=None)
    assert time.monotonic() - started < HANG_S
    assert proc.stdout == b""
    assert log_lines(snapshot) == [], "no daemon is the normal state of an idle machine"


def test_a_stale_socket_is_the_same_as_no_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(home / "cairn.sock"))
    stale.close()  # the file stays, nobody listens: a daemon that was killed
    proc = run_hook(home, session_start(new_session()), deadline_ms=None)
    assert proc.stdout == b"" and log_lines(home) == []


def test_the_request_carries_the_hooks_fields_and_a_good_answer_is_relayed_verbatim(tmp_path: Path) -> None:
    text = '<cairn-memory>\nline with "quotes", ünïcode and a \\ backslash\n</cairn-memory>'
    reply = {"ok": True, "result": {"additionalContext": text, "ids": [1], "took_ms": 1.0}}
    home = tmp_path / "home"
    with fake_daemon(home, lambda _line: json.dumps(reply).encode() + b"\n") as requests:
        start = run_hook(home, session_start("s1", "resume"), deadline_ms=None)
        said = run_hook(home, prompt("s1", ON_TOPIC), deadline_ms=None)
    assert injected(start, "SessionStart") == text
    assert json.loads(said.stdout) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}
    }
    common = {
        "session_id": "s1",
        "cwd": DEMO_CWD,
        "transcript_path": payload("Stop", "s1")["transcript_path"],
    }
    assert [json.loads(r) for r in requests] == [
        {"op": "recall", "args": {"event": "SessionStart", "prompt": None, "source": "resume", **common}},
        {"op": "recall", "args": {"event": "UserPromptSubmit", "prompt": ON_TOPIC, "source": None, **common}},
    ]


@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        (b'{"ok": true, "result": {"additionalContext": null, "ids": [], "took_ms": 1}}\n', False),
        (b'{"ok": true, "result": {"additionalContext": " ", "ids": [], "took_ms": 1}}\n', False),
        (b'{"ok": false, "error": "unknown op \'recall\'"}\n', True),
        (b'{"ok": true, "result": {"additionalContext": 42}}\n', True),
        (b'{"ok": true, "result": [1]}\n', True),
        (b"not json\n", True),
        (b"", True),
        (None, True),
    ],
    ids=["null", "blank", "refused", "not-text", "not-object", "garbage", "hung-up", "silent"],
)
def test_a_broken_or_slow_daemon_injects_nothing_in_time(
    tmp_path: Path, reply: bytes | None, failure: bool
) -> None:
    home = tmp_path / "home"
    with fake_daemon(home, lambda _line: reply):
        started = time.monotonic()
        proc = run_hook(home, prompt("s", ON_TOPIC), deadline_ms=None)
        elapsed = time.monotonic() - started
    assert proc.stdout == b"" and elapsed < HANG_S
    logged = log_lines(home)
    if failure:
        assert len(logged) == 1 and "cairn-recall:" in logged[0], logged
    else:
        assert logged == [], "nothing to inject is not a failure"


# Starting the daemon


def test_session_start_starts_a_missing_daemon_without_waiting_for_it(snapshot: Path, tmp_path: Path) -> None:
    home = copy_store(snapshot, tmp_path / "home")
    daemons = Daemons(home)
    try:
        started = time.monotonic()
        first = run_hook(home, session_start(new_session()), deadline_ms=None, CAIRN_HOOK_NO_SPAWN="0")
        assert time.monotonic() - started < HANG_S and first.stdout == b""
        wait_for(lambda: (pid := pidfile_pid(home)) is not None and alive(pid), 30, "the daemon to start")
        warm(home)
        later = injected(run_hook(home, session_start(new_session())), "SessionStart")
        assert later is not None and "Postgres" in later
    finally:
        daemons.cleanup()


def test_cairn_hook_recall_answers_the_same_for_debugging(served: Path) -> None:
    environ = {**os.environ, "CAIRN_HOME": str(served), "CAIRN_RECALL_DEADLINE_MS": str(PATIENT_MS)}
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", "hook", "--recall"],
        input=json.dumps(prompt(new_session(), ON_TOPIC)).encode(),
        capture_output=True,
        env=environ,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    context = injected(proc, "UserPromptSubmit")
    assert context is not None and idea_ids(context)
