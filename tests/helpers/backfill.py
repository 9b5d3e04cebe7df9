"""The backfill tests' demo project and a plain SQL read of a home's database (tests/test_backfill.py,
tests/test_reindex_kill.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

DEMO_PROJECT = "-home-dev-demo"


def rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "cairn.db") as conn:
        return list(conn.execute(sql))
