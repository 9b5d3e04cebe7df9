"""The daemon's pause through the whole real `claude-code` path, one failure mode after another.

One real daemon process indexes with `CAIRN_MODEL=claude-code`: each run starts the real Claude Code
CLI (the one claude-agent-sdk bundles), which talks to cairn's fake Messages API on 127.0.0.1. The
fake goes through the failures issue 33 names, healing between them: the CLI killed mid-request, a
logged-out CLI (the API answering 401 authentication_error, as it does to an expired login), a 429,
and a malformed reply. For each, what must hold: `cairn status` (JSON and the table) shows one line
naming the cause; no queue item is parked or retried for it, however many probes fail; the store
holds nothing of the failed runs; a transcript line appended meanwhile is captured and found by
`cairn search`; once the fake heals, the daemon lifts the pause by itself and leaves no CLI behind.
At the end every message reached the model in exactly one applied run, and when the daemon stops no
CLI remains.

One daemon for all four keeps the suite short: each probe starts a CLI, which takes seconds.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.agent.claude_code_tools import TOOL_PREFIX
from cairn.daemon.pause import PAUSE_FILE
from tests.agent.claude_code_helpers import cli_processes, clis_of, point_cli_at, require_cli
from tests.agent.fake_anthropic import Reply
from tests.daemon.helpers import Daemons, cairn, enqueue, query, status_json, wait_for
from tests.daemon.pause_helpers import HealingAnthropic
from tests.helpers.indexer import _entry
from tests.helpers.paths import DEMO

SESSION = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000133"
MODEL = "claude-code:claude-haiku-4-5"
MAX_ATTEMPTS = 1  # one failure a queue item is charged for would park it
# Each failure mode: what the pause line must say, and a word only a line appended during it holds.
FAILURES: dict[str | int, tuple[str, str]] = {
    "killed": ("Claude Code exited (killed by SIGKILL) before the run finished", "quokkamigration"),
    401: ("Claude Code is not logged in: run `claude` once and log in", "wombatledger"),
    429: ("Claude Code is rate limited (it did not say until when)", "numbatschema"),
    "malformed": ("Claude Code got a malformed reply from the API", "bilbycache"),
}
# A stream that starts and cannot be parsed.
GARBAGE = b"event: message_start\ndata: {not json\n\n"
# Deadlines: each probe starts a CLI (a Node runtime), slow on a loaded 2-core machine.
PROBES = 180
SETTLE = 240


class FailingClaudeCode(HealingAnthropic):
    """The healing fake as the CLI sees it, with two more ways to fail: killing the requesting CLI (the
    daemon's only one) before answering, and a stream that is not JSON."""

    def __init__(self) -> None:
        super().__init__(failing=None, tool_prefix=TOOL_PREFIX)
        self.daemon: int | None = None

    def refusal(self, failing: int | str) -> Reply:
        if failing == "killed":
            assert self.daemon is not None
            for pid in cli_processes(self.daemon):
                os.kill(pid, signal.SIGKILL)
            # Never read: the CLI is gone before the handler writes it.
            return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "unreachable"}})
        if failing == "malformed":
            return Reply(200, {}, raw=GARBAGE, content_type="text/event-stream")
        return super().refusal(failing)


@pytest.fixture
def fake(cairn_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FailingClaudeCode]:
    """The fake, and the environment every daemon started meanwhile (and so its CLIs) inherits."""
    require_cli()
    with FailingClaudeCode() as server:
        point_cli_at(monkeypatch, server, tmp_path / "cli-home")
        monkeypatch.setenv("CAIRN_MODEL", "claude-code")
        monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.1")
        monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "600")
        monkeypatch.setenv("CAIRN_QUEUE_MAX_ATTEMPTS", str(MAX_ATTEMPTS))
        monkeypatch.setenv("CAIRN_MODEL_RETRIES", "1")  # the CLI retries no API request itself
        monkeypatch.setenv("CAIRN_PAUSE_BACKOFF_SECONDS", "0.3")
        yield server


@pytest.fixture
def daemons(cairn_home: Path, fake: FailingClaudeCode) -> Iterator[Daemons]:
    # `cairn` drops ANTHROPIC_API_KEY from the environment it passes on: the daemon gets the fake's back.
    started = Daemons(cairn_home, env={"ANTHROPIC_API_KEY": "fake"})
    try:
        yield started
    finally:
        started.cleanup()


def _count(home: Path, sql: str, params: tuple[object, ...] = ()) -> int:
    [(n,)] = query(home, sql, params)
    return int(n)  # type: ignore[call-overload]


def _pending_messages(home: Path) -> int:
    return _count(
        home,
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.end_line > f.indexed_line AND m.is_noise = 0",
    )


def _store_state(home: Path) -> tuple[object, ...]:
    """What indexing has written: ideas, cursors and applied runs."""
    return (
        query(home, "SELECT id, content FROM ideas ORDER BY id"),
        query(home, "SELECT path, indexed_line FROM transcript_files ORDER BY path"),
        _count(home, "SELECT count(*) FROM index_runs WHERE outcome = 'ok'"),
    )


def _failed_runs(home: Path) -> int:
    return _count(home, "SELECT count(*) FROM index_runs WHERE outcome = 'failed'")


