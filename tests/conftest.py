"""Shared test fixtures: an isolated CAIRN_HOME per test and the real-world transcripts of tests/fixtures."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from pydantic_ai.models import override_allow_model_requests

from cairn.config import Settings
from cairn.store.embeddings import MiniLMInt8Embedding
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers import hostile_disks
from tests.helpers.homes import IndexedViewer
from tests.helpers.hostile_disks import run_cairn
from tests.helpers.paths import DEMO, VIEWER_SESSIONS, real_transcripts

# A terminal's size comes from the terminal, not from the test runner: pytest-xdist's workers export
# COLUMNS=80, and a rich console created with COLUMNS set keeps that width for good, so the commands the
# tests run in this process (tests/helpers/inprocess.py) would ignore the COLUMNS a test gives them.
for _variable in ("COLUMNS", "LINES"):
    os.environ.pop(_variable, None)

#: Directories whose every test starts real cairn processes, and fixtures that start them (marked
#: `process` here; other modules and tests that do say so with their own marks).
_PROCESS_DIRS = (Path(__file__).parent / "daemon",)
_PROCESS_FIXTURES = frozenset({"daemons"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what the quick loop leaves out: tests under `_PROCESS_DIRS` or using a `_PROCESS_FIXTURES`
    fixture as `process`, and every test that uses the viewer's `browser` fixture as `browser`."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        path = Path(str(item.path))
        if fixtures & _PROCESS_FIXTURES or any(path.is_relative_to(d) for d in _PROCESS_DIRS):
            item.add_marker(pytest.mark.process)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)


def _starts_cairn(argv: object) -> bool:
    """Whether a command line runs cairn: `python -m cairn`, a program named `cairn…` (the console script,
    a hook launcher), or `python -c` with a script that imports it."""
    words = [str(argv)] if isinstance(argv, str | bytes | os.PathLike) else [str(w) for w in argv]
    if not words:
        return False
    if Path(words[0]).name.startswith("cairn"):
        return True
    if not Path(words[0]).name.startswith("python") and words[0] != sys.executable:
        return False
    for flag, value in itertools.pairwise(words):
        if (flag == "-m" and value.split(".")[0] == "cairn") or (flag == "-c" and "cairn" in value):
            return True
    return False


@pytest.fixture(autouse=True)
def _cairn_processes_are_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that starts a cairn process without the `process` mark fails saying so: the quick loop
    (`-m "not process …"`) must not start processes, and the mark must not go stale."""
    if request.node.get_closest_marker("process") is not None:
        return
    start = subprocess.Popen.__init__

    def refusing(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        if _starts_cairn(args):
            pytest.fail(f"{request.node.nodeid} starts a cairn process ({args!r}): mark it `process`")
        start(self, args, *rest, **options)

    monkeypatch.setattr(subprocess.Popen, "__init__", refusing)


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    """No test may reach a real model API; tests of the HTTP path allow it locally, on 127.0.0.1."""
    with override_allow_model_requests(False):
        yield


@pytest.fixture(scope="session")
def embedding_function() -> EmbeddingFunction[Documents]:
    """The packaged MiniLM model, loaded once per test run and shared by every store a test opens."""
    return MiniLMInt8Embedding()


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the demo session, synced, indexed offline and embedded by a real `cairn sync
    --demo`, once per test run and shared: tests copy it (`hostile_disks.copy_home`) before using it."""
    return hostile_disks.demo_home(tmp_path_factory)


@pytest.fixture(scope="session")
def indexed_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the demo session (project acme-api) and the two smaller viewer sessions (project
    Demo), indexed offline by a real `cairn index`, once per test run and shared: copy it before use."""
    from tests.helpers.cli import cairn_json

    root = tmp_path_factory.mktemp("indexed")
    with pytest.MonkeyPatch.context() as mp:  # the `cairn_home` fixture's isolation
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        report = cairn_json("index", str(DEMO), *map(str, VIEWER_SESSIONS[:2]), "--model", "offline")
        assert report["runs_failed"] == 0 and report["messages_added"] > 50
    return root / "home"


@pytest.fixture(scope="session")
def viewer_index(tmp_path_factory: pytest.TempPathFactory) -> IndexedViewer:
    """The viewer sessions indexed offline by a real `cairn index`, once per test run: the command takes
    tens of seconds (mostly embedding), and several tests compare with or build on its result.
    Run with PYTHONHASHSEED=3, one of the seeds `tests/agent/test_offline_determinism.py` compares."""
    home = tmp_path_factory.mktemp("viewer-index") / "home"
    proc = run_cairn(
        home, "index", *map(str, VIEWER_SESSIONS), "--model", "offline", "--json", PYTHONHASHSEED="3"
    )
    assert proc.returncode == 0, proc.stderr
    return IndexedViewer(home, json.loads(proc.stdout))


@pytest.fixture
def real_files() -> list[Path]:
    return real_transcripts()


@pytest.fixture
def cairn_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh, empty CAIRN_HOME; also isolates ~/.claude/projects so no test reads the real one."""
    home = tmp_path / "cairn-home"
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(tmp_path / "claude-projects"))
    for key in [
        k
        for k in os.environ
        if k.startswith("CAIRN_") and k not in {"CAIRN_HOME", "CAIRN_CLAUDE_PROJECTS_DIR"}
    ]:
        monkeypatch.delenv(key)
    # A search without a daemon starts one when the model is offline, as the tests' is: detached, it
    # would outlive the test. The tests of that start turn it back on and clean up what they start.
    monkeypatch.setenv("CAIRN_SEARCH_STARTS_DAEMON", "false")
    yield home


@pytest.fixture
def settings(cairn_home: Path) -> Settings:
    return Settings.load(cairn_home)


@pytest.fixture
async def store(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> AsyncIterator[Store]:
    """A fresh real store (SQLite + embedded Chroma) with the shared embedding model; modules that need a
    store opened another way define their own `store`."""
    opened = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    yield opened
    await opened.close()
