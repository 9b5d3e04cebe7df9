"""The executor applying valid results: every kind of item, checked row by row in the store.

Two rounds over real captured transcripts: round 1 creates questions, a todo, a decision, spans and
entities; round 2 answers, completes, supersedes, changes topic and reuses the entities.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.batches import plan_batches
from cairn.agent.executor import ApplyStats, apply
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.store.db import Database
from cairn.store.store import Store, idea_hash
from tests.agent.executor_helpers import (
    ASSISTANT,
    COMMAND,
    META,
    SESSION_A,
    SESSION_B,
    SESSION_C,
    USER,
    Transcripts,
    capture,
    counts,
    cursors,
    file_ids,
    idea_id,
    insert,
    plan_one,
    project_with,
    round_one,
    run_record,
    stamp,
    write_round_one,
)


@pytest.fixture
def transcripts(tmp_path: Path) -> Transcripts:
    """Sessions whose project is a real directory holding the files the results' associations name."""
    project = project_with(tmp_path / "demo", "cairn/store/vectors.py", "docs/release.md")
    return Transcripts(tmp_path / "projects", cwd=project)


async def association_rows(db: Database) -> list[tuple[Any, ...]]:
    rows = await db.fetchall(
        "SELECT query, file_path, rel_path, source, reason, times_learned, hits, p.path AS project "
        "FROM search_associations AS a JOIN projects AS p ON p.id = a.project_id ORDER BY a.id"
    )
    return [tuple(r) for r in rows]


def write_round_two(t: Transcripts) -> None:
    t.add(
        SESSION_A,
        (USER, "Let's drop the SQLite blobs and keep vectors in Chroma."),
        (ASSISTANT, "Decision: vectors go to Chroma; SQLite stays the source of truth."),
        (ASSISTANT, "WAL mode is on now."),
        (USER, "Now let's talk about the release process."),
        (ASSISTANT, "Releases are cut from main by CI, never by hand."),
        (USER, "thanks"),
    )
    t.add(SESSION_B, (ASSISTANT, "Rotate it with `vault rotate api-key`."), (USER, "done"))
    t.add(SESSION_C, (COMMAND, "clear"))


