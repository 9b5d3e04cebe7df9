"""`cairn forget` and `cairn import` while a daemon owns the store: it runs them, and stays up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemons, alive, offline_daemons
from tests.lifecycle.conftest import ACME_PHRASES, DEMO_PATH, found_in_files
from tests.lifecycle.test_forget import DEMO_SESSION
from tests.test_cli import cairn, cairn_json


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
