"""Fixtures for the tool tests: real stores (SQLite + embedded Chroma), fresh or seeded once per module.

The tools never write, so the modules that only call tools share one seeded store (`seeded`, created
in the module's event loop: those modules set `pytestmark = pytest.mark.asyncio(loop_scope="module")`).
Tests that change data use `fresh_store`. All stores share one embedding function, so the ONNX model
is loaded once per test run.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from chromadb.api.types import Documents, EmbeddingFunction
from pydantic_ai import RunContext

from cairn.config import Settings
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from cairn.tools import ToolDeps
from tests.tools.memory import Memory, Seeded, context, seed


async def open_store(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> Store:
    return await Store.open(settings, vectors=VectorIndex(settings, embedding_function))


@pytest.fixture
async def fresh_store(
    settings: Settings, embedding_function: EmbeddingFunction[Documents]
) -> AsyncIterator[Store]:
    store = await open_store(settings, embedding_function)
    yield store
    await store.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded(
    tmp_path_factory: pytest.TempPathFactory, embedding_function: EmbeddingFunction[Documents]
) -> AsyncIterator[Seeded]:
    with pytest.MonkeyPatch.context() as patch:  # the root `settings` fixture's isolation, once per module
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            patch.delenv(key)
        settings = Settings.load(tmp_path_factory.mktemp("cairn-home"))
    store = await open_store(settings, embedding_function)
    try:
        yield Seeded(store, await seed(store))
    finally:
        await store.close()


@pytest.fixture
def memory(seeded: Seeded) -> Memory:
    return seeded.memory


@pytest.fixture
def deps(seeded: Seeded) -> ToolDeps:
    """Fresh per test: `tool_calls` counts up."""
    return ToolDeps(db=seeded.store.db, vectors=seeded.store.vectors)


@pytest.fixture
def ctx(deps: ToolDeps) -> RunContext[ToolDeps]:
    return context(deps)