async def test_round_one_creates_ideas_spans_entities_and_moves_every_cursor(
    store: Store, settings: Settings, transcripts: Transcripts
) -> None:
    write_round_one(transcripts)
    await capture(store, settings, transcripts)
    planned = await plan_one(store.db)
    assert {c.session_id for c in planned.cursors} == {SESSION_A, SESSION_B, SESSION_C}
    assert {u.session for u in planned.batch.updates} == {SESSION_A, SESSION_B}  # C is all noise

    stats = await apply(store.db, planned, IndexResult.model_validate(round_one(transcripts)), run_record())

    files = await file_ids(store.db)
    db = store.db
    assert await cursors(db) == {SESSION_A: 4, SESSION_B: 2, SESSION_C: 2}
    spans = await db.fetchall(
        "SELECT id, session_id, file_id, parent_id, name, summary, start_line, end_line, depth "
        "FROM topic_spans ORDER BY id"
    )
    # A's topic change opens its first span; B had ideas but no span: a default one named after
    # the first idea's entities, from the session's first batch line.
    assert [tuple(r)[1:] for r in spans] == [
        (SESSION_A, files[SESSION_A], None, "Vector storage", "Where vectors live", 1, None, 0),
        (SESSION_B, files[SESSION_B], None, "API key", "", 1, None, 0),
    ]
    span_a, span_b = spans[0]["id"], spans[1]["id"]
    ideas = await db.fetchall(
        "SELECT session_id, span_id, source_file_id, source_line, intent, content, content_hash, "
        "confidence, importance FROM ideas ORDER BY id"
    )
    assert [tuple(r) for r in ideas] == [
        (SESSION_A, span_a, files[SESSION_A], 1, "question",
         "Should vectors stay in SQLite or move to Postgres?",
         idea_hash("Should vectors stay in SQLite or move to Postgres?"), 0.9, 0.8),
        (SESSION_A, span_a, files[SESSION_A], 2, "decision", "Store vectors as SQLite blobs for now.",
         idea_hash("Store vectors as SQLite blobs for now."), 0.8, 0.9),
        (SESSION_A, span_a, files[SESSION_A], 3, "todo", "Turn on WAL mode before the load test.",
         idea_hash("Turn on WAL mode before the load test."), 0.7, 0.5),
        (SESSION_B, span_b, files[SESSION_B], 1, "question", "How is the API key rotated?",
         idea_hash("How is the API key rotated?"), 0.7, 0.8),
        (SESSION_B, span_b, files[SESSION_B], 2, "context", "The API key lives in the team vault.",
         idea_hash("The API key lives in the team vault."), 0.7, 0.3),
    ]  # fmt: skip
    entities = await entity_table(store)
    assert entities == {
        ("SQLite", "technology"): ["sqlite3"],
        ("Postgres", "technology"): [],
        ("WAL mode", "concept"): [],
        ("API key", "concept"): [],
        ("vault", "concept"): [],
    }
    assert await tags(store) == {
        (SESSION_A, 1): {"SQLite", "Postgres"},
        (SESSION_A, 2): {"SQLite"},
        (SESSION_A, 3): {"WAL mode"},
        (SESSION_B, 1): {"API key"},
        (SESSION_B, 2): {"vault"},
    }
    assert [tuple(r) for r in await db.fetchall("SELECT file_id, line FROM skipped_lines")] == [
        (files[SESSION_A], 4)
    ]
    root = transcripts.cwd
    vectors = f"{root}/cairn/store/vectors.py"
    assert await association_rows(db) == [
        ("where are vectors stored", vectors, "cairn/store/vectors.py", "agent", None, 1, 0, root),
    ]
    requested = await db.fetchall("SELECT path, reason, status FROM file_requests")
    assert [tuple(r) for r in requested] == [(vectors, "agent", "pending")]
    assert stats == ApplyStats(
        ideas_by_intent={"context": 1, "decision": 1, "question": 2, "todo": 1},
        relations_by_type={},
        spans_opened=2,
        entities_created=5,
        skipped_lines=1,
        search_associations=1,
        noise_skipped=2,  # session C's slash command and its output: passed over, counted
        run_id=stats.run_id,
    )
    run = await db.fetchone("SELECT * FROM index_runs WHERE id = ?", (stats.run_id,))
    assert run is not None
    assert (run["model"], run["prompt_version"], run["mode"], run["outcome"], run["error"]) == (
        "test-model",
        "index-v1",
        "continuous",
        "ok",
        None,
    )
    assert (run["input_tokens"], run["output_tokens"], run["tool_calls"], run["requests"]) == (
        1200,
        300,
        4,
        3,
    )
    assert (run["seconds"], run["messages"], run["sessions"]) == (2.5, planned.message_count, 2)
    assert run["started_at"] < run["finished_at"]
    assert json.loads(run["rejected_items"]) == []
    assert json.loads(run["applied"]) == {k: v for k, v in asdict(stats).items() if k != "run_id"}
    assert await db.fetchall("SELECT 1 FROM vector_outbox WHERE kind = 'ideas'")  # vectors will follow


