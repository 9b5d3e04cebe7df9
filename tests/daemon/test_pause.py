"""The daemon pauses indexing while the model cannot be used, keeps capturing, and resumes by itself.

A real daemon process indexes through cairn's Anthropic path against a fake Messages API on 127.0.0.1
that first refuses every request (401: logged out / bad key; 429: rate limited), then heals. What must
hold (issue 33, part 2): while it refuses, `cairn status` shows one line saying indexing is paused and
when it resumes; no queue item is ever parked for it, however many probes fail; new transcript lines
are still captured and searchable; once it heals, the daemon goes on by itself, the pause is lifted,
and every message reaches the model in exactly one applied run.
"""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cairn.daemon.pause import PAUSE_FILE
from tests.daemon.helpers import Daemons, cairn, enqueue, query, status_json, wait_for
from tests.daemon.pause_helpers import HealingAnthropic
from tests.helpers.cli import cairn as run_cairn
from tests.helpers.indexer import _entry
from tests.helpers.paths import DEMO

SESSION = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000033"
MAX_ATTEMPTS = 2
WORD = "quokkamigration"


@pytest.fixture
def pausing_daemons(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    """Daemons on the Anthropic path with a short pause backoff and few attempts before parking (which
    a pause must never reach); the finaliser kills every one of them."""
    monkeypatch.setenv("CAIRN_MODEL", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.1")
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "120")
    monkeypatch.setenv("CAIRN_QUEUE_MAX_ATTEMPTS", str(MAX_ATTEMPTS))
    monkeypatch.setenv("CAIRN_MODEL_RETRIES", "1")
    monkeypatch.setenv("CAIRN_PAUSE_BACKOFF_SECONDS", "0.3")
    started = Daemons(cairn_home, env={"ANTHROPIC_API_KEY": "sk-ant-test"})
    try:
        yield started
    finally:
        started.cleanup()


def _queue(home: Path) -> list[tuple[object, ...]]:
    return query(home, "SELECT status, attempts, event, next_try_at FROM work_queue ORDER BY id")


def _pending_messages(home: Path) -> int:
    [(n,)] = query(
        home,
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.end_line > f.indexed_line AND m.is_noise = 0",
    )
    return int(n)  # type: ignore[call-overload]


@pytest.mark.parametrize("status", [401, 429])
def test_a_failing_model_pauses_indexing_capture_goes_on_and_it_resumes_by_itself(
    pausing_daemons: Daemons,
    cairn_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
) -> None:
    transcript = tmp_path / "claude-projects" / "-work-demo" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(DEMO, transcript)
    with HealingAnthropic(failing=status) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        pausing_daemons.start()
        enqueue(cairn_home, transcript, SESSION)

        wait_for(lambda: status_json()["pause"] is not None, 60, "the daemon to pause indexing")
        # Several probes fail, each one more than the attempts that would park a file.
        wait_for(lambda: fake.refused > MAX_ATTEMPTS + 1, 60, "more failed probes than attempts")
        state = status_json()
        pause = state["pause"]
        assert pause["kind"] == "model" and pause["model"] == "anthropic:claude-haiku-4-5"
        assert pause["line"].startswith("indexing paused: ") and "; resumes " in pause["line"]
        assert str(status) in pause["reason"] and "\n" not in pause["line"]
        assert state["queue"]["parked"] == 0 and state["parked"] == [] and state["retrying"] == []
        assert [row[:3] for row in _queue(cairn_home) if row[0] == "pending"] == [("pending", 0, "paused")]
        assert state["budget"]["limit"] == 2_000_000 and "tokens today" in state["budget"]["words"]
        assert (cairn_home / PAUSE_FILE).exists()
        text = cairn("status")
        assert text.returncode == 0 and "indexing paused: " in text.stdout, text.stdout
        assert "indexing budget" in text.stdout

        # Captured while paused: the new line is stored and found by search, though nothing is indexed.
        assert _pending_messages(cairn_home) > 0
        with transcript.open("a") as out:
            out.write(_entry(SESSION, 9_000, "user", f"Plan the {WORD} of the billing tables") + "\n")
        enqueue(cairn_home, transcript, SESSION)  # the hook's notification: due now, though deferred
        wait_for(
            lambda: (
                query(cairn_home, "SELECT count(*) FROM messages WHERE text LIKE ?", (f"%{WORD}%",)) == [(1,)]
            ),
            60,
            "the appended line to be captured during the pause",
        )
        found = cairn("search", WORD, "--json")
        assert found.returncode == 0 and WORD in found.stdout, (found.stdout, found.stderr)
        assert query(cairn_home, "SELECT count(*) FROM ideas") == [(0,)]
        assert status_json()["pause"] is not None

        fake.failing = None  # healed: the next probe succeeds and the daemon goes on by itself
        pausing_daemons.wait_idle(timeout=120)
        wait_for(lambda: _pending_messages(cairn_home) == 0, 60, "everything to be indexed")

    state = status_json()
    assert state["pause"] is None and not (cairn_home / PAUSE_FILE).exists()
    assert state["queue"]["parked"] == 0
    assert len(fake.answered) == len(set(fake.answered)), "no message was in two applied runs"
    stored = query(
        cairn_home,
        "SELECT f.path, m.line FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.is_noise = 0",
    )
    assert {(str(p), int(line)) for p, line in stored} <= set(fake.answered)  # type: ignore[call-overload]
    ideas = query(cairn_home, "SELECT source_file_id, source_line FROM ideas")
    assert ideas and len(ideas) == len(set(ideas))
    outcomes = dict(query(cairn_home, "SELECT outcome, count(*) FROM index_runs GROUP BY outcome"))
    assert outcomes.get("failed", 0) > MAX_ATTEMPTS and outcomes.get("ok", 0) >= 1
    log = (cairn_home / "logs" / "daemon.log").read_text()
    assert "indexing resumed" in log and "Traceback" not in log


def test_an_unreachable_model_pauses_and_leaves_the_store_untouched(
    pausing_daemons: Daemons, cairn_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a port nobody listens on: every request is refused
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed}")
    transcript = tmp_path / "claude-projects" / "-work-demo" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(DEMO, transcript)
    pausing_daemons.start()
    enqueue(cairn_home, transcript, SESSION)

    def failed_runs() -> int:
        return int(query(cairn_home, "SELECT count(*) FROM index_runs WHERE outcome = 'failed'")[0][0])  # type: ignore[call-overload]

    wait_for(lambda: failed_runs() > MAX_ATTEMPTS, 60, "more failed probes than attempts")
    state = status_json()
    assert state["pause"] is not None and "connect" in state["pause"]["reason"].lower()
    assert state["queue"]["parked"] == 0 and state["retrying"] == []
    assert query(cairn_home, "SELECT count(*) FROM ideas") == [(0,)]
    [(indexed,)] = query(cairn_home, "SELECT indexed_line FROM transcript_files")
    assert indexed == 0 and _pending_messages(cairn_home) > 0


OTHER = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000034"


def test_a_spent_budget_stops_a_backfill_with_one_line_and_the_daemon_waits_for_the_reset(
    pausing_daemons: Daemons, cairn_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget of 1 token: the backfill's first session is indexed (a run started under the budget may
    overrun it), the second is not, with the line on stderr and in --json, and its file queued for the
    daemon until midnight. A hook's notification for it makes the daemon capture it, hit the budget
    and defer it again, counting no attempt: a budget pause, shown by `cairn status`."""
    monkeypatch.setenv("CAIRN_DAILY_TOKEN_BUDGET", "1")
    root = tmp_path / "claude-projects"
    first = root / "-work-one" / f"{SESSION}.jsonl"
    second = root / "-work-two" / f"{OTHER}.jsonl"
    for path in (first, second):
        path.parent.mkdir(parents=True)
        shutil.copy(DEMO, path)
    # The second session is the newer one, so the backfill (oldest first) reaches it last.
    lines = second.read_text().replace("2026-11-20T", "2026-11-21T")
    second.write_text(lines)
    key = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    with HealingAnthropic(failing=None) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        # Real processes: this one's tests forbid model requests in process.
        result = run_cairn("backfill", str(root), "--json", env=key, check=False, real_process=True)
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        line = data["stopped"]
        assert line.startswith("daily indexing budget spent: 120 of 1 tokens today; indexing resumes after ")
        assert line.endswith("midnight (00:00 local) — raise daily_token_budget to go on now")
        assert data["paused_until"] and data["deferred_files"] == 1 and data["runs_ok"] == 1
        assert [(s["session"], s["batches"]) for s in data["sessions"]] == [(SESSION, 1), (OTHER, 0)]
        assert data["sessions_done"] == 1
        [(event, next_try, attempts)] = query(
            cairn_home, "SELECT event, next_try_at, attempts FROM work_queue WHERE path = ?", (str(second),)
        )
        assert (event, attempts) == ("paused", 0) and next_try is not None

        wide = {**key, "COLUMNS": "300"}
        human = run_cairn("index", str(second), env=wide, check=False, real_process=True)
        assert human.returncode == 0, human.stderr
        assert f"indexing paused: {line}" in human.stderr.replace("\n", " ")
        assert "stopped early: the daily token budget is spent" in human.stdout

        pausing_daemons.start()
        enqueue(cairn_home, second, OTHER)  # a hook fires for the session: capture, then wait
        wait_for(lambda: (status_json()["pause"] or {}).get("kind") == "budget", 60, "the budget pause")
        state = status_json()
        assert state["pause"]["line"] == f"indexing paused: {line}", "the time is said once"
        assert state["budget"]["exhausted"] is True and state["queue"]["parked"] == 0
        [(status, attempts, event, next_try)] = [row for row in _queue(cairn_home) if row[0] == "pending"]
        assert (status, attempts, event) == ("pending", 0, "paused")
        assert str(next_try)[:10] >= datetime.now(UTC).date().isoformat()
        assert len(fake.answered) == len(set(fake.answered)) and query(
            cairn_home, "SELECT count(*) FROM index_runs"
        ) == [(1,)], "one run, by the backfill; none after the budget was spent"
