"""`cairn forget` end to end: what goes, what stays, and that no byte of it is left on disk."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.lifecycle import forget as forget_module
from cairn.lifecycle.forget import Selection
from cairn.store.store import Store
from tests.helpers import cli
from tests.lifecycle.helpers import ACME_PHRASES, DEMO_PATH, DEMO_SESSION, found_in_files

pytestmark = pytest.mark.process


def cairn(*args: str, **options: Any) -> Any:
    """Real processes here: what a forget leaves on disk is what a process leaves when it exits (Chroma's
    native HNSW cache outlives a command run in this process, and persists on its own schedule)."""
    return cli.cairn(*args, real_process=True, **options)


def cairn_json(*args: str, **options: Any) -> Any:
    return cli.cairn_json(*args, real_process=True, **options)


def stats() -> dict[str, Any]:
    return cairn_json("stats")


def found_in_demo(query: str) -> list[str]:
    """Every result of `query` in the project Demo, on one page."""
    found = cairn_json("search", query, "--project", "Demo", "--limit", "100")
    assert found["next_token"] is None, "all of them fit on the page"
    return [r["id"] for r in found["results"]]


def test_forget_project_leaves_no_trace_and_keeps_the_other_project(home: Path) -> None:
    for phrase in ACME_PHRASES:
        assert found_in_files(home, phrase), f"{phrase!r} should be stored before the forget"
    # Chroma keeps vectors and metadata, no text: each of the project's vectors carries its path, so the
    # byte checks after the forget cover Chroma's files as well as SQLite's.
    assert found_in_files(home / "chroma", b"/home/dev/acme-api"), "Chroma holds the project's vectors"
    before = stats()
    other_hits = found_in_demo("Next.js version")
    assert other_hits

    planned = cairn_json("forget", "--project", "acme-api", "--dry-run")
    assert planned["dry_run"] and planned["counts"]["projects"] == 1
    assert stats() == before, "a dry run changes nothing"

    done = cairn_json("forget", "--project", "acme-api", "--yes")
    assert done["counts"] == planned["counts"], "the dry run counts exactly what goes"
    assert done["vectors_pending"] == 0 and done["vectors_deleted"] > 0

    after = stats()
    counts = done["counts"]
    assert after["projects"] == before["projects"] - 1
    assert after["sessions"] == before["sessions"] - counts["sessions"] == before["sessions"] - 1
    assert after["messages"] == before["messages"] - counts["messages"]
    assert after["ideas"] == before["ideas"] - counts["ideas"]
    assert after["relations"] == before["relations"] - counts["relations"]
    assert after["topic_spans"] == before["topic_spans"] - counts["spans"]
    assert after["entities"] == before["entities"] - counts["entities"]
    assert after["transcript_files"] == before["transcript_files"], "read positions are kept"
    assert after["pending_vectors"] == 0
    for kind in ("ideas", "spans", "entities"):
        assert after["vectors"][kind] == before["vectors"][kind] - counts[kind], f"{kind}: their vectors go"
    assert after["vectors"]["messages"] < before["vectors"]["messages"]

    for phrase in ACME_PHRASES:
        assert found_in_files(home, phrase) == [], f"{phrase!r} is still on disk"
    assert found_in_files(home / "chroma", DEMO_PATH), "the other project's vectors stay"
    assert found_in_files(home, b"Next.js"), "the other project's rows stay"
    # Everything the other project's search found is found again. Not necessarily in the same order: bm25
    # weighs a word by how many rows of the whole store hold it, so near ties may swap once rows go.
    assert sorted(found_in_demo("Next.js version")) == sorted(other_hits)
    assert cairn_json("search", "Black Friday orders")["results"] == []


def test_forget_session_removes_its_rows_and_vectors_only(home: Path) -> None:
    before = stats()
    planned = cairn_json("forget", "--session", DEMO_SESSION, "--dry-run")
    done = cairn_json("forget", "--session", DEMO_SESSION, "--yes")
    assert done["counts"] == planned["counts"]
    assert done["counts"]["sessions"] == 1 and done["counts"]["projects"] == 0
    after = stats()
    assert after["sessions"] == before["sessions"] - 1
    assert after["messages"] == before["messages"] - done["counts"]["messages"]
    assert after["projects"] == before["projects"], "forgetting a session keeps its project"
    for phrase in (b"Black Friday", b"busy_timeout", b"sqlite3.OperationalError"):
        assert found_in_files(home, phrase) == [], f"{phrase!r} is still on disk"
    assert found_in_files(home, b"Next.js")


def test_forget_ideas_by_id(home: Path) -> None:
    ideas = cairn_json("ideas", "--project", "Demo", "--limit", "100")
    target = ideas[0]
    before = stats()
    done = cairn_json("forget", "--idea", str(target["id"]), "--yes")
    assert done["counts"]["ideas"] == 1 and done["counts"]["messages"] == 0
    after = stats()
    assert after["ideas"] == before["ideas"] - 1
    assert after["messages"] == before["messages"]
    assert after["vectors"]["ideas"] == before["vectors"]["ideas"] - 1
    assert target["id"] not in {i["id"] for i in cairn_json("ideas", "--limit", "1000")}
    shown = cairn("show", f"idea:{target['id']}", check=False)
    assert shown.returncode != 0


def _corrections(home: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "cairn.db") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM idea_corrections ORDER BY id")]


def test_a_wrong_idea_leaves_its_place_and_hash_and_a_project_forget_takes_that_too(home: Path) -> None:
    """Issue 32: forgetting an idea records where it was said (no text), so a re-index does not make it
    again (`tests/test_corrections_reindex.py`); forgetting its project removes every correction."""
    ideas = cairn_json("ideas", "--project", "acme-api", "--limit", "100")
    wrong, declined = ideas[0], ideas[1]
    cairn("correct", str(declined["id"]), "--declined")

    done = cairn_json("forget", "--idea", str(wrong["id"]), "--yes")

    assert done["tombstones"] == 1 and done["counts"]["corrections"] == 0
    tombstone = next(c for c in _corrections(home) if c["state"] == "forgotten")
    assert tombstone["source_line"] == wrong["source_line"] and tombstone["intent"] == wrong["intent"]
    assert tombstone["importance"] is None
    assert not any(isinstance(v, str) and wrong["content"][:20] in v for v in tombstone.values())
    assert {c["state"] for c in _corrections(home)} == {"forgotten", "declined"}

    planned = cairn_json("forget", "--project", "acme-api", "--dry-run")
    assert planned["counts"]["corrections"] == 2 and planned["tombstones"] == 0
    gone = cairn_json("forget", "--project", "acme-api", "--yes")
    assert gone["counts"]["corrections"] == 2 and _corrections(home) == []


def test_unknown_targets_and_missing_confirmation_are_one_line_errors(home: Path) -> None:
    before = stats()
    refused = cairn("forget", "--project", "acme-api", check=False)  # stdin is not a terminal
    assert refused.returncode == 2 and "--yes" in refused.stderr and len(refused.stderr.splitlines()) == 1
    missing = cairn("forget", "--project", "no-such-project", "--yes", check=False)
    assert missing.returncode != 0 and "no stored project" in missing.stderr
    both = cairn("forget", "--project", "acme-api", "--idea", "1", "--yes", check=False)
    assert both.returncode == 2 and "exactly one" in both.stderr
    bad_date = cairn("forget", "--project", "acme-api", "--before", "soonish", "--yes", check=False)
    assert bad_date.returncode == 2 and "--before" in bad_date.stderr
    assert stats() == before, "nothing was deleted by a refused command"


def test_before_keeps_newer_sessions(home: Path) -> None:
    before = stats()
    # The demo session is from 2026-11-20, the Demo project's from 2025-09: a cutoff between them.
    done = cairn_json("forget", "--project", "Demo", "--before", "2026-01-01", "--yes")
    assert done["counts"]["sessions"] == 2 and done["counts"]["projects"] == 0
    none = cairn_json("forget", "--project", "acme-api", "--before", "2026-01-01", "--dry-run")
    assert none["total"] == 0
    assert stats()["sessions"] == before["sessions"] - 2


async def test_a_forget_killed_after_its_commit_is_finished_by_the_next_vector_sync(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def killed(store: Store, report: object = None) -> None:
        return None  # the process died right after the commit: nothing after it ran

    kinds = ("ideas", "messages")
    settings = Settings.load(home)
    store = await Store.open(settings)
    try:
        acme = {
            kind: {
                str(row[0])
                for row in await store.db.fetchall(
                    f"SELECT id FROM {kind} WHERE session_id = ?", (DEMO_SESSION,)
                )
            }
            for kind in kinds
        }
        vectors_before = {kind: store.vectors.get_ids(kind) for kind in kinds}
        assert acme["ideas"] & vectors_before["ideas"] and acme["messages"] & vectors_before["messages"]
        monkeypatch.setattr(forget_module, "finish", killed)
        report = await forget_module.forget(store, Selection(project="acme-api"))
        assert report.counts["ideas"] == len(acme["ideas"])
        queued = await store.db.scalar("SELECT count(*) FROM vector_outbox WHERE op = 'delete'")
        assert queued >= len(acme["ideas"]) + len(acme["messages"])
        assert {kind: store.vectors.get_ids(kind) for kind in kinds} == vectors_before, "not applied yet"
    finally:
        await store.close()
    monkeypatch.undo()

    reopened = await Store.open(settings)  # what the daemon's loop and every sync do next
    try:
        await reopened.sync_vectors()
        assert await reopened.db.scalar("SELECT count(*) FROM vector_outbox") == 0
        for kind in kinds:
            assert reopened.vectors.get_ids(kind) == vectors_before[kind] - acme[kind]
    finally:
        await reopened.close()
    assert json.loads(cairn("search", "Black Friday orders", "--json").stdout)["results"] == []


def test_index_runs_keep_nothing_the_forgotten_project_said(home: Path) -> None:
    """A rejected result item quotes the model's text about a session, and an error can too: after a
    forget, those of the forgotten sessions and ideas are gone from disk; the other project's stay."""
    with sqlite3.connect(home / "cairn.db") as db:
        other = db.execute("SELECT id FROM sessions WHERE id <> ? LIMIT 1", (DEMO_SESSION,)).fetchone()[0]
        idea = db.execute("SELECT id FROM ideas WHERE session_id = ? LIMIT 1", (DEMO_SESSION,)).fetchone()[0]
        rejected = [
            {"field": "ideas", "item": {"session": DEMO_SESSION, "content": "XYZZY-IDEA"}, "reason": "dup"},
            {
                "field": "answered_questions",
                "item": {"question_idea_id": idea, "answer_summary": "XYZZY-ANSWER"},
                "reason": "no such line",
            },
            {"field": "ideas", "item": {"session": other, "content": "KEEP-OTHER"}, "reason": "dup"},
        ]
        error = f"ValidationError: {DEMO_SESSION} XYZZY-ERROR"
        db.execute(
            "INSERT INTO index_runs (model, prompt_version, mode, rejected_items, error) "
            "VALUES (?, ?, ?, ?, ?)",
            ("offline", "v", "backfill", json.dumps(rejected), error),
        )
        db.execute(
            "INSERT INTO index_runs (model, prompt_version, mode, error) VALUES (?, ?, ?, ?)",
            ("offline", "v", "backfill", f"timeout on {other} KEEP-ERROR"),
        )
    runs_before = stats()["index_runs"]
    cairn_json("forget", "--project", "acme-api", "--yes")
    for phrase in (b"XYZZY-IDEA", b"XYZZY-ANSWER", b"XYZZY-ERROR"):
        assert found_in_files(home, phrase) == [], f"{phrase!r} is still on disk"
    assert found_in_files(home, b"KEEP-OTHER") and found_in_files(home, b"KEEP-ERROR")
    assert stats()["index_runs"] == runs_before, "the runs themselves (counts, costs) stay"
