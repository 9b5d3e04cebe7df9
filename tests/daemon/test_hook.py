"""The Claude Code hook as Claude Code runs it: real processes, a real store, both implementations.

Every test runs against `hook.sh` (what `cairn install` normally wires up) and `hook.py` (the
fallback without a sqlite3 CLI), through the exact command `cairn install` would write.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from tests.daemon.helpers import _command, _make_store
from tests.helpers.paths import REAL_TRANSCRIPTS

FASTHOOKS = REAL_TRANSCRIPTS / "fasthooks"
MAIN = FASTHOOKS / "sample_main_transcript.jsonl"
AGENT = FASTHOOKS / "sample_agent_sidechain.jsonl"
HOOK_SH = Path(__file__).resolve().parents[2] / "cairn" / "daemon" / "hook.sh"
HOOK_PY = HOOK_SH.with_name("hook.py")
EVENTS = ("UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd")

pytestmark = pytest.mark.parametrize("kind", ["sh", "python"])


@pytest.fixture
def store(settings: Settings) -> Settings:
    _make_store(settings)
    return settings


def run_hook(
    settings: Settings, kind: str, payload: bytes | str | dict[str, Any], **env: str
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed hook command through a shell, as Claude Code does; it must print nothing."""
    data = json.dumps(payload).encode() if isinstance(payload, dict) else payload
    data = data.encode() if isinstance(data, str) else data
    environ = {**os.environ, "CAIRN_HOOK_NO_SPAWN": "1", **env}
    proc = subprocess.run(
        ["/bin/sh", "-c", _command(settings, kind)], input=data, capture_output=True, env=environ, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"", "hook output would reach Claude's context on UserPromptSubmit"
    return proc


def rows(settings: Settings) -> list[tuple[Any, ...]]:
    with sqlite3.connect(settings.db_path) as conn:
        return conn.execute("SELECT path, session_id, event, status FROM work_queue ORDER BY id").fetchall()


def log_lines(settings: Settings) -> list[str]:
    path = settings.logs_dir / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


def sample_payloads() -> list[dict[str, Any]]:
    """The recorded hook logs turned back into stdin payloads, paths pointing at fixture files."""
    payloads = []
    for line in (FASTHOOKS / "sample_hook_logs.jsonl").read_text().splitlines():
        logged = json.loads(line)
        payload = {k: v for k, v in logged.items() if k not in {"ts", "event"}}
        payload["hook_event_name"] = logged["event"]
        payload["transcript_path"] = str(MAIN)
        if logged["event"] == "SubagentStop":
            payload["agent_transcript_path"] = str(AGENT)
        payloads.append(payload)
    return payloads


def test_sample_payloads_queue_one_pending_row_per_transcript(store: Settings, kind: str) -> None:
    payloads = sample_payloads()
    for payload in payloads:
        run_hook(store, kind, payload)
    first = next(p for p in payloads if p["hook_event_name"] in EVENTS)
    session = first["session_id"]
    assert rows(store) == [
        (str(MAIN), session, first["hook_event_name"], "pending"),
        (str(AGENT), session, "SubagentStop", "pending"),
    ]
    assert log_lines(store) == []


def test_each_indexing_event_queues_and_others_do_not(store: Settings, kind: str) -> None:
    seen = {p["hook_event_name"]: p for p in sample_payloads()}
    assert set(EVENTS) - {"SessionEnd"} <= set(seen)
    seen.setdefault("SessionEnd", {**seen["Stop"], "hook_event_name": "SessionEnd", "reason": "other"})
    for event, payload in seen.items():
        with sqlite3.connect(store.db_path) as conn:
            conn.execute("DELETE FROM work_queue")
        run_hook(store, kind, {**payload, "agent_transcript_path": None})
        expected = [(str(MAIN), payload["session_id"], event, "pending")] if event in EVENTS else []
        assert rows(store) == expected, event


def test_a_done_or_running_row_does_not_absorb_a_new_notification(store: Settings, kind: str) -> None:
    payload = {"session_id": "s", "transcript_path": str(MAIN), "hook_event_name": "Stop"}
    run_hook(store, kind, payload)
    with sqlite3.connect(store.db_path) as conn:
        conn.execute("UPDATE work_queue SET status = 'running'")
    run_hook(store, kind, payload)
    run_hook(store, kind, payload)
    assert [r[3] for r in rows(store)] == ["running", "pending"]


def test_concurrent_hooks_leave_one_pending_row(store: Settings, kind: str) -> None:
    payload = json.dumps({"session_id": "s", "transcript_path": str(MAIN), "hook_event_name": "Stop"})
    environ = {**os.environ, "CAIRN_HOOK_NO_SPAWN": "1"}
    command = _command(store, kind)
    procs = [
        subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
        )
        for _ in range(8)
    ]
    for proc in procs:  # all started before any gets its payload: they race for the write lock
        assert proc.stdin is not None
        proc.stdin.write(payload.encode())
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=30) == 0
    assert rows(store) == [(str(MAIN), "s", "Stop", "pending")]
    assert log_lines(store) == []


