"""One indexed CAIRN_HOME per test run (two projects, real transcripts, offline model: the root conftest's
`indexed_home`), copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Phrases only the demo session (project acme-api) says.
ACME_PHRASES = (b"Black Friday", b"busy_timeout", b"sqlite3.OperationalError", b"/home/dev/acme-api")
#: The other project's path, in its rows and in every one of its vectors' metadata.
DEMO_PATH = b"/path/to/Demo"


@pytest.fixture
def home(indexed_home: Path, cairn_home: Path) -> Iterator[Path]:
    """A private copy of the indexed home as this test's CAIRN_HOME."""
    shutil.copytree(indexed_home, cairn_home)
    yield cairn_home


def found_in_files(root: Path, phrase: bytes) -> list[str]:
    """Every file under `root` whose bytes contain `phrase` (databases, WALs, Chroma's segments)."""
    return [
        str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file() and phrase in p.read_bytes()
    ]
