"""Fixtures for the file index tests: a real store (SQLite + embedded Chroma) and a project on disk."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.config import Settings
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex


@pytest.fixture
async def store(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> AsyncIterator[Store]:
    opened = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    yield opened
    await opened.close()


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    return root.resolve()


@pytest.fixture
async def project_id(store: Store, project_dir: Path) -> int:
    async with store.db.write() as conn:
        cursor = await conn.execute(
            "INSERT INTO projects (path, name) VALUES (?, ?) RETURNING id",
            (str(project_dir), project_dir.name),
        )
        row = await cursor.fetchone()
        await cursor.close()
    assert row is not None
    return int(row[0])
