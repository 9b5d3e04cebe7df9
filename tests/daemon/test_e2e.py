"""Issue 4's "Done when": real hook payloads, replayed through the installed hook, get indexed by the daemon.

Nothing is driven from inside: `cairn install` writes the hook into a temp settings file, the test
reads each event's command back from that JSON and runs it the way Claude Code does (`/bin/sh -c
<command>` with the payload on stdin), and the hook itself starts the daemon. The payloads are those
of `fasthooks/sample_hook_logs.jsonl`, with their transcript paths rewritten to copies of the
fixture transcripts laid out as Claude Code lays them out under `~/.claude/projects`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.daemon.install import HOOK_EVENTS, is_cairn_command
from tests.daemon.helpers import _own_processes, alive, cairn, kill_hard, pidfile_pid, query, wait_for
from tests.helpers.paths import REAL_TRANSCRIPTS

FASTHOOKS = REAL_TRANSCRIPTS / "fasthooks"
HOOK_LOG = FASTHOOKS / "sample_hook_logs.jsonl"
MAIN = FASTHOOKS / "sample_main_transcript.jsonl"
SIDECHAIN = FASTHOOKS / "sample_agent_sidechain.jsonl"
SIDECHAIN_AGENT = "af1ff21"  # the agent whose transcript the fixtures hold


@pytest.fixture
def env(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The environment Claude Code would run the hook in; every daemon it spawns is killed at the end."""
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.2")
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "60")
    monkeypatch.delenv("CAIRN_HOOK_NO_SPAWN", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    try:
        yield dict(os.environ)
    finally:
        for pid in {*_own_processes(cairn_home), *filter(None, [pidfile_pid(cairn_home)])}:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                kill_hard(pid)


def _installed_commands(settings_file: Path) -> dict[str, str]:
    """Each hook event's cairn command, read back from the settings JSON as Claude Code would."""
    hooks = json.loads(settings_file.read_text())["hooks"]
    commands = {}
    for event, groups in hooks.items():
        for group in groups:
            for handler in group["hooks"]:
                if is_cairn_command(handler.get("command")):
                    commands[event] = handler["command"]
    return commands


def _payloads(transcript: Path) -> Iterator[dict[str, Any]]:
    """The logged hook events as Claude Code sends them, their paths pointing at `transcript`.

    The log names the event `event` and omits `transcript_path` on most lines; Claude Code's
    payloads carry both (`hook_event_name`, and the session's transcript on every event), and a
    `SubagentStop` names the subagent's own transcript too.
    """
    for line in HOOK_LOG.read_text().splitlines():
        logged = json.loads(line)
        event = logged.pop("event")
        logged.pop("ts", None)
        payload = {**logged, "hook_event_name": event, "transcript_path": str(transcript)}
        if event == "SubagentStop":
            agent = transcript.parent / transcript.stem / "subagents" / f"agent-{logged['agent_id']}.jsonl"
            payload["agent_transcript_path"] = str(agent)
        yield payload


def test_replayed_hook_payloads_are_indexed_through_the_daemon(
    env: dict[str, str], cairn_home: Path, tmp_path: Path
) -> None:
    settings_file = tmp_path / "claude" / "settings.json"
    claude_config = tmp_path / "claude" / "claude.json"
    installed = cairn("install", "--settings", str(settings_file), "--claude-config", str(claude_config))
    assert installed.returncode == 0, installed.stderr
    commands = _installed_commands(settings_file)
    assert set(commands) == set(HOOK_EVENTS)
    mcp = json.loads(claude_config.read_text())["mcpServers"]["cairn"]
    assert mcp["command"] == str(cairn_home.resolve() / "bin" / "cairn-mcp") and mcp["args"] == []

    # Claude Code names a transcript after its session, the one every logged payload carries.
    session = json.loads(HOOK_LOG.read_text().splitlines()[0])["session_id"]
    project = tmp_path / "claude-projects" / "-workspace"
    transcript = project / f"{session}.jsonl"
    agent = project / session / "subagents" / f"agent-{SIDECHAIN_AGENT}.jsonl"
    agent.parent.mkdir(parents=True)
    shutil.copy(MAIN, transcript)
    shutil.copy(SIDECHAIN, agent)
    assert pidfile_pid(cairn_home) is None, "no daemon before the first hook"

    replayed = 0
    for payload in _payloads(transcript):
        command = commands.get(payload["hook_event_name"])
        if command is None:
            continue  # Claude Code runs no cairn hook for this event
        hook = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            timeout=10,
        )
        assert (hook.returncode, hook.stdout) == (0, ""), hook.stderr
        replayed += 1
    assert replayed >= 10, "the log holds prompts, stops, subagent stops and a compaction"

    wait_for(lambda: pidfile_pid(cairn_home) is not None, 20, "the hook to start the daemon")
    pid = pidfile_pid(cairn_home)
    assert pid is not None and alive(pid)

    def drained() -> bool:
        rows = dict(query(cairn_home, "SELECT status, count(*) FROM work_queue GROUP BY status"))
        return rows.get("done", 0) > 0 and not rows.get("pending") and not rows.get("running")

    wait_for(drained, 60, "the daemon to drain the queue")

    files = {
        Path(str(path)).name: (sid, offset, line)
        for path, sid, offset, line in query(
            cairn_home, "SELECT path, session_id, byte_offset, indexed_line FROM transcript_files"
        )
    }
    assert files[transcript.name][1] == transcript.stat().st_size, "the whole transcript was captured"
    assert files[agent.name][0] == session, "the subagent's transcript is filed under its parent session"
    agent_sessions = query(
        cairn_home,
        "SELECT DISTINCT m.session_id FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE f.path = ?",
        (str(agent.resolve()),),
    )
    assert agent_sessions == [(session,)]
    unindexed = query(
        cairn_home,
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.end_line > f.indexed_line AND m.is_noise = 0",
    )
    assert unindexed == [(0,)], "every captured message went through an indexing run"
    ideas = query(cairn_home, "SELECT count(*) FROM ideas WHERE session_id = ?", (session,))[0][0]
    assert ideas > 0

    state = json.loads(cairn("status", "--json").stdout)
    assert state["daemon"]["running"] is True and state["daemon"]["pid"] == pid
    assert state["depth"] == 0 and state["queue"]["parked"] == 0 and state["parked"] == []
    assert state["ideas"] >= ideas and state["today"]["runs"] >= 1
    assert all(run["outcome"] == "ok" for run in state["recent_runs"])

    stopped = cairn("daemon", "stop")
    assert stopped.returncode == 0 and f"stopped (pid {pid})" in stopped.stdout
    assert not alive(pid) and pidfile_pid(cairn_home) is None
