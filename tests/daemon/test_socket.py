"""The daemon's Unix socket, against a real daemon process on a temp CAIRN_HOME.

While the daemon owns the store the read commands must answer through it with exactly what they
print without it; the socket is the owner's only door (0600, no TCP), survives bad clients, and goes
away with the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import shutil
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.daemon.client import DaemonRequestError, NoDaemon, daemon_request
from tests.daemon.helpers import Daemons, alive, cairn, query, wait_for
from tests.helpers.homes import IndexedViewer
from tests.helpers.paths import VIEWER_SESSIONS

READ_COMMANDS = [
    ["stats", "--json"],
    ["ideas", "--json"],
    ["ideas", "--intent", "decision", "--limit", "2", "--json"],
    ["questions", "--json"],
    ["todos", "--open", "--json"],
    ["topics", "--json"],
    ["entities", "--type", "technology", "--json"],
    ["show", "1", "--json"],
    ["timeline", "1", "--json"],
    ["projects", "--json"],
    ["content", "--term", "busy_timeout", "--json"],
]


@pytest.fixture
def synced(demo_home: Path, cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding the indexed demo session, built without a daemon (`cairn sync --demo`, offline,
    shared by the test run): this test's private copy of it is its CAIRN_HOME."""
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    return cairn_home