def _append(transcript: Path, line: int, text: str) -> None:
    """A user's line, as Claude Code appends it to the session's transcript."""
    with transcript.open("a") as out:
        out.write(_entry(SESSION, line, "user", text) + "\n")


def _pause_says(cause: str) -> bool:
    pause = status_json()["pause"]
    return pause is not None and cause in pause["reason"]


def test_each_claude_code_failure_pauses_with_one_line_keeps_the_store_and_indexing_resumes(
    daemons: Daemons, fake: FailingClaudeCode, cairn_home: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "claude-projects" / "-work-demo" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(DEMO.read_text())
    fake.daemon = daemons.start()
    enqueue(cairn_home, transcript, SESSION)
    # Healthy first: the daemon indexes through the CLI, so each failure below meets a store with ideas.
    wait_for(
        lambda: _count(cairn_home, "SELECT count(*) FROM ideas") > 0 and _pending_messages(cairn_home) == 0,
        SETTLE,
        "the demo session to be indexed",
    )
    daemons.wait_idle(timeout=SETTLE)

    for number, (failing, (cause, word)) in enumerate(FAILURES.items(), start=1):
        before = _store_state(cairn_home)
        failed = _failed_runs(cairn_home)
        fake.failing = failing
        _append(transcript, 10_000 * number, f"Phase {number} moves the ledger to a new table")
        enqueue(cairn_home, transcript, SESSION)

        wait_for(lambda cause=cause: _pause_says(cause), PROBES, f"the pause for {failing!r}")
        # More probes fail than the attempts that would park the file (one run may send several
        # requests: the CLI falls back to a plain request when a stream breaks).
        wait_for(
            lambda f=failed: _failed_runs(cairn_home) > f + MAX_ATTEMPTS,
            PROBES,
            f"probes to fail ({failing!r})",
        )
        state = status_json()
        pause = state["pause"]
        assert (pause["kind"], pause["model"]) == ("model", MODEL), pause
        line = pause["line"]
        assert line.startswith(f"indexing paused: {cause}") and "; resumes " in line, line
        assert "\n" not in line and "Traceback" not in line
        assert state["queue"]["parked"] == 0 and state["parked"] == [] and state["retrying"] == []
        assert _count(cairn_home, "SELECT count(*) FROM work_queue WHERE attempts > 0") == 0
        assert (cairn_home / PAUSE_FILE).exists()
        table = cairn("status", env={"COLUMNS": "300"})
        assert table.returncode == 0, table.stderr
        assert f"indexing paused: {cause}" in " ".join(table.stdout.split()), table.stdout
        # The failed runs wrote nothing: no idea, no cursor moved, no applied run.
        assert _store_state(cairn_home) == before, failing
        assert query(cairn_home, "PRAGMA integrity_check") == [("ok",)]
        assert _pending_messages(cairn_home) > 0

        # Captured while paused: stored and found by search, though not indexed.
        _append(transcript, 10_000 * number + 100, f"Plan the {word} of the billing tables")
        enqueue(cairn_home, transcript, SESSION)  # the hook's notification: due now, though deferred
        wait_for(
            lambda w=word: (
                _count(cairn_home, "SELECT count(*) FROM messages WHERE text LIKE ?", (f"%{w}%",)) == 1
            ),
            PROBES,
            f"the line appended during the {failing!r} pause to be captured",
        )
        found = cairn("search", word, "--json")
        assert found.returncode == 0 and word in found.stdout, (found.stdout, found.stderr)
        assert status_json()["pause"] is not None

        fake.failing = None  # healed: the next probe succeeds and the daemon goes on by itself
        wait_for(lambda: _pending_messages(cairn_home) == 0, SETTLE, f"indexing to resume after {failing!r}")
        daemons.wait_idle(timeout=SETTLE)
        wait_for(lambda: status_json()["pause"] is None, SETTLE, f"the {failing!r} pause to lift")
        assert not (cairn_home / PAUSE_FILE).exists()
        # Every run closed its session: no CLI (nor an unreaped one) is left under the daemon.
        wait_for(lambda: cli_processes(fake.daemon) == [], 60, f"the CLIs of {failing!r} to be gone")
        assert _count(cairn_home, "SELECT count(*) FROM work_queue WHERE status = 'parked'") == 0

    daemons.stop()
    assert clis_of(tmp_path / "cli-home") == [], "a CLI outlived the daemon"

    assert len(fake.answered) == len(set(fake.answered)), "a message was in two applied runs"
    stored = query(
        cairn_home,
        "SELECT f.path, m.line FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.is_noise = 0",
    )
    assert {(str(p), int(line)) for p, line in stored} == set(fake.answered)  # type: ignore[call-overload]
    ideas = query(cairn_home, "SELECT source_file_id, source_line, content FROM ideas")
    assert (
        len(ideas)
        == len(set(ideas))
        == _count(cairn_home, "SELECT count(*) FROM index_runs WHERE outcome = 'ok'")
    )
    assert {outcome for (outcome,) in query(cairn_home, "SELECT outcome FROM index_runs")} == {"ok", "failed"}
    log = (cairn_home / "logs" / "daemon.log").read_text()
    assert log.count("indexing resumed") == len(FAILURES) and "Traceback" not in log
