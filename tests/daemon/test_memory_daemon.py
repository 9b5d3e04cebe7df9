"""`cairn.Memory` while a real daemon owns the store: it asks the daemon, and answers as it does when it
opens the store itself — the same typed result, the same refusal — from a program as a user writes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cairn import Memory, Refusal
from cairn.search.models import SearchPage
from tests.daemon.helpers import Daemons

#: A program as a user writes it: the top results' ids and kinds for a query, as JSON.
PROGRAM = """
import json, sys
from cairn import Memory
with Memory.open(sys.argv[1]) as memory:
    page = memory.search(sys.argv[2], record_usage=False)
    print(json.dumps([[r.id, r.kind] for r in page.results]))
"""

QUERIES = ("database is locked", "which database for the orders service", "busy_timeout")


@pytest.fixture
def homes(demo_home: Path, cairn_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The indexed demo store twice: `cairn_home` for the daemon, the returned copy opened directly."""
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    direct = tmp_path / "direct-home"
    shutil.copytree(demo_home, direct, symlinks=True)
    return direct


def _program(home: Path, query: str) -> list[list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(home), query],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_memory_through_the_daemon_answers_as_the_store_opened_here(
    homes: Path, cairn_home: Path, daemons: Daemons
) -> None:
    alone = {query: _program(homes, query) for query in QUERIES}
    assert any(alone.values()), "the demo store answers these"
    daemons.start()
    # The daemon holds the store's lock: the program can only have been answered over its socket.
    for query in QUERIES:
        assert _program(cairn_home, query) == alone[query], query

    with Memory.open(cairn_home) as memory, Memory.open(homes) as direct:
        served, here = (
            memory.search(QUERIES[0], record_usage=False),
            direct.search(QUERIES[0], record_usage=False),
        )
        assert isinstance(served, SearchPage) and type(served) is type(here)
        assert [r.id for r in served.results] == [r.id for r in here.results]
        assert served.results[0].snippet == here.results[0].snippet
        refusals = []
        for route in (memory, direct):
            with pytest.raises(Refusal) as refused:
                route.show(999_999)
            refusals.append(str(refused.value))
        assert refusals[0] == refusals[1], "a refusal is worded alike by either route"
