"""The daemon as a real process on a temp CAIRN_HOME: lifecycle, continuous indexing, crash safety.

Every test starts daemons through `cairn daemon start` (or `run`), enqueues the way the hook does (a
row in `work_queue`), reads the store from outside as any reader may, and kills whatever it started
in a finaliser. Waits are bounded; the offline model keeps runs fast and deterministic.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemons, alive, cairn, enqueue, kill_hard, pidfile_pid, query, wait_for
from tests.helpers.paths import DEMO, REAL_TRANSCRIPTS

SIDECHAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_agent_sidechain.jsonl"
SESSION = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001"
IDEAS = "SELECT source_line, intent, content FROM ideas"
MESSAGES = "SELECT m.line, m.role, m.kind, m.text FROM messages m"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    project = tmp_path / "claude-projects" / "-work-demo"
    project.mkdir(parents=True)
    return project


def _status(home: Path) -> dict[str, object]:
    proc = cairn("daemon", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_daemon_start_status_stop_round_trip(daemons: Daemons, cairn_home: Path) -> None:
    pid = daemons.start()
    state = _status(cairn_home)
    assert state["running"] is True and state["pid"] == pid and state["depth"] == 0
    assert isinstance(state["uptime_seconds"], float) and state["uptime_seconds"] >= 0

    again = cairn("daemon", "start")
    assert again.returncode == 1 and f"already running (pid {pid})" in again.stderr
    routed = cairn("reindex-vectors")  # the daemon owns the store: it runs this for the CLI
    assert routed.returncode == 0 and "Rebuilt 0 vectors" in routed.stdout, routed.stderr

    stopped = cairn("daemon", "stop")
    assert stopped.returncode == 0 and f"stopped (pid {pid})" in stopped.stdout
    assert not alive(pid) and not (cairn_home / "daemon.pid").exists()
    assert _status(cairn_home)["running"] is False
    assert "not running" in cairn("daemon", "stop").stdout
    log = (cairn_home / "logs" / "daemon.log").read_text()
    assert "daemon started" in log and "SIGTERM" in log and "daemon stopped" in log


def test_daemon_stale_pidfile_is_replaced(daemons: Daemons, cairn_home: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    cairn_home.mkdir(parents=True, exist_ok=True)
    (cairn_home / "daemon.pid").write_text(f"{dead.pid}\n0\n")
    assert _status(cairn_home)["running"] is False

    pid = daemons.start()
    assert pid != dead.pid and pidfile_pid(cairn_home) == pid


def test_daemon_idle_exit_and_sigterm(
    daemons: Daemons, cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "0.5")
    pid = daemons.start()
    daemons.wait_exit(pid, 15)
    assert not (cairn_home / "daemon.pid").exists()
    assert "queue empty" in (cairn_home / "logs" / "daemon.log").read_text()

    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "60")
    pid = daemons.start()
    os.kill(pid, signal.SIGTERM)
    daemons.wait_exit(pid, 15)
    assert not (cairn_home / "daemon.pid").exists()
    assert daemons.start() > 0, "the store lock was released"


def test_daemon_indexes_a_transcript_appended_line_by_line(
    daemons: Daemons, cairn_home: Path, projects: Path, tmp_path: Path
) -> None:
    daemons.start()
    transcript = projects / f"{SESSION}.jsonl"
    subagent = projects / SESSION / "subagents" / "agent-af1ff21.jsonl"
    subagent.parent.mkdir(parents=True)
    # Claude Code writes the parent's session id into its subagents' entries.
    subagent.write_text(SIDECHAIN.read_text().replace("c45af7b1-cb7c-4e51-93db-8cbb250a877a", SESSION))
    lines = DEMO.read_bytes().splitlines(keepends=True)
    with transcript.open("ab") as out:
        for i, line in enumerate(lines):
            # Half a line first, as a writer caught mid-write: only whole lines may be stored.
            out.write(line[: len(line) // 2])
            out.flush()
            if i % 4 == 0:
                enqueue(cairn_home, transcript, SESSION, "UserPromptSubmit")
            out.write(line[len(line) // 2 :])
            out.flush()
            enqueue(cairn_home, transcript, SESSION)
    daemons.wait_idle()

    files = query(cairn_home, "SELECT path, session_id, byte_offset, indexed_line FROM transcript_files")
    by_path = {Path(str(p)).name: (s, off, line) for p, s, off, line in files}
    assert by_path[transcript.name][1] == transcript.stat().st_size
    assert by_path[subagent.name][0] == SESSION, "a subagent is indexed as part of its parent session"
    pending = query(
        cairn_home,
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.end_line > f.indexed_line AND m.is_noise = 0",
    )
    assert pending == [(0,)], "every captured message was indexed"

    ideas = query(cairn_home, IDEAS)
    assert ideas and len(ideas) == len(set(ideas)), "ideas exist, none twice"
    reference = tmp_path / "reference"
    ref = subprocess.run(
        [sys.executable, "-m", "cairn", "index", str(transcript), "--json"],
        env={**os.environ, "CAIRN_HOME": str(reference)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ref.returncode == 0, ref.stderr
    own = f"{MESSAGES} JOIN transcript_files f ON f.id = m.file_id WHERE f.path LIKE '%{SESSION}.jsonl'"
    assert sorted(query(cairn_home, own)) == sorted(query(reference, own)), "captured exactly once"


def test_daemon_survives_a_transcript_truncated_and_replaced_under_it(
    daemons: Daemons, cairn_home: Path, projects: Path, tmp_path: Path
) -> None:
    pid = daemons.start()
    transcript = projects / f"{SESSION}.jsonl"
    lines = DEMO.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines))
    enqueue(cairn_home, transcript, SESSION)
    daemons.wait_idle()

    with transcript.open("r+b") as fh:  # truncated mid-session, then written anew
        fh.truncate(len(lines[0]) + len(lines[1]))
    enqueue(cairn_home, transcript, SESSION)
    daemons.wait_idle()
    replacement = tmp_path / "replacement.jsonl"
    replacement.write_bytes(
        REAL_TRANSCRIPTS.joinpath("fasthooks", "sample_main_transcript.jsonl").read_bytes()
    )
    replacement.replace(transcript)  # a new inode at the same path
    enqueue(cairn_home, transcript, SESSION)
    daemons.wait_idle()

    assert alive(pid), "the daemon survived both rewrites"
    [(offset, generation)] = query(
        cairn_home, "SELECT byte_offset, generation_start_id FROM transcript_files"
    )
    assert offset == transcript.stat().st_size and generation > 0
    pending = query(
        cairn_home,
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.id > f.generation_start_id AND m.end_line > f.indexed_line AND m.is_noise = 0",
    )
    assert pending == [(0,)], "the new content was indexed"
    assert "Traceback" not in (cairn_home / "logs" / "daemon.log").read_text()


def test_daemon_skips_missing_and_foreign_files(daemons: Daemons, cairn_home: Path, projects: Path) -> None:
    pid = daemons.start()
    foreign = projects / "hook-log.jsonl"
    foreign.write_text('{"hook_event_name": "Stop"}\n')
    for i in range(30):
        enqueue(cairn_home, projects / f"gone-{i}.jsonl", f"gone-{i}")
    enqueue(cairn_home, foreign, "foreign")
    daemons.wait_idle()
    assert query(cairn_home, "SELECT status, count(*) FROM work_queue GROUP BY status") == [("done", 31)]
    assert query(cairn_home, "SELECT count(*) FROM transcript_files") == [(0,)]
    assert alive(pid)

    transcript = projects / f"{SESSION}.jsonl"
    shutil.copy(DEMO, transcript)
    enqueue(cairn_home, transcript, SESSION)
    daemons.wait_idle()
    assert query(cairn_home, "SELECT count(*) FROM ideas")[0][0] > 0 and alive(pid)


def _run_to_completion(daemons: Daemons, transcript: Path, kills: list[int]) -> None:
    """Index `transcript` through daemons; `kill -9` the daemon as the run count reaches each of `kills`."""
    pid = daemons.start()
    enqueue(daemons.home, transcript, transcript.stem)
    for runs in kills:
        wait_for(
            lambda n=runs: query(daemons.home, "SELECT count(*) FROM index_runs")[0][0] >= n,
            40,
            f"{runs} indexing runs",
        )
        kill_hard(pid)
        assert (daemons.home / "daemon.pid").exists(), "a killed daemon leaves its pidfile"
        pid = daemons.start()
    daemons.wait_idle(60)


def test_daemon_kill_9_mid_pass_then_restart_matches_an_uninterrupted_run(
    daemons: Daemons, cairn_home: Path, projects: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small continuous budget cuts the file into many runs, so the kills land mid-pass.
    monkeypatch.setenv("CAIRN_CONTINUOUS_TOKEN_BUDGET", "1000")
    monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.05")
    transcript = projects / f"{SESSION}.jsonl"
    shutil.copy(DEMO, transcript)
    _run_to_completion(daemons, transcript, kills=[1, 2])
    killed_runs = query(cairn_home, "SELECT count(*) FROM index_runs WHERE outcome = 'ok'")[0][0]
    assert killed_runs >= 3, "the pass spans several runs, so the kills landed mid-pass"

    reference = tmp_path / "reference-home"
    monkeypatch.setenv("CAIRN_HOME", str(reference))
    uninterrupted = Daemons(reference)
    try:
        _run_to_completion(uninterrupted, transcript, kills=[])
    finally:
        uninterrupted.cleanup()

    assert sorted(query(cairn_home, IDEAS)) == sorted(query(reference, IDEAS))
    assert sorted(query(cairn_home, MESSAGES)) == sorted(query(reference, MESSAGES))
    assert query(cairn_home, "SELECT count(*) FROM ideas") == query(reference, "SELECT count(*) FROM ideas")


def test_a_second_daemon_run_says_why_it_stopped(daemons: Daemons) -> None:
    """Issue 30: a second `cairn daemon run` exited 1 printing nothing; the reason was only in daemon.log."""
    pid = daemons.start()
    second = cairn("daemon", "run", timeout=120)
    assert second.returncode == 1
    [line] = second.stderr.strip().splitlines()
    assert line.startswith("error: ") and f"in use by process {pid}" in line and "Traceback" not in line
    assert "cairn daemon stop" in line
    assert alive(pid), "the running daemon is untouched"


def test_a_daemon_that_cannot_start_says_why_where_it_was_started(cairn_home: Path) -> None:
    """Issue 44: with `model = "gpt5"` in config.toml, `cairn daemon start` said only "exited at start
    (code 1); see …/daemon.log"; the reason it logged is the line the user reads."""
    cairn_home.mkdir(parents=True, exist_ok=True)
    (cairn_home / "config.toml").write_text('model = "gpt5"\n')

    started = cairn("daemon", "start", timeout=120)

    assert started.returncode == 1
    [line] = started.stderr.strip().splitlines()
    assert line.startswith("error: the cairn daemon exited at start (code 1): ")
    assert "unknown model 'gpt5'" in line and "daemon.log" in line
    assert pidfile_pid(cairn_home) is None


def test_a_config_broken_after_the_daemon_started_is_said_by_a_search_it_answers(
    daemons: Daemons, cairn_home: Path
) -> None:
    """Issue 44: with `recall_prompt_lines = "three"` written while the daemon ran, `cairn search` (which asks
    the daemon before loading any settings) answered with exit 0 and no word of it."""
    daemons.start()
    assert cairn("search", "anything").returncode == 0
    (cairn_home / "config.toml").write_text('recall_prompt_lines = "three"\n')

    searched = cairn("search", "anything")

    assert searched.returncode == 2
    [line] = searched.stderr.strip().splitlines()
    assert line.startswith("error: invalid cairn setting: recall_prompt_lines")
