"""Issue 14, item 5: a read-only `CAIRN_HOME` (a backup mounted read-only, a home whose permissions deny
writing). Reading commands answer from it — no lock, SQLite opened read-only, keyword search without
Chroma (which writes as it opens) — and change nothing on disk; writing commands say in one line
that it is read-only and that nothing was lost. Real `cairn` processes on a real read-only mount."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import hostile_disks
from tests.helpers.hostile_disks import error_lines, namespace_prefix, run_read_only

pytestmark = pytest.mark.process


@pytest.fixture
def home(demo_home: Path, tmp_path: Path) -> Path:
    return hostile_disks.copy_home(demo_home, tmp_path)


def _snapshot(home: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns) for p in home.rglob("*")}


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def test_reading_commands_answer_from_a_read_only_home_and_change_nothing(home: Path) -> None:
    before = _snapshot(home)

    stats = json.loads(_ok(run_read_only(home, "stats", "--json")))
    assert stats["messages"] > 0 and stats["ideas"] > 0
    assert stats["vectors"] is None and "read-only" in stats["vectors_error"]

    page = json.loads(_ok(run_read_only(home, "search", "sqlite", "--json")))
    assert page["results"], page
    assert any("read-only" in notice for notice in page["notices"]), page["notices"]
    assert "read-only" in page["vectors_unavailable"] and page["total"] >= len(page["results"])
    keyword = json.loads(_ok(run_read_only(home, "search", "sqlite", "--mode", "keyword", "--json")))
    assert keyword["results"] and keyword["vectors_unavailable"] is None

    content = json.loads(_ok(run_read_only(home, "content", "--term", "sqlite", "--json")))
    assert content["results"]

    shown = json.loads(_ok(run_read_only(home, "show", "m1", "--json")))
    assert shown["id"] == "m1"
    assert _ok(run_read_only(home, "timeline", "m3"))
    assert json.loads(_ok(run_read_only(home, "projects", "--json")))
    assert json.loads(_ok(run_read_only(home, "ideas", "--json")))
    assert "index runs" in _ok(run_read_only(home, "status"))

    assert _snapshot(home) == before  # no lock file touched, no -wal/-shm made, Chroma not opened


@pytest.mark.parametrize(
    "args",
    [("sync", "--demo"), ("reindex-vectors",), ("daemon", "start")],
    ids=["sync", "reindex-vectors", "daemon-start"],
)
def test_writing_commands_say_read_only_in_one_line(home: Path, args: tuple[str, ...]) -> None:
    proc = run_read_only(home, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in error_lines(proc.stderr) if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "read-only" in lines[0] or "not writable" in lines[0], lines[0]
    assert "nothing was lost" in lines[0]
    assert not (home / "logs").exists()


# A store left by a writer killed mid-session: its newest rows are in the -wal file only.
_KILLED_WRITER = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")
conn.execute("INSERT INTO projects (path, name) VALUES ('/only/in/the/wal', 'wal')")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_read_only_store_left_by_a_killed_writer_shows_what_its_wal_holds(home: Path) -> None:
    """`immutable` would skip the -wal file: with one present, the read-only open must use it."""
    db = home / "cairn.db"
    subprocess.run([sys.executable, "-c", textwrap.dedent(_KILLED_WRITER), str(db)], check=False)
    assert (home / "cairn.db-wal").stat().st_size > 0
    with sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True) as conn:
        assert not conn.execute("SELECT 1 FROM projects WHERE path = '/only/in/the/wal'").fetchall()
    projects = json.loads(_ok(run_read_only(home, "projects", "--json")))
    assert "/only/in/the/wal" in {p["path"] for p in projects}


def test_read_only_mounts_are_real_here() -> None:
    """The tests above only mean something if the home really was read-only: say how it was made."""
    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("no mount namespace: the read-only tests used chmod (non-root) or were skipped (root)")
    script = "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && touch /tmp/x"
    proc = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode != 0 and "Read-only file system" in proc.stderr
