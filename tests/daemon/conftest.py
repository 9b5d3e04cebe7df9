"""The daemon tests' fixture: daemons on the offline model with short windows, all killed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemons


@pytest.fixture
def daemons(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    monkeypatch.setenv("CAIRN_BATCH_WINDOW_SECONDS", "0.2")
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "60")
    started = Daemons(cairn_home)
    try:
        yield started
    finally:
        started.cleanup()
