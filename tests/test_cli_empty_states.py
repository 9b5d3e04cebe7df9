"""An empty listing says what is true of the store: `cairn questions --open` with every stored question
answered said "No questions stored yet. Run `cairn sync` first"."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from tests.helpers.cli import cairn, cairn_json


def settle_every_question(home: Path) -> dict[str, int]:
    """Mark every stored question and problem answered, one of them declined; the counts set."""
    with sqlite3.connect(home / "cairn.db") as db:
        ids = [row[0] for row in db.execute("SELECT id FROM ideas WHERE intent IN ('question', 'problem')")]
        db.execute(
            "UPDATE ideas SET answered_at = '2026-01-01T00:00:00.000Z' "
            "WHERE intent IN ('question', 'problem')"
        )
        db.execute(
            "UPDATE ideas SET answered_at = NULL, declined_at = '2026-01-01T00:00:00.000Z' WHERE id = ?",
            (ids[0],),
        )
    return {"stored": len(ids), "answered": len(ids) - 1, "declined": 1}


def test_no_open_questions_says_what_became_of_the_stored_ones(cairn_home: Path, demo_home: Path) -> None:
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    settled = settle_every_question(cairn_home)
    assert settled["stored"] >= 2, "the demo session raises questions"

    out = cairn("questions", "--open").stdout

    assert "stored yet" not in out
    assert f"No open questions — {settled['stored']} stored:" in out
    assert f"{settled['answered']} answered" in out and "1 declined" in out
    assert cairn_json("questions", "--open") == []  # JSON stays the rows


def test_an_empty_scope_and_an_empty_store_say_so(cairn_home: Path, demo_home: Path) -> None:
    assert "No todos stored yet. Run `cairn sync`" in cairn("todos", "--open").stdout

    shutil.rmtree(cairn_home)
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    out = cairn("questions", "--session", "no-such-session").stdout
    assert "No questions in session no-such-session." in out
