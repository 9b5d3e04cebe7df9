"""Searching while another process writes the store (a `cairn backfill` run without the daemon): reading
commands answer at once by keyword from SQLite, which WAL lets a reader see while the owner writes, and say
why vectors are left out; writing commands still refuse with who holds the store. Real `cairn` processes
against a store whose lock a real second process holds while it writes."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import hostile_disks
from tests.helpers.hostile_disks import run_cairn
from tests.helpers.paths import REAL_TRANSCRIPTS

pytestmark = pytest.mark.process

# Holds the store lock as a backfill does, writes one message a little later, and waits to be killed.
_OWNER = textwrap.dedent(
    """
    import sqlite3, sys
    from pathlib import Path
    from cairn.store.lock import StoreLock

    home = Path(sys.argv[1])
    lock = StoreLock(home / "store.lock")
    lock.acquire()
    db = sqlite3.connect(home / "cairn.db", isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
        "text, content_hash, timestamp) SELECT session_id, file_id, 9999, 9999, 0, 1, 'user', 'text', "
        "'the zanzibar migration plan is written down', 'busy-test', timestamp FROM messages LIMIT 1"
    )
    db.execute("COMMIT")
    print("holding", flush=True)
    sys.stdin.read()
    """
)


@pytest.fixture
def busy_home(demo_home: Path, tmp_path: Path) -> Iterator[Path]:
    home = hostile_disks.copy_home(demo_home, tmp_path)
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == "holding"  # blocks until the lock is held and written
        yield home
    finally:
        owner.kill()
        owner.wait(timeout=60)


def test_search_answers_by_keyword_while_another_process_writes(busy_home: Path) -> None:
    proc = run_cairn(busy_home, "search", "zanzibar migration", "--json")
    assert proc.returncode == 0, proc.stderr
    page = json.loads(proc.stdout)
    assert any("zanzibar" in r["content"] for r in page["results"])  # committed by the writer a moment ago
    notices = page["notices"]
    assert any("is writing the store" in n and "keyword only" in n and "python" in n for n in notices), page
    assert "is writing the store" in page["vectors_unavailable"]
    stats = json.loads(run_cairn(busy_home, "stats", "--json").stdout)
    assert stats["messages"] > 0


def test_a_writing_command_still_waits_for_the_owner(busy_home: Path) -> None:
    proc = run_cairn(busy_home, "learn", "forget", "1")
    assert proc.returncode != 0
    assert "in use by process" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_real_backfill_is_searchable_by_keyword_while_it_runs(tmp_path: Path) -> None:
    """Issue 16, part 2: start `cairn backfill` over real sessions (one project's three), search while
    it still runs, and get keyword results with a notice that vectors are still being built (and none
    after it)."""
    home = tmp_path / "home"
    projects = tmp_path / "projects"
    shutil.copytree(REAL_TRANSCRIPTS / "claude-code-viewer", projects / "-home-dev-claude-code-viewer")
    env = hostile_disks.cairn_env(home, CAIRN_CLAUDE_PROJECTS_DIR=str(projects))
    backfill = subprocess.Popen(
        [*hostile_disks.CAIRN, "backfill", "--model", "offline", "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        page = _first_results_while(backfill, home, "react component")
        assert page is not None, "the backfill ended before a search during it returned anything"
        assert any("is writing the store" in n and "keyword only" in n for n in page["notices"]), page
        assert backfill.wait(timeout=900) == 0
    finally:
        backfill.kill()
        backfill.wait(timeout=60)
    after = json.loads(run_cairn(home, "search", "react component", "--json").stdout)
    assert after["results"] and not any("is writing the store" in n for n in after["notices"])


def _first_results_while(job: subprocess.Popen[bytes], home: Path, query: str) -> dict[str, Any] | None:
    """The first search page with results taken while `job` runs (None if it ended first).

    Searching starts once the backfill has stored messages, read with plain sqlite3: a `cairn search`
    on a home nobody owns yet would take the store lock itself for a moment, and a backfill starting
    in that moment is refused (writers report a busy store, they do not queue)."""
    while job.poll() is None and not _has_messages(home / "cairn.db"):
        time.sleep(0.2)
    while job.poll() is None:
        proc = run_cairn(home, "search", query, "--json")
        if proc.returncode == 0:
            page: dict[str, Any] = json.loads(proc.stdout)
            if page["results"] and job.poll() is None:
                return page
    return None


def _has_messages(db: Path) -> bool:
    """Whether `db` exists and holds a message, read without taking cairn's store lock."""
    if not db.exists():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
            return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM messages)").fetchone()[0])
    except sqlite3.Error:  # not created or migrated yet
        return False


# Holds the store lock under a daemon's name (its argv says `daemon start`) without ever listening, as a
# daemon does between taking the lock and opening its socket, then exits when told to.
_STARTING_DAEMON = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cairn.store.lock import StoreLock

    lock = StoreLock(Path(sys.argv[1]) / "store.lock")
    lock.acquire()
    print("holding", flush=True)
    sys.stdin.readline()
    """
)


def test_a_writing_command_meeting_a_daemon_starting_up_waits_for_it(demo_home: Path, tmp_path: Path) -> None:
    # Issue 30, item 10: in the moment between a daemon taking the store's lock and its socket
    # accepting, a writing command was refused ("store in use"). Now it waits for the daemon; when
    # the daemon exits instead of listening, it opens the store itself.
    home = hostile_disks.copy_home(demo_home, tmp_path)
    script = tmp_path / "starting.py"  # a file, so the command line the lock names stays short
    script.write_text(_STARTING_DAEMON)
    holder = subprocess.Popen(
        [sys.executable, str(script), str(home), "daemon", "start"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        command = subprocess.Popen(
            [*hostile_disks.CAIRN, "forget", "--idea", "1", "--dry-run", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=hostile_disks.cairn_env(home),
        )
        with pytest.raises(subprocess.TimeoutExpired):
            command.wait(timeout=2)  # it waits on the starting daemon instead of refusing at once
        assert holder.stdin is not None
        holder.stdin.write("exit\n")
        holder.stdin.flush()
        out, errors = command.communicate(timeout=120)
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert command.returncode == 0 and "in use" not in errors, errors
    assert json.loads(out)["dry_run"] is True


def test_a_writing_command_sent_as_the_daemon_starts_is_answered(demo_home: Path, tmp_path: Path) -> None:
    home = hostile_disks.copy_home(demo_home, tmp_path)
    env = hostile_disks.cairn_env(home)
    daemon = subprocess.Popen(
        [*hostile_disks.CAIRN, "daemon", "run"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        proc = run_cairn(home, "forget", "--idea", "1", "--dry-run", "--json")
        assert proc.returncode == 0 and "in use" not in proc.stderr, proc.stderr
        assert json.loads(proc.stdout)["dry_run"] is True
    finally:
        daemon.terminate()
        daemon.wait(timeout=120)