async def test_round_two_answers_completes_supersedes_and_reuses(
    store: Store, settings: Settings, transcripts: Transcripts
) -> None:
    db = store.db
    write_round_one(transcripts)
    await capture(store, settings, transcripts)
    await apply(db, await plan_one(db), IndexResult.model_validate(round_one(transcripts)), run_record())
    question_a, decision_a, todo_a = [await idea_id(db, SESSION_A, line) for line in (1, 2, 3)]
    question_b, context_b = await idea_id(db, SESSION_B, 1), await idea_id(db, SESSION_B, 2)
    span_a = await db.scalar("SELECT id FROM topic_spans WHERE session_id = ?", (SESSION_A,))
    span_b = await db.scalar("SELECT id FROM topic_spans WHERE session_id = ?", (SESSION_B,))
    entity = {
        r["canonical_name"]: r["id"] for r in await db.fetchall("SELECT id, canonical_name FROM entities")
    }
    before = await entity_table(store)

    write_round_two(transcripts)
    await capture(store, settings, transcripts)
    planned = await plan_one(db)
    a, b = str(transcripts.path(SESSION_A)), str(transcripts.path(SESSION_B))
    result = IndexResult.model_validate(
        {
            "ideas": [
                {
                    "session": SESSION_A,
                    "source_file": a,
                    "source_line": 6,
                    "content": "  Vectors go to Chroma; SQLite stays the source of truth.  ",
                    "intent": "decision",
                    "confidence": 0.95,
                    "entities": [
                        {"name": "SQLite.", "type": "technology"},
                        {"name": "Chroma", "type": "technology"},
                        {"name": "SQLITE3", "type": "technology"},
                    ],
                    "related_to": [question_a],
                },
                {
                    "session": SESSION_A,
                    "source_file": a,
                    "source_line": 7,
                    "content": "WAL mode is enabled.",
                    "intent": "solution",
                    "entities": [{"name": "wal-mode", "type": "concept"}],
                },
                {
                    "session": SESSION_A,
                    "source_file": a,
                    "source_line": 9,
                    "content": "Releases are cut from main by CI, never by hand.",
                    "intent": "decision",
                    "entities": [{"name": "postgres", "type": "technology"}],
                },
                {
                    "session": SESSION_B,
                    "source_file": b,
                    "source_line": 3,
                    "content": "Rotate the API key with `vault rotate api-key`.",
                    "intent": "solution",
                },
            ],
            "topic_updates": [
                {
                    "session": SESSION_B,
                    "span_id": span_b,
                    "name": "API key rotation",
                    "summary": "Rotating the API key via the vault",
                }
            ],
            "topic_changes": [
                {
                    "session": SESSION_A,
                    "from_span_id": span_a,
                    "new_topic_name": "Release process",
                    "reason": "Moved on to releases",
                    "start_line": 8,
                }
            ],
            "answered_questions": [
                {
                    "question_idea_id": question_a,
                    "answered_at_line": 6,
                    "answer_summary": "Chroma for vectors, SQLite for truth",
                }
            ],
            "completed_todos": [{"todo_idea_id": todo_a, "completed_at_line": 7}],
            "relations": [
                {
                    "from_session": SESSION_A,
                    "from_line": 6,
                    "to_idea_id": decision_a,
                    "relation_type": "supersedes",
                },
                {
                    "from_session": SESSION_B,
                    "from_line": 3,
                    "to_idea_id": question_b,
                    "relation_type": "answers",
                },
            ],
            "entity_links": [{"idea_source_line": 3, "entity_id": entity["vault"], "entity_name": "vault"}],
            "skip_lines": [10, 4],
            "activated_ideas": [decision_a, context_b],
            "search_associations": [
                {"query": "where are vectors stored", "file_path": "cairn/store/vectors.py"},
                {"query": "  release   process ", "file_path": "docs/release.md", "reason": "release steps"},
            ],
        }
    )

    stats = await apply(db, planned, result, run_record())

    files = await file_ids(db)
    assert await cursors(db) == {SESSION_A: 10, SESSION_B: 4, SESSION_C: 3}
    new = {line: await idea_id(db, SESSION_A, line) for line in (6, 7, 9)}
    rotate = await idea_id(db, SESSION_B, 3)
    spans = await db.fetchall(
        "SELECT id, session_id, file_id, parent_id, name, summary, start_line, end_line, depth "
        "FROM topic_spans ORDER BY id"
    )
    span_release = spans[2]["id"]
    assert [tuple(r) for r in spans] == [
        (span_a, SESSION_A, files[SESSION_A], None, "Vector storage", "Where vectors live", 1, 7, 0),
        (span_b, SESSION_B, files[SESSION_B], None, "API key rotation", "Rotating the API key via the vault",
         1, None, 0),
        (span_release, SESSION_A, files[SESSION_A], None, "Release process", "Moved on to releases",
         8, None, 0),
    ]  # fmt: skip
    rows = await db.fetchall(
        "SELECT id, span_id, intent, content, answered_by, answered_at, completed_at, resolved_line, "
        "resolution, superseded_by, valid_until, usage_count, last_used_at IS NOT NULL AS used "
        "FROM ideas ORDER BY id"
    )
    got = {r["id"]: tuple(r)[1:] for r in rows}
    content_6 = "Vectors go to Chroma; SQLite stays the source of truth."
    content_7 = "WAL mode is enabled."
    content_rotate = "Rotate the API key with `vault rotate api-key`."
    assert got == {
        question_a: (span_a, "question", "Should vectors stay in SQLite or move to Postgres?", new[6],
                     stamp(SESSION_A, 6), None, 6, "Chroma for vectors, SQLite for truth", None, None, 0, 0),
        decision_a: (span_a, "decision", "Store vectors as SQLite blobs for now.", None, None, None, None,
                     None, new[6], stamp(SESSION_A, 6), 1, 1),
        todo_a: (span_a, "todo", "Turn on WAL mode before the load test.", None, None, stamp(SESSION_A, 7), 7,
                 content_7, None, None, 0, 0),
        question_b: (span_b, "question", "How is the API key rotated?", rotate, stamp(SESSION_B, 3), None, 3,
                     content_rotate, None, None, 0, 0),
        context_b: (span_b, "context", "The API key lives in the team vault.", None, None, None, None, None,
                    None, None, 1, 1),
        new[6]: (span_a, "decision", content_6, None, None, None, None, None, None, None, 0, 0),
        new[7]: (span_a, "solution", content_7, None, None, None, None, None, None, None, 0, 0),
        new[9]: (span_release, "decision", "Releases are cut from main by CI, never by hand.", None, None,
                 None, None, None, None, None, 0, 0),
        rotate: (span_b, "solution", content_rotate, None, None, None, None, None, None, None, 0, 0),
    }  # fmt: skip
    relations = await db.fetchall("SELECT from_idea_id, to_idea_id, relation_type FROM relations")
    assert {tuple(r) for r in relations} == {
        (new[6], question_a, "relates_to"),
        (new[6], decision_a, "supersedes"),
        (rotate, question_b, "answers"),
    }
    # SQLite. and SQLITE3 reuse SQLite (by key and by alias), wal-mode reuses WAL mode, postgres reuses
    # Postgres; nothing adds an alias that normalises to a key the entity already has.
    assert await entity_table(store) == {**before, ("Chroma", "technology"): []}
    assert (await tags(store))[(SESSION_A, 6)] == {"SQLite", "Chroma"}
    assert (await tags(store))[(SESSION_A, 7)] == {"WAL mode"}
    assert (await tags(store))[(SESSION_A, 9)] == {"Postgres"}
    assert (await tags(store))[(SESSION_B, 3)] == {"vault"}  # from entity_links
    skipped = await db.fetchall("SELECT file_id, line, run_id FROM skipped_lines ORDER BY file_id, line")
    assert [tuple(r) for r in skipped][1:] == [
        (files[SESSION_A], 10, stats.run_id),
        (files[SESSION_B], 4, stats.run_id),
    ]
    root = transcripts.cwd
    vectors, release = f"{root}/cairn/store/vectors.py", f"{root}/docs/release.md"
    assert await association_rows(db) == [  # the repeated association merged: learned twice, never used
        ("where are vectors stored", vectors, "cairn/store/vectors.py", "agent", None, 2, 0, root),
        ("release process", release, "docs/release.md", "agent", "release steps", 1, 0, root),
    ]
    assert stats == ApplyStats(
        ideas_by_intent={"decision": 2, "solution": 2},
        relations_by_type={"answers": 1, "relates_to": 1, "supersedes": 1},
        questions_answered=2,
        todos_completed=1,
        spans_opened=1,
        spans_updated=1,
        entities_created=1,
        entities_reused=4,
        activated=2,
        skipped_lines=2,
        search_associations=2,
        rejected=0,
        noise_skipped=1,  # session C's /clear
        run_id=stats.run_id,
    )
    assert (await counts(db))["index_runs"] == 2


