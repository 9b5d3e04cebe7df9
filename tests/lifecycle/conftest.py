"""One indexed CAIRN_HOME per test run (two projects, real transcripts, offline model), copied per test."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHARED_TRANSCRIPTS
from tests.test_cli import cairn_json

DEMO = Path(__file__).resolve().parents[2] / "cairn" / "demo" / "demo-session.jsonl"
VIEWER = sorted((SHARED_TRANSCRIPTS / "claude-code-viewer").glob("*.jsonl"))[:2]

#: Phrases only the demo session (project acme-api) says.
ACME_PHRASES = (b"Black Friday", b"busy_timeout", b"sqlite3.OperationalError", b"/home/dev/acme-api")
#: The other project's path, in its rows and in every one of its vectors' metadata.
DEMO_PATH = b"/path/to/Demo"


@pytest.fixture(scope="session")
def indexed_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the demo session (acme-api) and two real sessions (Demo), indexed offline."""
    root = tmp_path_factory.mktemp("lifecycle")
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        report = cairn_json("index", str(DEMO), *map(str, VIEWER), "--model", "offline")
        assert report["runs_failed"] == 0 and report["messages_added"] > 50
    return root / "home"


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
