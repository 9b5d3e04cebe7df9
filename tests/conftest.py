"""Shared test fixtures: an isolated CAIRN_HOME per test and the shared real-world transcripts."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from pydantic_ai.models import override_allow_model_requests

from cairn.config import Settings
from cairn.store.embeddings import MiniLMInt8Embedding
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_TRANSCRIPTS = REPO_ROOT.parent / "shared" / "fixtures" / "transcripts"


def shared_transcripts() -> list[Path]:
    """Every real Claude Code JSONL file under ../shared/fixtures/transcripts."""
    files = sorted(SHARED_TRANSCRIPTS.rglob("*.jsonl"))
    if not files:
        pytest.fail(f"no shared transcripts found under {SHARED_TRANSCRIPTS}")
    return files


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    """No test may reach a real model API; tests of the HTTP path allow it locally, on 127.0.0.1."""
    with override_allow_model_requests(False):
        yield


@pytest.fixture(scope="session")
def embedding_function() -> EmbeddingFunction[Documents]:
    """The packaged MiniLM model, loaded once per test run and shared by every store a test opens."""
    return MiniLMInt8Embedding()


@pytest.fixture
def shared_files() -> list[Path]:
    return shared_transcripts()


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