async def test_ideas_before_the_first_topic_change_get_a_default_span(
    store: Store, settings: Settings, transcripts: Transcripts
) -> None:
    transcripts.add(
        SESSION_A,
        (USER, "Let's pick a queue."),
        (ASSISTANT, "Decision: use the SQLite work queue."),
        (USER, "Switching to docs now."),
        (ASSISTANT, "The README needs an install section."),
    )
    await capture(store, settings, transcripts)
    a = str(transcripts.path(SESSION_A))
    result = IndexResult.model_validate(
        {
            "ideas": [
                {"session": SESSION_A, "source_file": a, "source_line": 2, "intent": "decision",
                 "content": "Use the SQLite work queue.", "entities": []},
                {"session": SESSION_A, "source_file": a, "source_line": 4, "intent": "todo",
                 "content": "Add an install section to the README."},
            ],
            "topic_changes": [{"session": SESSION_A, "new_topic_name": "Docs", "start_line": 3}],
        }
    )  # fmt: skip
    await apply(store.db, await plan_one(store.db), result, run_record())
    spans = await store.db.fetchall("SELECT id, name, start_line, end_line FROM topic_spans ORDER BY id")
    assert [tuple(r)[1:] for r in spans] == [("Session start", 1, 2), ("Docs", 3, None)]
    ideas = await store.db.fetchall("SELECT source_line, span_id FROM ideas ORDER BY source_line")
    assert [tuple(r) for r in ideas] == [(2, spans[0]["id"]), (4, spans[1]["id"])]


