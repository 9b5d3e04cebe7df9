"""Tests of the eval harness, and the tiny dataset they share: cairn's demo session, labelled by hand.

The demo session (29 lines: a flaky SQLite test, a WAL decision, a Postgres question answered by a load
test, a leaked key) is small enough that every expected score below can be worked out on paper.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO = REPO_ROOT / "cairn" / "demo" / "demo-session.jsonl"
DEMO_SECRET = "sk-ant-api03-DEMOxDEMOxDEMOx"

DEMO_LABELS: dict[str, Any] = {
    "case": "demo",
    "ideas": [
        {
            "key": "i1",
            "line": 2,
            "intent": "problem",
            "content": "orders test suite fails database is locked",
        },
        {
            "key": "i2",
            "line": 8,
            "intent": "conclusion",
            "content": "pytest-xdist workers share one database file",
        },
        {
            "key": "i3",
            "line": 11,
            "intent": "conclusion",
            "content": "test_concurrent_checkout opens two connections DEFERRED transaction",
        },
        {"key": "i4", "line": 12, "intent": "question", "content": "should we use WAL mode"},
        {
            "key": "i5",
            "line": 13,
            "intent": "decision",
            "content": "WAL journal mode busy_timeout BEGIN IMMEDIATE",
        },
        {
            "key": "i6",
            "line": 19,
            "intent": "question",
            "content": "move orders to Postgres before Black Friday",
        },
        {"key": "i7", "line": 20, "intent": "todo", "content": "load test replays 10k orders per minute"},
        {
            "key": "i8",
            "line": 27,
            "intent": "conclusion",
            "content": "do not need Postgres for Black Friday stay on SQLite",
        },
        {"key": "i9", "line": 29, "intent": "decision", "content": "production migrations run only from CI"},
    ],
    "relations": [{"type": "supersedes", "from": "i3", "to": "i2"}],
    "answered": [{"question": "i4", "answer": "i5"}, {"question": "i6", "answer": "i8"}],
    "completed": [{"todo": "i7", "line": 27}],
    "topics": [{"line": 2, "name": "flaky orders test"}, {"line": 19, "name": "Postgres for Black Friday"}],
    "entities": [
        {"name": "SQLite", "type": "technology", "aliases": ["sqlite3"]},
        {"name": "PostgreSQL", "type": "technology", "aliases": ["Postgres"]},
        {"name": "WAL", "type": "technology"},
        {"name": "app/db.py", "type": "file"},
    ],
    "skip_lines": [3, 28],
    "secrets": [DEMO_SECRET],
}

DEMO_QUERIES: dict[str, Any] = {
    "queries": [
        {
            "id": "q1",
            "query": "why did the orders tests fail randomly",
            "case": "demo",
            "ideas": ["i3"],
            "lines": [11],
        }
    ]
}


def demo_labels() -> dict[str, Any]:
    """A fresh copy of the demo labels, to change in one test without touching the others."""
    return copy.deepcopy(DEMO_LABELS)


def make_dataset(
    root: Path,
    labels: dict[str, Any] | None = None,
    *,
    queries: dict[str, Any] | None = None,
    case: str = "demo",
) -> Path:
    """Write a one-case dataset (the demo transcript under `case`) to `root`; returns `root`."""
    (root / "sessions").mkdir(parents=True, exist_ok=True)
    (root / "labels").mkdir(exist_ok=True)
    shutil.copyfile(DEMO, root / "sessions" / f"{case}.jsonl")
    data = demo_labels() if labels is None else labels
    (root / "labels" / f"{case}.json").write_text(json.dumps(data), encoding="utf-8")
    if queries is not None:
        (root / "queries.json").write_text(json.dumps(queries), encoding="utf-8")
    return root
