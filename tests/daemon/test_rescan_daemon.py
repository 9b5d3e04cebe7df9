"""`cairn redact --rescan` while a daemon owns the store: the daemon runs it (single writer), alive after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.store.store import Store
from tests.daemon.helpers import Daemons, alive, cairn, query
from tests.helpers.rescan import SECRETS, _leaky_store


async def test_the_daemon_runs_the_rescan_for_the_command(
    daemons: Daemons, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await Store.open(settings)
    try:
        await _leaky_store(store, settings, tmp_path, monkeypatch)
    finally:
        await store.close()
    pid = daemons.start()
    done = cairn("redact", "--rescan", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["finished"] and data["tables"]["messages"]["changed"] >= 3
    assert alive(pid)
    for secret in SECRETS:
        assert query(settings.home, "SELECT count(*) FROM messages WHERE instr(text, ?)", (secret,)) == [(0,)]
