"""The daemon's failure path as a real process: retry with backoff, park after N attempts, no harm done.

Runs fail deterministically because the daemon talks to a fake Anthropic Messages API on 127.0.0.1
(or to a closed port) instead of the offline model: the real HTTP path, the real error
classification, the real queue bookkeeping. What must hold (issue 4, section 2): a failing file's
queue item comes back with an attempt count, its error and a next-try time, then is parked and shown
by `cairn status`; its messages are captured but its indexing cursor does not move and it gets no
ideas; and it does not hold back another file indexed in the same cycle. A failure of the model itself
(unreachable, logged out, rate limited) parks nothing: it pauses indexing (`tests/daemon/test_pause.py`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.schema import BATCH_OPEN, extract_batch
from cairn.daemon.loop import RETRY_BACKOFF_SECONDS
from tests.agent.fake_anthropic import FakeAnthropic, Reply, idea_per_update
from tests.daemon.helpers import Daemons, cairn, enqueue, query, status_json, wait_for
from tests.helpers.paths import DEMO

GOOD = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001"
BAD = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000002"
POISON = "-work-poison"
MAX_ATTEMPTS = 2
# First failure, the backoff before the second try, the second failure; with room for slow machines.
PARK_TIMEOUT = RETRY_BACKOFF_SECONDS + 30


class PoisonAnthropic(FakeAnthropic):
    """Rejects (HTTP 400) every request whose batch holds a file of the poison project; answers the
    others with one idea per session update, at the update's first message.

    Deciding by the request's content rather than by a scripted order is what lets one run over both
    files fail, and each file's run alone then fail or succeed on its own.
    """

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
        prompt = next(
            block["text"] for block in self.blocks(body, "text") if BATCH_OPEN in block.get("text", "")
        )
        batch = extract_batch(prompt)
        if any(POISON in update.file_path for update in batch.updates):
            return Reply(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": "poison"}}
            )
        ideas = idea_per_update(
            batch, lambda update: f"The daemon indexed session {update.session} despite a failing neighbour"
        )
        return Reply(200, self.tool_message("final_result", {"ideas": ideas}))


@pytest.fixture
def failing_daemons(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    """Daemons on the Anthropic path with few attempts; the finaliser kills every one of them."""
    monkeypatch.setenv("CAIRN_MODEL", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.1")
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "60")
    monkeypatch.setenv("CAIRN_QUEUE_MAX_ATTEMPTS", str(MAX_ATTEMPTS))
    monkeypatch.setenv("CAIRN_MODEL_RETRIES", "1")
    # `cairn()` drops ANTHROPIC_API_KEY so no test can spend real money; these daemons need one to take
    # the Anthropic path at all, and only ever reach the fake server on 127.0.0.1.
    started = Daemons(cairn_home, env={"ANTHROPIC_API_KEY": "sk-ant-test"})
    try:
        yield started
    finally:
        started.cleanup()


def _copy_transcript(projects_root: Path, project: str, session: str) -> Path:
    target = projects_root / project / f"{session}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEMO, target)
    return target


def _file_state(home: Path, path: Path) -> tuple[int, int, int]:
    """(messages captured, indexed_line, ideas) of one transcript file."""
    [(messages, indexed, ideas)] = query(
        home,
        "SELECT (SELECT count(*) FROM messages m WHERE m.file_id = f.id), f.indexed_line, "
        "(SELECT count(*) FROM ideas i WHERE i.source_file_id = f.id) "
        "FROM transcript_files f WHERE f.path = ?",
        (str(path.resolve()),),
    )
    return int(messages), int(indexed), int(ideas)


def _queue_row(home: Path, path: Path) -> tuple[str, int, str | None, str | None]:
    """(status, attempts, next_try_at, last_error) of the newest queue row of `path`."""
    rows = query(
        home,
        "SELECT status, attempts, next_try_at, last_error FROM work_queue WHERE path = ? ORDER BY id DESC",
        (str(path),),
    )
    status, attempts, next_try, error = rows[0]
    return str(status), int(attempts), next_try, error  # type: ignore[return-value]


def test_failing_file_is_retried_then_parked_without_holding_back_another(
    failing_daemons: Daemons, cairn_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects_root = tmp_path / "claude-projects"
    good = _copy_transcript(projects_root, "-work-demo", GOOD)
    bad = _copy_transcript(projects_root, POISON, BAD)
    with PoisonAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        failing_daemons.start()
        # Both in one cycle: the run over both files fails, each file then gets a run of its own.
        enqueue(cairn_home, good, GOOD)
        enqueue(cairn_home, bad, BAD)

        wait_for(
            lambda: _queue_row(cairn_home, bad)[:2] == ("pending", 1), 30, "the failing item to be retried"
        )
        status, attempts, next_try, error = _queue_row(cairn_home, bad)
        assert next_try is not None and error is not None and "400" in error, (next_try, error)
        # The good file was indexed in that same cycle, not after the failing file's retries.
        messages, indexed, ideas = _file_state(cairn_home, good)
        assert indexed > 0 and ideas > 0, "the good file was indexed despite its failing neighbour"

        wait_for(lambda: _queue_row(cairn_home, bad)[0] == "parked", PARK_TIMEOUT, "the item to be parked")
        status, attempts, next_try, error = _queue_row(cairn_home, bad)
        assert (status, attempts, next_try) == ("parked", MAX_ATTEMPTS, None)
        assert error is not None and "400" in error

        failing_daemons.wait_idle()
        messages, indexed, ideas = _file_state(cairn_home, bad)
        assert messages > 0, "the failing file's messages were captured"
        assert (indexed, ideas) == (0, 0), "a failed run moves no cursor and applies nothing"
        good_ideas = _file_state(cairn_home, good)[2]

        state = status_json()
        assert state["daemon"]["running"] is True
        [parked] = state["parked"]
        assert parked["path"] == str(bad) and parked["attempts"] == MAX_ATTEMPTS
        assert "400" in parked["last_error"]
        assert state["queue"]["parked"] == 1 and state["depth"] == 0
        outcomes = [run["outcome"] for run in state["recent_runs"]]
        assert "failed" in outcomes and "ok" in outcomes
        assert state["today"]["failed_runs"] >= MAX_ATTEMPTS and state["ideas"] == good_ideas

        monkeypatch.setenv("COLUMNS", "400")  # one table row per item, so the path is found whole
        text = cairn("status")
        assert text.returncode == 0, text.stderr
        [row] = [line for line in text.stdout.splitlines() if f"{BAD}.jsonl" in line]
        assert "poison" in row and f" {MAX_ATTEMPTS} " in row