def test_hostile_path_is_stored_verbatim_and_never_executed(
    store: Settings, kind: str, tmp_path: Path
) -> None:
    marks = [tmp_path / f"pwned{i}" for i in range(4)]
    path = (
        f'/tmp/it\'s a "dir"/$(touch {marks[0]})/`touch {marks[1]}`; touch {marks[2]} '
        f"&& touch {marks[3]} \\ %?#\n'';--/x.jsonl"
    )
    run_hook(
        store,
        kind,
        {"session_id": "s'; DROP TABLE work_queue;--", "transcript_path": path, "hook_event_name": "Stop"},
    )
    assert rows(store) == [(path, "s'; DROP TABLE work_queue;--", "Stop", "pending")]
    assert not any(m.exists() for m in marks)


@pytest.mark.parametrize("payload", [b"{not json", b"", b"[1, 2]", b'"Stop"', b'{"a": 1}\x1e{"b": 2}'])
def test_bad_payload_exits_0_and_logs_one_line(store: Settings, kind: str, payload: bytes) -> None:
    run_hook(store, kind, payload)
    assert rows(store) == []
    lines = log_lines(store)
    assert len(lines) == 1 and "invalid hook payload" in lines[0]


def test_non_jsonl_and_malformed_fields_are_ignored_quietly(store: Settings, kind: str) -> None:
    for payload in [
        {"session_id": "s", "transcript_path": "/tmp/notes.txt", "hook_event_name": "Stop"},
        {"session_id": "s", "transcript_path": 42, "hook_event_name": "Stop"},
        {"session_id": "s", "hook_event_name": "Stop"},
    ]:
        run_hook(store, kind, payload)
    assert rows(store) == []
    assert log_lines(store) == []


def test_missing_store_is_logged_not_created(settings: Settings, kind: str) -> None:
    payload = {"session_id": "s", "transcript_path": str(MAIN), "hook_event_name": "Stop"}
    run_hook(settings, kind, payload)
    assert not settings.db_path.exists()
    lines = log_lines(settings)
    assert len(lines) == 1 and "no cairn store" in lines[0]


def test_locked_database_fails_open_quickly(store: Settings, kind: str) -> None:
    holder = sqlite3.connect(store.db_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        run_hook(store, kind, {"session_id": "s", "transcript_path": str(MAIN), "hook_event_name": "Stop"})
        elapsed = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert elapsed < 2.0
    assert rows(store) == []
    lines = log_lines(store)
    assert len(lines) == 1 and "locked" in lines[0]


# Spawning: the hook starts `$CAIRN_PYTHON -m cairn daemon start` when no daemon is alive.


@pytest.fixture
def fake_python(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in interpreter that records its arguments, CAIRN_HOME and its session id."""
    record = tmp_path / "spawned"
    fake = tmp_path / "fake python"
    fake.write_text(
        "#!/bin/sh\n"
        f"out='{record}'\n"
        'printf \'%s\\n\' "$*" "$CAIRN_HOME" "$(cut -d" " -f6 /proc/$$/stat)" > "$out.tmp"\n'
        'mv "$out.tmp" "$out"\n'
    )
    fake.chmod(0o755)
    return fake, record


def _run_direct(settings: Settings, kind: str, fake: Path, **env: str) -> None:
    """Run the hook with the fake as CAIRN_PYTHON (the interpreter of hook.py itself stays real)."""
    argv = ["/bin/sh", str(HOOK_SH)] if kind == "sh" else [sys.executable, "-S", "-E", str(HOOK_PY)]
    environ = {**os.environ, "CAIRN_PYTHON": str(fake), **env}
    environ.pop("CAIRN_HOOK_NO_SPAWN", None)
    environ.update(env)
    payload = json.dumps({"session_id": "s", "transcript_path": str(MAIN), "hook_event_name": "Stop"})
    proc = subprocess.run(argv, input=payload.encode(), capture_output=True, env=environ, timeout=30)
    assert proc.returncode == 0 and proc.stdout == b""


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.02)
    return path.exists()


def test_spawns_a_detached_daemon_when_none_is_alive(
    store: Settings, kind: str, fake_python: tuple[Path, Path]
) -> None:
    fake, record = fake_python
    dead = subprocess.Popen(["true"])
    dead.wait()
    store.pid_path.write_text(f"{dead.pid}\n123.0\n")
    _run_direct(store, kind, fake)
    assert _wait_for(record, 5.0), "the daemon was not started"
    args, home, sid = record.read_text().splitlines()
    assert args == "-m cairn daemon start"
    assert home == str(store.home)
    assert int(sid) != os.getsid(0), "the daemon must run in a session of its own"


def test_no_spawn_while_the_daemon_lives_or_when_disabled(
    store: Settings, kind: str, fake_python: tuple[Path, Path]
) -> None:
    fake, record = fake_python
    store.pid_path.write_text(f"{os.getpid()}\n123.0\n")
    _run_direct(store, kind, fake)
    store.pid_path.unlink()
    _run_direct(store, kind, fake, CAIRN_HOOK_NO_SPAWN="1")
    assert not _wait_for(record, 0.5)
    assert rows(store) == [(str(MAIN), "s", "Stop", "pending")]


@pytest.fixture
def slow_python(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A stand-in interpreter that takes a while to start, as a cold Python with chromadb does; each
    start appends a line to `starts`, and `release` lets it finish (it gives up after 30 s, so a
    failing test leaves no process behind)."""
    starts, release = tmp_path / "starts", tmp_path / "release"
    fake = tmp_path / "slow python"
    fake.write_text(
        f"#!/bin/sh\necho started >> '{starts}'\n"
        f"i=0; while [ ! -e '{release}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done\n"
    )
    fake.chmod(0o755)
    return fake, starts, release


def test_a_burst_of_hooks_starts_one_daemon_and_a_stale_marker_is_taken_over(
    store: Settings, kind: str, slow_python: tuple[Path, Path, Path]
) -> None:
    """Claude Code fires several hooks at once; a herd of starters would starve the daemon they start."""
    fake, starts, release = slow_python
    marker = store.home / "daemon.starting"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: _run_direct(store, kind, fake), range(8)))
    assert _wait_for(starts, 10.0), "the daemon was not started"
    assert marker.is_dir()
    _run_direct(store, kind, fake)
    release.touch()
    deadline = time.monotonic() + 10
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not marker.exists(), "the marker goes when the start returns"
    assert starts.read_text().splitlines() == ["started"]

    release.unlink()
    starts.unlink()
    marker.mkdir()
    stale = time.time() - 600
    os.utime(marker, (stale, stale))
    _run_direct(store, kind, fake)
    assert _wait_for(starts, 10.0), "a marker left by a killed starter must not block starts forever"
    release.touch()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0].decode()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are told by /proc")
