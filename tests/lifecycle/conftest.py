"""One indexed CAIRN_HOME per test run (two projects, real transcripts, offline model: the root conftest's
`indexed_home`), copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def home(indexed_home: Path, cairn_home: Path) -> Iterator[Path]:
    """A private copy of the indexed home as this test's CAIRN_HOME."""
    shutil.copytree(indexed_home, cairn_home)
    yield cairn_home