async def test_an_all_noise_batch_moves_its_cursor_and_records_the_run(
    store: Store, settings: Settings, transcripts: Transcripts
) -> None:
    transcripts.add(SESSION_C, (COMMAND, "cost"), (META, "Total cost: $0.42"), (COMMAND, "clear"))
    await capture(store, settings, transcripts)
    planned = await plan_one(store.db)
    assert planned.message_count == 0 and planned.batch.updates == []

    stats = await apply(store.db, planned, IndexResult(), run_record())

    assert await cursors(store.db) == {SESSION_C: 3}
    run = await store.db.fetchone(
        "SELECT messages, sessions, applied FROM index_runs WHERE id = ?", (stats.run_id,)
    )
    assert run is not None and (run["messages"], run["sessions"]) == (0, 0)
    applied = json.loads(run["applied"])
    assert (applied["rejected"], applied["noise_skipped"], applied["context_messages"]) == (0, 3, 0)
    assert await plan_batches(store.db) == []


async def entity_table(store: Store) -> dict[tuple[str, str], list[str]]:
    """(canonical name, type) → sorted aliases, for every entity."""
    rows = await store.db.fetchall(
        "SELECT e.canonical_name, e.type, a.alias FROM entities e "
        "LEFT JOIN entity_aliases a ON a.entity_id = e.id"
    )
    table: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        aliases = table.setdefault((row["canonical_name"], row["type"]), [])
        if row["alias"] is not None:
            aliases.append(row["alias"])
    return {key: sorted(value) for key, value in table.items()}


async def tags(store: Store) -> dict[tuple[str, int], set[str]]:
    """Entity names per idea, keyed by the idea's (session, line)."""
    rows = await store.db.fetchall(
        "SELECT i.session_id, i.source_line, e.canonical_name FROM idea_entities ie "
        "JOIN ideas i ON i.id = ie.idea_id JOIN entities e ON e.id = ie.entity_id"
    )
    found: dict[tuple[str, int], set[str]] = {}
    for row in rows:
        found.setdefault((row["session_id"], row["source_line"]), set()).add(row["canonical_name"])
    return found


