"""The executor's checks: every kind of invalid item is rejected, counted, recorded — and not written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.batches import PlannedBatch
from cairn.agent.executor import apply, validate
from cairn.agent.schema import IndexResult, Relation
from cairn.config import Settings
from cairn.store.store import Store, idea_hash
from tests.agent.executor_helpers import (
    ASSISTANT,
    COMMAND,
    SESSION_A,
    SESSION_B,
    SESSION_C,
    USER,
    Transcripts,
    capture,
    counts,
    cursors,
    file_ids,
    insert,
    plan_one,
    project_with,
    run_record,
    stamp,
)

IDEA = "INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash"


@pytest.fixture
async def world(store: Store, settings: Settings, tmp_path: Path) -> dict[str, Any]:
    """Sessions A (lines 1-4) and B (1-3) to index, noise-only C, and stored memory to refer to.

    The stored questions and todos belong to C, which has no messages in the batch, so their lines
    resolve to whichever batch session has them (lines 1-3 are in both A and B: ambiguous).
    """
    t = Transcripts(tmp_path / "projects", cwd=project_with(tmp_path / "orders", "db/schema.sql"))
    t.add(
        SESSION_A,
        (USER, "Which database for the orders service?"),
        (ASSISTANT, "Use SQLite."),
        (ASSISTANT, "We should add an index on orders.created_at."),
        (USER, "ok"),
    )
    t.add(SESSION_B, (USER, "When do we deploy?"), (ASSISTANT, "Deploy on Fridays."), (ASSISTANT, "Fine."))
    t.add(SESSION_C, (COMMAND, "cost"))
    await capture(store, settings, t)
    db = store.db
    files = await file_ids(db)

    async def idea(session: str, intent: str, content: str, extra: str = "") -> int:
        columns, values = (", " + extra.split("=")[0], ", " + extra.split("=")[1]) if extra else ("", "")
        return await insert(
            db,
            f"INSERT INTO ideas (session_id, intent, content, content_hash{columns}) "
            f"VALUES (?, ?, ?, ?{values})",
            (session, intent, content, idea_hash(content)),
        )

    world = {
        "t": t,
        "files": files,
        "span_b": await insert(
            db,
            "INSERT INTO topic_spans (session_id, name, start_line) VALUES (?, 'Deploys', 1)",
            (SESSION_B,),
        ),
        "span_c": await insert(
            db, "INSERT INTO topic_spans (session_id, name, start_line) VALUES (?, 'Costs', 1)", (SESSION_C,)
        ),
        "q_open": await idea(SESSION_C, "question", "Is the cache warm?"),
        "q_ambiguous": await idea(SESSION_C, "question", "Which port?"),
        "q_done": await idea(SESSION_C, "question", "Is CI green?", "answered_at='2026-01-01T00:00:00.000Z'"),
        "q_a": await idea(SESSION_A, "problem", "Orders are slow."),
        "todo_open": await idea(SESSION_C, "todo", "Write the runbook."),
        "todo_done": await idea(SESSION_C, "todo", "Rotate logs.", "completed_at='2026-01-01T00:00:00.000Z'"),
        "decision": await idea(SESSION_C, "decision", "Orders use UUID keys."),
        "stored_dup": await insert(
            db,
            IDEA + ") VALUES (?, ?, 2, 'decision', 'Use SQLite.', ?)",
            (SESSION_A, files[SESSION_A], idea_hash("Use SQLite.")),
        ),
        "sqlite": await insert(
            db, "INSERT INTO entities (canonical_name, type) VALUES ('SQLite', 'technology')"
        ),
    }
    return world


def idea(world: dict[str, Any], session: str, line: int, content: str, **extra: Any) -> dict[str, Any]:
    path = world["t"].path(session) if session in (SESSION_A, SESSION_B) else "/nowhere.jsonl"
    values = {"session": session, "source_file": str(path), "source_line": line, "content": content}
    return {"intent": "context", **values, **extra}


def mixed_result(w: dict[str, Any]) -> tuple[IndexResult, list[tuple[str, str]]]:
    """A result with valid items and every kind of invalid one; the expected (field, reason) of each."""
    add_index = idea(
        w,
        SESSION_A,
        3,
        "Add an index on orders.created_at.",
        intent="todo",
        related_to=[w["decision"], 9999],
        entities=[{"name": "sqlite", "type": "technology"}, {"name": "...", "type": "concept"}],
    )
    relation = {
        "from_session": SESSION_A,
        "from_line": 3,
        "to_idea_id": w["decision"],
        "relation_type": "builds_on",
    }
    valid_link = {"idea_source_line": 2, "entity_id": w["sqlite"]}
    result = IndexResult.model_validate(
        {
            "ideas": [
                add_index,
                idea(w, SESSION_B, 2, "Deploys happen on Fridays.", intent="decision"),
                idea(w, SESSION_B, 3, "The deploy discussion is wrapped up."),
                idea(w, "nope", 1, "Unknown session."),
                {**idea(w, SESSION_A, 1, "Wrong file."), "source_file": "/elsewhere/x.jsonl"},
                idea(w, SESSION_A, 5, "Line after the batch."),
                idea(w, SESSION_A, 1, "   "),
                idea(w, SESSION_A, 1, "A guess.", confidence=0.2),
                idea(w, SESSION_A, 2, "use   SQLite."),
                {**add_index, "related_to": []},
            ],
            "relations": [
                relation,
                {**relation, "to_idea_id": 9999},
                {**relation, "from_line": 1},
                {**relation, "from_line": 2, "to_idea_id": w["stored_dup"]},
                relation,
            ],
            "answered_questions": [
                {"question_idea_id": w["q_open"], "answered_at_line": 4, "answer_summary": "yes"},
                {"question_idea_id": 9999, "answered_at_line": 4},
                {"question_idea_id": w["decision"], "answered_at_line": 4},
                {"question_idea_id": w["q_done"], "answered_at_line": 4},
                {"question_idea_id": w["q_ambiguous"], "answered_at_line": 2},
                {"question_idea_id": w["q_open"], "answered_at_line": 4},
                {"question_idea_id": w["q_a"], "answered_at_line": 99},
            ],
            "completed_todos": [
                {"todo_idea_id": w["todo_open"], "completed_at_line": 4},
                {"todo_idea_id": w["todo_done"], "completed_at_line": 4},
                {"todo_idea_id": w["q_open"], "completed_at_line": 4},
            ],
            "topic_updates": [
                {"session": SESSION_B, "span_id": w["span_b"], "name": " Deploy schedule "},
                {"session": SESSION_B, "span_id": 9999, "name": "x"},
                {"session": SESSION_A, "span_id": w["span_c"], "name": "x"},
                {"session": SESSION_B, "span_id": w["span_b"], "name": "  "},
                {"session": SESSION_B, "span_id": w["span_b"], "summary": "again"},
            ],
            "topic_changes": [
                {"session": SESSION_B, "from_span_id": w["span_b"], "new_topic_name": "Wrap-up",
                 "start_line": 3},
                {"session": "nope", "new_topic_name": "x", "start_line": 1},
                {"session": SESSION_A, "new_topic_name": "x", "start_line": 7},
                {"session": SESSION_A, "new_topic_name": "  ", "start_line": 2},
                {"session": SESSION_A, "from_span_id": w["span_b"], "new_topic_name": "x", "start_line": 2},
                {"session": SESSION_B, "new_topic_name": "Again", "start_line": 3},
            ],
            "entity_links": [
                valid_link,
                {**valid_link, "entity_id": 9999},
                {**valid_link, "idea_source_line": 1},
                valid_link,
            ],
            "skip_lines": [1, 99, 1, 3],
            "activated_ideas": [w["decision"], 9999, w["decision"]],
            "search_associations": [
                {"query": "orders index", "file_path": "db/schema.sql"},
                {"query": "   ", "file_path": "db/schema.sql"},
                {"query": "orders index", "file_path": "  "},
                {"query": " orders  index ", "file_path": "db/schema.sql"},
            ],
        }
    )  # fmt: skip
    result.relations.append(
        Relation.model_construct(
            from_session=SESSION_A, from_line=3, to_idea_id=w["decision"], relation_type="causes"
        )
    )
    expected = [
        ("ideas.related_to", "no idea #9999"),
        ("ideas.entities", "no letters or digits"),
        ("ideas", "session 'nope' is not in this batch"),
        ("ideas", "'/elsewhere/x.jsonl' is not a transcript of this session"),
        ("ideas", "line 5 is not a message line"),
        ("ideas", "content is empty"),
        ("ideas", "confidence 0.2 is below 0.3"),
        ("ideas", f"already stored as idea #{w['stored_dup']}"),
        ("ideas", "duplicate of an earlier idea"),
        ("relations", "no idea #9999"),
        ("relations", "no new idea of this result"),
        ("relations", "self-relation"),
        ("relations", "duplicate relation"),
        ("relations", "unknown relation type 'causes'"),
        ("answered_questions", "no idea #9999"),
        ("answered_questions", "is a decision, not a question or problem"),
        ("answered_questions", "already answered"),
        ("answered_questions", "line 2 is in several sessions"),
        ("answered_questions", "answered twice"),
        ("answered_questions", "line 99 is not a message line of the idea's session"),
        ("completed_todos", "already completed"),
        ("completed_todos", "is a question, not a todo"),
        ("topic_updates", "no span #9999"),
        ("topic_updates", "belongs to another session"),
        ("topic_updates", "nothing to update"),
        ("topic_updates", "updated twice"),
        ("topic_changes", "session 'nope' is not in this batch"),
        ("topic_changes", "start_line 7 is not a message line"),
        ("topic_changes", "blank"),
        ("topic_changes", "is not the session's open span (none)"),
        ("topic_changes", "already in this result"),
        ("entity_links", "no entity #9999"),
        ("entity_links", "no new idea of this result at line 1"),
        ("entity_links", "duplicate"),
        ("skip_lines", "line 99 is not a message line"),
        ("skip_lines", "duplicate"),
        ("skip_lines", "extracts an idea at line 3"),
        ("activated_ideas", "no idea #9999"),
        ("activated_ideas", "duplicate"),
        ("search_associations", "must not be blank"),
        ("search_associations", "must not be blank"),
        ("search_associations", "duplicate"),
    ]
    return result, expected


async def test_every_invalid_item_is_rejected_recorded_and_not_written(
    store: Store, world: dict[str, Any]
) -> None:
    db, w = store.db, world
    planned = await plan_one(db)
    result, expected = mixed_result(w)
    before = await counts(db)

    cleaned, rejected = await validate(db, planned, result)
    assert [(r.field, r.reason) for r in rejected] == [
        (name, next((r.reason for r in rejected if r.field == name and reason in r.reason), reason))
        for name, reason in expected
    ]
    assert await counts(db) == before  # validate only reads
    assert (await validate(db, planned, cleaned))[1] == []  # the accepted part passes as it is

    stats = await apply(db, planned, result, run_record())

    assert stats.rejected == len(expected)
    stored = await db.scalar("SELECT rejected_items FROM index_runs WHERE id = ?", (stats.run_id,))
    assert json.loads(stored) == [r.model_dump(mode="json") for r in rejected]
    after = await counts(db)
    assert after["ideas"] - before["ideas"] == 3
    new = {
        (r["session_id"], r["source_line"]): r["id"]
        for r in await db.fetchall(
            "SELECT id, session_id, source_line FROM ideas WHERE id > ?", (w["sqlite"],)
        )
    }
    relations = await db.fetchall("SELECT from_idea_id, to_idea_id, relation_type FROM relations")
    assert {tuple(r) for r in relations} == {
        (new[(SESSION_A, 3)], w["decision"], "builds_on"),
        (new[(SESSION_A, 3)], w["decision"], "relates_to"),
    }
    resolved = await db.fetchall(
        "SELECT id, answered_at, completed_at, resolved_line, resolution FROM ideas "
        "WHERE id IN (?, ?, ?, ?, ?)",
        (w["q_open"], w["q_ambiguous"], w["q_a"], w["todo_open"], w["decision"]),
    )
    assert {r["id"]: tuple(r)[1:] for r in resolved} == {
        w["q_open"]: (stamp(SESSION_A, 4), None, 4, "yes"),
        w["q_ambiguous"]: (None, None, None, None),
        w["q_a"]: (None, None, None, None),
        w["todo_open"]: (None, stamp(SESSION_A, 4), 4, None),
        w["decision"]: (None, None, None, None),
    }
    spans = await db.fetchall(
        "SELECT id, session_id, name, start_line, end_line FROM topic_spans ORDER BY id"
    )
    assert [tuple(r)[1:] for r in spans] == [
        (SESSION_B, "Deploy schedule", 1, 2),
        (SESSION_C, "Costs", 1, None),
        (SESSION_B, "Wrap-up", 3, None),
        (SESSION_A, "sqlite", 1, None),  # the default span of A, named after its first idea's entity
    ]
    assert after["entities"] == before["entities"]  # "sqlite" reused SQLite, "..." created nothing
    links = await db.fetchall("SELECT idea_id, entity_id FROM idea_entities")
    assert {tuple(r) for r in links} == {
        (new[(SESSION_A, 3)], w["sqlite"]),
        (new[(SESSION_B, 2)], w["sqlite"]),
    }
    skipped = await db.fetchall("SELECT file_id, line FROM skipped_lines")
    assert {tuple(r) for r in skipped} == {(w["files"][SESSION_A], 1), (w["files"][SESSION_B], 1)}
    assert await db.scalar("SELECT usage_count FROM ideas WHERE id = ?", (w["decision"],)) == 1
    associations = await db.fetchall("SELECT query, rel_path, times_learned, hits FROM search_associations")
    assert [tuple(r) for r in associations] == [("orders index", "db/schema.sql", 1, 0)]
    assert await cursors(db) == {SESSION_A: 4, SESSION_B: 3, SESSION_C: 1}


async def test_source_file_by_basename_must_be_unambiguous(store: Store, world: dict[str, Any]) -> None:
    planned = await plan_one(store.db)
    a_name = world["t"].path(SESSION_A).name
    result = IndexResult.model_validate(
        {"ideas": [idea(world, SESSION_A, 3, "By basename.") | {"source_file": a_name}]}
    )
    cleaned, rejected = await validate(store.db, planned, result)
    assert rejected == [] and cleaned.ideas[0].content == "By basename."

    # Two files of one session with the same basename (a main transcript and a copy elsewhere).
    twin = planned.batch.updates[0].model_copy(update={"file_path": "/other/" + a_name})
    cursor = planned.cursors[0]
    doubled = PlannedBatch(
        planned.batch.model_copy(update={"updates": [*planned.batch.updates, twin]}),
        [*planned.cursors, type(cursor)(cursor.file_id + 100, twin.file_path, SESSION_A, 0, 4)],
    )
    _cleaned, rejected = await validate(store.db, doubled, result)
    assert [r.reason for r in rejected] == [
        f"source_file {a_name!r} is not a transcript of this session in the batch"
    ]


async def test_a_relation_or_link_to_a_rejected_idea_is_rejected_too(
    store: Store, world: dict[str, Any]
) -> None:
    planned = await plan_one(store.db)
    result = IndexResult.model_validate(
        {
            "ideas": [idea(world, SESSION_A, 3, "Too unsure.", confidence=0.1)],
            "relations": [
                {
                    "from_session": SESSION_A,
                    "from_line": 3,
                    "to_idea_id": world["decision"],
                    "relation_type": "answers",
                }
            ],
            "entity_links": [{"idea_source_line": 3, "entity_id": world["sqlite"]}],
        }
    )
    before = await counts(store.db)
    stats = await apply(store.db, planned, result, run_record())
    assert stats.rejected == 3
    after = await counts(store.db)
    assert {k: after[k] - before[k] for k in after} == {k: int(k == "index_runs") for k in after}
