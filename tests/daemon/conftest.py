"""The daemon tests' fixture: daemons on the offline model with short windows, all killed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemons, offline_daemons


@pytest.fixture
def daemons(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    settings = {"CAIRN_BATCH_WINDOW_SECONDS": "0.2", "CAIRN_IDLE_EXIT_SECONDS": "60"}
    with offline_daemons(cairn_home, monkeypatch, **settings) as started:
        yield started
