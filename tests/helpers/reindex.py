"""Transcripts captured and indexed offline in a real store, for the reindex tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.agent.indexer import index_pending
from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.store.store import Store


async def indexed(store: Store, settings: Settings, paths: list[Path]) -> dict[str, list[int]]:
    """Capture and index `paths` offline; each session's idea ids."""
    for path in paths:
        await sync_file(store, path, settings)
    report = await index_pending(store, settings, model="offline")
    assert report.ok and not report.failures
    ideas: dict[str, list[int]] = {}
    for session, idea_id in await rows(store, "SELECT session_id, id FROM ideas ORDER BY id"):
        ideas.setdefault(session, []).append(idea_id)
    assert len(ideas) == len(paths)
    return ideas


async def rows(store: Store, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await store.db.fetchall(sql, params)]