def _outputs() -> list[object]:
    results = []
    for args in READ_COMMANDS:
        proc = cairn(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        data = json.loads(proc.stdout)
        if isinstance(data, dict):
            data.pop("db_size_bytes", None)  # the WAL grows and shrinks with checkpoints
        results.append(data)
    return results


def _raw_exchange(path: Path, payload: bytes) -> bytes:
    """Send raw bytes and read until the daemon answers a line or closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        # The daemon may refuse an oversized request and hang up before reading all of it.
        with contextlib.suppress(BrokenPipeError):
            sock.sendall(payload)
        received = b""
        while not received.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


def _listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def test_read_commands_print_the_same_with_and_without_the_daemon(synced: Path, daemons: Daemons) -> None:
    direct = _outputs()
    assert direct[1], "the demo session should have produced ideas"
    daemons.start()
    # The daemon holds the store lock, so these can only have been answered over the socket.
    through_daemon = _outputs()
    daemons.stop()
    assert through_daemon == direct
    assert _outputs() == direct


def test_a_refusal_reads_the_same_with_and_without_the_daemon(synced: Path, daemons: Daemons) -> None:
    direct = cairn("show", "99999")
    daemons.start()
    through_daemon = cairn("show", "99999")
    assert direct.returncode == through_daemon.returncode == 2  # a refusal (`cairn.errors`)
    assert through_daemon.stderr == direct.stderr
    assert "no idea #99999" in direct.stderr and "daemon" not in direct.stderr


def test_socket_is_owner_only_unix_and_removed_on_stop(daemons: Daemons, settings: Settings) -> None:
    pid = daemons.start()
    mode = settings.socket_path.lstat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600
    if Path("/proc/net/tcp").exists():
        assert not _socket_inodes(pid) & _listening_tcp_inodes(), "the daemon listens on a TCP port"
    daemons.stop()
    assert not settings.socket_path.exists()


def test_a_stale_socket_file_is_replaced(daemons: Daemons, settings: Settings) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(settings.socket_path))  # left behind, as by a daemon killed with SIGKILL
    daemons.start()
    assert asyncio.run(daemon_request(settings, "stats"))["messages"] == 0


def test_unknown_ops_and_bad_arguments_get_clear_errors(daemons: Daemons, settings: Settings) -> None:
    daemons.start()
    with pytest.raises(DaemonRequestError, match="unknown op 'drop_everything'"):
        asyncio.run(daemon_request(settings, "drop_everything"))
    with pytest.raises(DaemonRequestError, match="bad arguments for 'ideas'"):
        asyncio.run(daemon_request(settings, "ideas", {"colour": "red"}))


def test_an_op_the_running_daemon_lacks_says_to_replace_the_daemon(
    daemons: Daemons, settings: Settings
) -> None:
    """What the viewer and the MCP server say when a daemon an older cairn started lacks a newer op."""
    from mcp.server.mcpserver.exceptions import ToolError

    from cairn.mcp.backend import Backend

    daemons.start()
    with pytest.raises(
        ToolError, match=r"unknown op 'overview_of_2030'.*older than this cairn.*cairn daemon stop"
    ):
        asyncio.run(Backend(settings).call("overview_of_2030", {}))
    with pytest.raises(ToolError, match="bad arguments for 'ideas'") as refused:
        asyncio.run(Backend(settings).call("ideas", {"colour": "red"}))
    assert "older" not in str(refused.value)


def test_garbage_from_a_client_does_not_hurt_the_daemon(daemons: Daemons, settings: Settings) -> None:
    pid = daemons.start()
    path = settings.socket_path
    for payload in (
        b"not json\n",
        b"\xff\xfe\x00\n",
        b"[1, 2]\n",
        b'{"op": 7}\n',
        b'{"op": "stats", "args": 3}\n',
    ):
        response = json.loads(_raw_exchange(path, payload))
        assert response["ok"] is False and response["error"].startswith("bad request"), payload
    assert json.loads(_raw_exchange(path, b"x" * (2 * 1024 * 1024) + b"\n"))["ok"] is False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # hang up mid-request
        sock.connect(str(path))
        sock.sendall(b'{"op": "sta')
    # One connection carries several requests.
    lines = _raw_exchange(path, b'{"op": "stats"}\n{"op": "nope"}\n')
    assert json.loads(lines.splitlines()[0])["ok"] is True
    assert alive(pid)
    assert asyncio.run(daemon_request(settings, "stats"))["schema_version"] > 0


def test_no_daemon_means_direct_work(cairn_home: Path, settings: Settings) -> None:
    with pytest.raises(NoDaemon):
        asyncio.run(daemon_request(settings, "stats"))
    proc = cairn("stats", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["messages"] == 0


def test_sync_hands_files_to_the_daemon(daemons: Daemons, cairn_home: Path) -> None:
    daemons.start()
    refused = cairn("sync", "--demo", "--no-index")
    assert refused.returncode == 1 and "cairn daemon stop" in refused.stderr
    proc = cairn("sync", "--demo", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["daemon"]["added"] == 1
    wait_for(
        lambda: (
            query(cairn_home, "SELECT count(*) FROM ideas") != [(0,)]
            and query(cairn_home, "SELECT count(*) FROM work_queue WHERE status != 'done'") == [(0,)]
        ),
        40,
        "the daemon to index the queued demo session",
    )


VIEWER = [str(p) for p in VIEWER_SESSIONS]


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """An index report without what differs from run to run: times and run ids."""
    data = {k: v for k, v in copy.deepcopy(report).items() if not k.endswith("seconds")}
    for failure in data["failures"]:
        failure.pop("run_id", None)
    data["applied"].pop("run_id", None)
    return data


def _index_json(*paths: str) -> dict[str, Any]:
    proc = cairn("index", *paths, "--model", "offline", "--json", timeout=240)
    assert proc.returncode == 0, proc.stderr
    return _comparable(json.loads(proc.stdout))


def test_index_runs_in_the_daemon_like_it_runs_directly(
    daemons: Daemons, cairn_home: Path, viewer_index: IndexedViewer
) -> None:
    daemons.start()
    through_daemon = _index_json(*VIEWER)
    assert through_daemon["messages_added"] > 0 and through_daemon["runs_ok"] > 0
    assert query(cairn_home, "SELECT count(*) FROM ideas")[0][0] > 0
    again = _index_json(*VIEWER)
    assert again["messages_added"] == 0 and again["batches"] == 0
    assert again["runs_ok"] == 0 and again["runs_failed"] == 0
    daemons.stop()

    # The same `cairn index` run directly, without a daemon, into a fresh home.
    direct = _comparable(viewer_index.report)
    assert direct == through_daemon


def test_reindex_vectors_and_backfill_dry_run_through_the_daemon(
    synced: Path, daemons: Daemons, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "projects" / "-home-dev-demo"
    projects.mkdir(parents=True)
    for path in VIEWER:
        shutil.copy(path, projects / Path(path).name)
    monkeypatch.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(projects.parent))
    pid = daemons.start()
    rebuilt = cairn("reindex-vectors")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "in use" not in rebuilt.stderr and int(rebuilt.stdout.split()[1]) > 0
    dry = cairn("backfill", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    data = json.loads(dry.stdout)
    assert data["dry_run"] is True and len(data["sessions"]) == len(VIEWER)
    assert data["messages_added"] > 0 and data["total"]["batches"] > 0
    assert alive(pid)
    assert query(synced, "SELECT count(*) FROM index_runs WHERE model != 'offline'") == [(0,)]


def test_reindex_runs_in_the_daemon_and_streams_its_progress(
    synced: Path, daemons: Daemons, settings: Settings
) -> None:
    old = query(synced, "SELECT id FROM ideas ORDER BY id")
    messages = query(synced, "SELECT id, content_hash FROM messages ORDER BY id")
    pid = daemons.start()
    dry = cairn("reindex", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    priced = json.loads(dry.stdout)
    assert (
        priced["dry_run"] is True
        and priced["total"]["batches"] > 0
        and "claude-haiku-4-5" in priced["total"]["cost_usd"]
    )
    events: list[dict[str, object]] = []
    result = asyncio.run(
        daemon_request(settings, "reindex", {"model": "offline"}, on_progress=events.append, timeout=None)
    )
    assert result["sessions_swapped"] == result["sessions_total"] == 1 and result["runs_failed"] == 0
    assert {e.get("phase") for e in events} >= {"index"} and any(e.get("step") == "session" for e in events)
    new = query(synced, "SELECT id FROM ideas ORDER BY id")
    assert len(new) == len(old) and not set(new) & set(old)
    assert query(synced, "SELECT id, content_hash FROM messages ORDER BY id") == messages
    assert alive(pid)


def test_long_ops_refuse_bad_arguments(daemons: Daemons, settings: Settings) -> None:
    daemons.start()
    with pytest.raises(DaemonRequestError, match="bad arguments for 'index'"):
        asyncio.run(daemon_request(settings, "index", {"colour": "red"}))
    events: list[dict[str, object]] = []
    result = asyncio.run(daemon_request(settings, "reindex_vectors", on_progress=events.append, timeout=None))
    assert result == {"vectors": 0}


@pytest.mark.parametrize("paths", ["abc", ["a", 7], {"a": 1}])
def test_enqueue_refuses_paths_that_are_not_a_list_of_strings(
    daemons: Daemons, settings: Settings, cairn_home: Path, paths: object
) -> None:
    """A string is iterable: once, `paths: "abc"` queued one item per character."""
    daemons.start()
    refused = "bad arguments for 'enqueue': paths must be a list of strings"
    with pytest.raises(DaemonRequestError, match=refused):
        asyncio.run(daemon_request(settings, "enqueue", {"paths": paths}))
    assert query(cairn_home, "SELECT count(*) FROM work_queue") == [(0,)]
    assert asyncio.run(daemon_request(settings, "enqueue", {"paths": []})) == {"queued": 0, "added": 0}
