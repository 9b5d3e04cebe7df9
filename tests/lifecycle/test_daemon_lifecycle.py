"""`cairn forget` and `cairn import` while a daemon owns the store: it runs them, and stays up."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemons, alive, offline_daemons, wait_for
from tests.helpers.cli import cairn, cairn_json
from tests.lifecycle.helpers import ACME_PHRASES, DEMO_PATH, DEMO_SESSION, found_in_files

pytestmark = pytest.mark.process


@pytest.fixture
def daemons(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with offline_daemons(home, monkeypatch, CAIRN_IDLE_EXIT_SECONDS="120") as started:
        yield started


def test_the_daemon_forgets_and_imports_for_the_command(home: Path, daemons: Daemons, tmp_path: Path) -> None:
    export = tmp_path / "all.jsonl"
    cairn("export", "--out", str(export))
    before = cairn_json("stats")
    pid = daemons.start()

    done = cairn_json("forget", "--project", "acme-api", "--yes")  # the daemon holds the lock: it ran this
    assert done["counts"]["projects"] == 1 and done["vectors_pending"] == 0
    assert alive(pid)
    for phrase in ACME_PHRASES:
        assert found_in_files(home, phrase) == [], f"{phrase!r} is still on disk with the daemon running"
    assert found_in_files(home / "chroma", DEMO_PATH)
    assert cairn_json("search", "Next.js version", "--project", "Demo")["results"]

    imported = cairn_json("import", str(export))
    assert imported["added"]["projects"] == 1 and imported["vectors_written"] > 0
    assert alive(pid)
    after = cairn_json("stats")
    for key in ("projects", "sessions", "messages", "ideas", "entities", "vectors"):
        assert after[key] == before[key], key
    hits = cairn_json("search", "database is locked", "--mode", "semantic")["results"]
    assert any(hit["session"]["id"] == DEMO_SESSION for hit in hits), "the imported vectors are searched"


def test_an_import_longer_than_the_idle_exit_gets_its_answer(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The daemon counted a request in flight as idle time, so an import that outlasted
    `idle_exit_seconds` saw the daemon exit under it: the import committed, the command printed "closed
    the connection without answering". Here the import waits on a write lock this test holds until the
    idle exit has long passed (or, before the fix, until the daemon died of it)."""
    export = tmp_path / "all.jsonl"
    cairn("export", "--out", str(export))
    cairn("forget", "--project", "acme-api", "--yes")  # no daemon yet: done directly
    # Long enough for the import's process to start and reach the daemon on a loaded machine before the
    # daemon would idle out anyway; the idle exit is timed from when the daemon has the import.
    idle_exit = 6.0
    log = home / "logs" / "daemon.log"
    with offline_daemons(home, monkeypatch, CAIRN_IDLE_EXIT_SECONDS=str(idle_exit)) as daemons:
        pid = daemons.start()
        with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=60, isolation_level=None)) as lock:
            lock.execute("BEGIN IMMEDIATE")  # the import's writes wait for this (the store's busy timeout)
            importing = subprocess.Popen(
                [sys.executable, "-m", "cairn", "import", str(export), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "CAIRN_HOME": str(home)},
            )
            try:
                wait_for(
                    lambda: "running import for a socket client" in log.read_text() or not alive(pid),
                    60,
                    "the import to reach the daemon",
                )
                assert alive(pid), "the daemon idled out before the import reached it"
                # Past an idle exit, within the store's busy timeout (10 s) that the import waits out.
                held_until = time.monotonic() + idle_exit + 2
                wait_for(lambda: not alive(pid) or time.monotonic() > held_until, 60, "the idle exit to pass")
            finally:
                lock.execute("ROLLBACK")
            out, errors = importing.communicate(timeout=120)
        assert importing.returncode == 0, errors
        report = json.loads(out)
        assert report["added"]["projects"] == 1 and report["total_added"] > 0
        assert alive(pid), "the daemon answered the import, then idled out only after it"
        daemons.wait_exit(pid)  # idle again once answered
