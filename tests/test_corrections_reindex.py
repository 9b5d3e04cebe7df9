"""Issue 32: a person's corrections survive `cairn reindex`, which deletes a session's ideas and makes
them again, and an idea forgotten as wrong is not made again.

The first test is the real thing: a backfilled home, corrections and a forget by the CLI, then
`python -m cairn reindex --model offline` in its own process. The offline model words ideas the same
way each time, so there a correction finds its idea by its content hash; the second test re-indexes
in process with a model that rewords every idea, so corrections must find theirs by place and intent.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.offline import model as offline_model
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.daemon.jobs import reindex_job
from cairn.daemon.server import run_op
from cairn.store.store import Store
from tests.helpers.hostile_disks import run_cairn
from tests.helpers.paths import DEMO, REAL_TRANSCRIPTS
from tests.helpers.reindex import indexed

pytestmark = pytest.mark.process


def cli(home: Path, *args: str) -> Any:
    proc = run_cairn(home, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


Place = tuple[str, int, str, str]


def ideas_by_place(home: Path) -> dict[Place, dict[str, Any]]:
    """Every idea by (transcript file, line, intent, content) — what a re-index by the offline model
    keeps: its place and intent, and its words, which that model chooses the same way each time (a line
    can hold two ideas of one intent) — with its state."""
    with contextlib.closing(sqlite3.connect(home / "cairn.db")) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(
            "SELECT f.path AS file, i.* FROM ideas i JOIN transcript_files f ON f.id = i.source_file_id"
        ).fetchall()
    places: dict[Place, dict[str, Any]] = {}
    for row in rows:
        key = (row["file"], row["source_line"], row["intent"], row["content"])
        assert key not in places, f"one {row['intent']} idea twice at line {row['source_line']}"
        places[key] = dict(row)
    return places


def place_of(places: dict[Place, dict[str, Any]], intent: str, words: str) -> Place:
    [key] = [k for k, row in places.items() if row["intent"] == intent and words in row["content"]]
    return key


def test_corrections_survive_a_real_reindex_and_a_forgotten_idea_stays_gone(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    (projects / "-home-dev-acme-api").mkdir(parents=True)
    shutil.copy(DEMO, projects / "-home-dev-acme-api" / DEMO.name)
    shutil.copytree(REAL_TRANSCRIPTS / "fasthooks", projects / "-home-dev-fasthooks")
    home = tmp_path / "home"
    proc = run_cairn(
        home, "backfill", "--model", "offline", "--json", CAIRN_CLAUDE_PROJECTS_DIR=str(projects)
    )
    assert proc.returncode == 0, proc.stderr
    before = ideas_by_place(home)
    rule = place_of(before, "conclusion", "migrations run only from CI")
    question = place_of(before, "question", "move orders to Postgres")
    fix = place_of(before, "solution", "BEGIN IMMEDIATE does")
    wrong = place_of(before, "conclusion", "That guess was wrong")
    assert before[question]["answered_at"] is not None, "the indexer saw the question answered"

    cli(home, "correct", str(before[rule]["id"]), "--declined", "--importance", "0.2")
    cli(home, "correct", f"#{before[question]['id']}", "--open")
    cli(home, "correct", str(before[fix]["id"]), "--importance", "0.95")
    forgot = cli(home, "forget", "--idea", str(before[wrong]["id"]), "--yes")
    assert forgot["tombstones"] == 1

    report = cli(home, "reindex", "--model", "offline")

    assert report["sessions_swapped"] >= 2 and report["runs_failed"] == 0
    skipped = report["applied"]["forgotten_skipped"] + sum(
        s["forgotten_skipped"] or 0 for s in report["sessions"]
    )
    assert skipped == 1, "the wrong idea was made again by the model, and left out"
    after = ideas_by_place(home)
    assert wrong not in after, "a re-index does not bring a forgotten idea back"
    assert set(after) == set(before) - {wrong}
    for key in (rule, question, fix):
        assert after[key]["id"] != before[key]["id"], "made again by the re-index"
    assert after[rule]["declined_at"] is not None and after[rule]["importance"] == 0.2
    assert after[question]["answered_at"] is None and after[question]["resolution"] is None
    assert after[fix]["importance"] == 0.95 and after[fix]["declined_at"] is None
    untouched = [k for k in after if k not in (rule, question, fix)]
    assert all(after[k]["importance"] == before[k]["importance"] for k in untouched)
    assert all(after[k]["declined_at"] is None for k in untouched)

    found = {
        r["id"]: r for r in cli(home, "search", "production migrations CI", "--kind", "ideas")["results"]
    }
    assert found[str(after[rule]["id"])]["declined_at"] == after[rule]["declined_at"]
    open_questions = cli(home, "questions", "--open", "--project", "acme-api")
    assert after[question]["id"] in {q["id"] for q in open_questions}
    assert after[rule]["id"] not in {
        i["id"] for i in cli(home, "ideas", "--project", "acme-api") if i["declined_at"] is None
    }


def _reworded(build: Callable[..., IndexResult]) -> Callable[..., IndexResult]:
    """The offline model, but every idea said in other words (another model would word it otherwise)."""

    def build_result(*args: Any, **kwargs: Any) -> IndexResult:
        result = build(*args, **kwargs)
        for idea in result.ideas:
            idea.content = "In other words: " + idea.content
        return result

    return build_result


async def ideas_at(store: Store) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Every idea by (intent, line), what a correction holds to when the words change: a line can hold
    two ideas of one intent."""
    places: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in await store.db.fetchall("SELECT * FROM ideas ORDER BY id"):
        places.setdefault((row["intent"], row["source_line"]), []).append(dict(row))
    return places