async def test_an_idea_superseded_twice_keeps_its_first_successor(
    store: Store, settings: Settings, transcripts: Transcripts
) -> None:
    db = store.db
    write_round_one(transcripts)
    await capture(store, settings, transcripts)
    await apply(db, await plan_one(db), IndexResult.model_validate(round_one(transcripts)), run_record())
    old = await idea_id(db, SESSION_A, 2)
    write_round_two(transcripts)
    await capture(store, settings, transcripts)
    a = str(transcripts.path(SESSION_A))
    result = IndexResult.model_validate(
        {
            "ideas": [
                {"session": SESSION_A, "source_file": a, "source_line": line, "intent": "decision",
                 "content": content}
                for line, content in ((6, "Vectors go to Chroma."), (9, "Vectors go to LanceDB."))
            ],
            "relations": [
                {"from_session": SESSION_A, "from_line": n, "to_idea_id": old, "relation_type": "supersedes"}
                for n in (6, 9)
            ],
        }
    )  # fmt: skip

    stats = await apply(db, await plan_one(db), result, run_record())

    first = await idea_id(db, SESSION_A, 6)
    row = await db.fetchone("SELECT superseded_by, valid_until FROM ideas WHERE id = ?", (old,))
    assert row is not None and tuple(row) == (first, stamp(SESSION_A, 6))
    assert stats.relations_by_type == {"supersedes": 2}


async def test_a_topic_change_opens_a_sibling_of_the_span_it_closes(
    store: Store, settings: Settings, transcripts: Transcripts
) -> None:
    transcripts.add(SESSION_A, (USER, "Next: the CLI."), (ASSISTANT, "The CLI gets a --json flag."))
    await capture(store, settings, transcripts)
    db = store.db
    project = await insert(
        db,
        "INSERT INTO topic_spans (session_id, name, start_line, depth) VALUES (?, 'cairn', 0, 0)",
        (SESSION_A,),
    )
    storage = await insert(
        db,
        "INSERT INTO topic_spans (session_id, parent_id, name, start_line, end_line, depth) "
        "VALUES (?, ?, 'Storage', 0, 0, 1)",
        (SESSION_A, project),
    )
    search = await insert(
        db,
        "INSERT INTO topic_spans (session_id, parent_id, name, start_line, depth) "
        "VALUES (?, ?, 'Search', 0, 1)",
        (SESSION_A, project),
    )
    assert storage < search
    change = {"session": SESSION_A, "from_span_id": search, "new_topic_name": "CLI", "start_line": 1}
    stats = await apply(
        db, await plan_one(db), IndexResult.model_validate({"topic_changes": [change]}), run_record()
    )
    assert stats.spans_opened == 1
    spans = await db.fetchall("SELECT id, parent_id, name, start_line, end_line, depth FROM topic_spans")
    assert {r["name"]: tuple(r)[1:] for r in spans} == {
        "cairn": (None, "cairn", 0, None, 0),
        "Storage": (project, "Storage", 0, 0, 1),
        "Search": (project, "Search", 0, 0, 1),  # closed at max(start_line - 1, its start)
        "CLI": (project, "CLI", 1, None, 1),
    }


async def test_search_associations_outside_the_project_or_to_missing_files_are_not_stored(
    store: Store, settings: Settings, transcripts: Transcripts, tmp_path: Path
) -> None:
    transcripts.add(SESSION_A, (USER, "Where do vectors live?"), (ASSISTANT, "In cairn/store/vectors.py."))
    await capture(store, settings, transcripts)
    (tmp_path / "elsewhere.py").write_text("x = 1\n")
    (Path(transcripts.cwd) / "escape.py").symlink_to(tmp_path / "elsewhere.py")
    wanted = [
        {"query": "vector store", "file_path": str(Path(transcripts.cwd) / "cairn/store/vectors.py")},
        {"query": "outside", "file_path": "../elsewhere.py"},
        {"query": "through a symlink", "file_path": "escape.py"},
        {"query": "gone", "file_path": "cairn/store/missing.py"},
    ]
    result = IndexResult.model_validate({"search_associations": wanted})

    stats = await apply(store.db, await plan_one(store.db), result, run_record())

    assert (stats.search_associations, stats.search_associations_rejected, stats.rejected) == (1, 3, 0)
    assert [row[0] for row in await association_rows(store.db)] == ["vector store"]
    applied = await store.db.scalar("SELECT applied FROM index_runs WHERE id = ?", (stats.run_id,))
    assert json.loads(applied)["search_associations_rejected"] == 3
