"""Fixtures for the learning tests: a fresh real store (SQLite + embedded Chroma) per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

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