def alone_at(places: dict[tuple[str, int], list[dict[str, Any]]], intent: str, words: str) -> tuple[str, int]:
    """The place of the idea of `intent` holding `words`, the only idea of its intent there: reworded,
    nothing else tells it apart."""
    [key] = [k for k, rows in places.items() if k[0] == intent and any(words in r["content"] for r in rows)]
    assert len(places[key]) == 1, f"two {intent} ideas at line {key[1]}: pick another idea"
    return key


async def test_a_reworded_idea_gets_the_correction_of_its_place_and_intent(
    store: Store, settings: Settings
) -> None:
    sessions = await indexed(store, settings, [DEMO])
    assert len(sessions) == 1
    before = await ideas_at(store)
    rule = alone_at(before, "conclusion", "from CI")
    wrong = alone_at(before, "conclusion", "That guess was wrong")
    await run_op(store, "correct", {"id": before[rule][0]["id"], "state": "declined", "importance": 0.3})
    await run_op(store, "forget", {"ideas": [before[wrong][0]["id"]]})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_model, "build_result", _reworded(offline_model.build_result))
        data = await reindex_job(store, settings, model="offline")

    assert data["sessions_swapped"] == 1 and data["runs_failed"] == 0, data["sessions"]
    after = await ideas_at(store)
    assert all(r["content"].startswith("In other words: ") for rows in after.values() for r in rows)
    [declined] = after[rule]
    assert declined["declined_at"] is not None and declined["importance"] == 0.3
    assert wrong not in after, "reworded, the wrong idea is still left out: same place, same intent"
    assert data["applied"]["forgotten_skipped"] == 1
    others = [r for k, rows in after.items() if k != rule for r in rows]
    assert others and all(r["declined_at"] is None for r in others)


async def test_an_idea_forgotten_while_its_session_is_reindexed_is_left_out_by_the_swap(
    store: Store, settings: Settings
) -> None:
    """The scratch store is copied when the re-index of a session starts; a forget made after that is
    honoured when the new generation is swapped in, with what links to the idea."""
    from cairn.reindex import run as reindex_run

    await indexed(store, settings, [DEMO])
    [(wrong, line)] = await store.db.fetchall(
        "SELECT id, source_line FROM ideas WHERE intent = 'conclusion' "
        "AND content LIKE '%That guess was wrong%'"
    )
    build = reindex_run.build_scratch

    async def build_then_forget(*args: Any, **kwargs: Any) -> Any:
        scratch = await build(*args, **kwargs)
        await run_op(store, "forget", {"ideas": [wrong]})
        return scratch

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reindex_run, "build_scratch", build_then_forget)
        data = await reindex_job(store, settings, model="offline")

    assert data["sessions_swapped"] == 1 and data["applied"]["forgotten_skipped"] == 0
    assert [s["forgotten_skipped"] for s in data["sessions"]] == [1]
    left = await store.db.fetchall(
        "SELECT id FROM ideas WHERE intent = 'conclusion' AND source_line = ? "
        "AND content LIKE '%That guess was wrong%'",
        (line,),
    )
    assert left == []
    dangling = await store.db.scalar(
        "SELECT count(*) FROM relations WHERE from_idea_id NOT IN (SELECT id FROM ideas) "
        "OR to_idea_id NOT IN (SELECT id FROM ideas)"
    )
    assert dangling == 0


def _without(build: Callable[..., IndexResult], words: str) -> Callable[..., IndexResult]:
    """The offline model, but one that does not make the ideas holding `words` (another model, or the
    same one shown other memory, need not make every idea the last one made)."""

    def build_result(*args: Any, **kwargs: Any) -> IndexResult:
        result = build(*args, **kwargs)
        result.ideas = [idea for idea in result.ideas if words not in idea.content]
        return result

    return build_result


async def test_a_correction_whose_idea_is_not_made_again_waits_for_it_and_applies_when_it_returns(
    store: Store, settings: Settings
) -> None:
    """A re-index that does not make a corrected idea again keeps the person's correction (it is kept by
    the idea's place, not on its row), says it waits, and the next re-index that makes an idea there
    gives it the correction again: the person's word does not silently stop applying."""
    await indexed(store, settings, [DEMO])
    before = await ideas_at(store)
    rule = alone_at(before, "conclusion", "from CI")
    await run_op(store, "correct", {"id": before[rule][0]["id"], "state": "declined", "importance": 0.3})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_model, "build_result", _without(offline_model.build_result, "from CI"))
        without = await reindex_job(store, settings, model="offline")

    assert without["sessions_swapped"] == 1 and without["runs_failed"] == 0, without["sessions"]
    assert rule not in await ideas_at(store)
    assert [s["corrections_waiting"] for s in without["sessions"]] == [1]
    kept = await store.db.fetchall(
        "SELECT state, importance FROM idea_corrections WHERE source_line = ?", (rule[1],)
    )
    assert [tuple(row) for row in kept] == [("declined", 0.3)]
    assert "1 of yours wait for their idea" in _table_text(without)

    again = await reindex_job(store, settings, model="offline")

    assert again["sessions_swapped"] == 1 and again["runs_failed"] == 0, again["sessions"]
    [returned] = (await ideas_at(store))[rule]
    assert returned["declined_at"] is not None and returned["importance"] == 0.3
    assert [s["corrections_waiting"] for s in again["sessions"]] == [0]
    assert "wait for their idea" not in _table_text(again)


def _table_text(data: dict[str, Any]) -> str:
    """The `cairn reindex` table as the person reads it."""
    from rich.console import Console

    from cairn.cli.reindex import reindex_summary

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(reindex_summary(data, billed=False))
    return console.export_text()