def test_a_zombie_daemon_is_dead_and_a_new_one_is_started(
    store: Settings, kind: str, fake_python: tuple[Path, Path]
) -> None:
    """Issue 30: `kill -0` succeeds on a daemon killed with SIGKILL until its parent reaps it, and where
    PID 1 never reaps, no hook ever started another. Here the test process is the parent that does not
    reap (yet)."""
    fake, record = fake_python
    zombie = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 30
        while _state(zombie.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _state(zombie.pid) == "Z"
        store.pid_path.write_text(f"{zombie.pid}\n123.0\n")
        _run_direct(store, kind, fake)
        assert _wait_for(record, 5.0), "a zombie was taken for a live daemon"
    finally:
        zombie.wait()


def test_a_huge_binary_payload_logs_one_short_line(store: Settings, kind: str) -> None:
    """Issue 30: a 5 MB binary payload wrote a 641 KB line to hook.log: no line may grow with its input."""
    payload = bytes(range(256)) * (5 * 1024 * 1024 // 256)
    run_hook(store, kind, payload)
    log = (store.logs_dir / "hook.log").read_bytes() if (store.logs_dir / "hook.log").exists() else b""
    assert all(len(line) < 1200 for line in log.splitlines()), max(map(len, log.splitlines()), default=0)
    assert rows(store) == []


def test_a_notification_makes_an_item_deferred_by_a_pause_due(store: Settings, kind: str) -> None:
    """While indexing is paused the daemon defers items to the pause's end; a hook's notification must
    make its path due again so the new lines get captured (and leave other deferrals alone)."""
    payload = {"session_id": "s", "transcript_path": str(MAIN), "hook_event_name": "Stop"}
    with sqlite3.connect(store.db_path) as conn:
        conn.execute(
            "INSERT INTO work_queue (path, event, next_try_at, attempts) VALUES "
            "(?, 'paused', '2999-01-01T00:00:00.000Z', 0), (?, 'Stop', '2999-01-01T00:00:00.000Z', 2)",
            (str(MAIN), str(AGENT)),
        )
    run_hook(store, kind, payload)
    run_hook(store, kind, {**payload, "transcript_path": str(AGENT)})
    with sqlite3.connect(store.db_path) as conn:
        due = conn.execute("SELECT path, status, next_try_at FROM work_queue ORDER BY id").fetchall()
    assert due == [(str(MAIN), "pending", None), (str(AGENT), "pending", "2999-01-01T00:00:00.000Z")]
