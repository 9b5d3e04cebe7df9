"""The offline model gives the same memory in every process: nothing it decides may depend on the order a
set or dict of strings iterates in, which Python randomises per process (PYTHONHASHSEED). The daemon and a
direct `cairn index` are different processes, and their results must be the same."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.homes import IndexedViewer
from tests.helpers.hostile_disks import run_cairn
from tests.helpers.paths import VIEWER_SESSIONS

pytestmark = pytest.mark.process


def _index(home: Path, seed: str) -> Path:
    proc = run_cairn(
        home, "index", *map(str, VIEWER_SESSIONS), "--model", "offline", "--json", PYTHONHASHSEED=seed
    )
    assert proc.returncode == 0, proc.stderr
    return home


def _memory(home: Path) -> tuple[list[tuple[str, ...]], ...]:
    with contextlib.closing(sqlite3.connect(home / "cairn.db")) as conn:
        return tuple(
            [tuple(str(v) for v in row) for row in conn.execute(sql)]
            for sql in (
                "SELECT intent, content FROM ideas ORDER BY id",
                "SELECT e.canonical_name, e.type, i.content FROM idea_entities ie "
                "JOIN entities e ON e.id = ie.entity_id JOIN ideas i ON i.id = ie.idea_id "
                "ORDER BY ie.idea_id, e.canonical_name",
                "SELECT name, start_line FROM topic_spans ORDER BY id",
                "SELECT relation_type, from_idea_id, to_idea_id FROM relations ORDER BY id",
            )
        )


def test_two_hash_seeds_give_the_same_memory(tmp_path: Path, viewer_index: IndexedViewer) -> None:
    # Seeds 3 and 4 gave these sessions two project roots (and so other file entities and one more
    # tool call) while `project_root` broke ties in a set's order; any two seeds must agree.
    first = _memory(viewer_index.home)  # the same `cairn index`, run with PYTHONHASHSEED=3
    second = _memory(_index(tmp_path / "two", "4"))
    assert first[0], "the offline model extracted nothing to compare"
    assert first == second
