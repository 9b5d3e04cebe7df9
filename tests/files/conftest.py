"""Fixtures for the file index tests: a project on disk and its row (the store is tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.store.store import Store


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
