"""Links inside a batch (issue 15, part 2): a result names its own new ideas by key.

One session, captured from a real-format transcript, holds a question and its answer, a todo and its
completion, and a guess replaced by the fix that held. The result links them by keys; the executor
stores the ideas and then the links in one transaction, once, and rejects (and counts) every
reference that resolves nowhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.agent import executor
from cairn.agent.batches import PlannedBatch
from cairn.agent.executor import StaleBatchError, apply, validate
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.store.store import Store, idea_hash
from tests.agent.executor_helpers import (
    ASSISTANT,
    SESSION_A,
    USER,
    Transcripts,
    capture,
    counts,
    cursors,
    file_ids,
    idea_id,
    insert,
    plan_one,
    run_record,
    stamp,
)

LINES = (
    (USER, "Should the orders API paginate with cursors or with offsets?"),
    (ASSISTANT, "Use keyset pagination on (created_at, id): offsets skip rows under concurrent inserts."),
    (ASSISTANT, "TODO: add a composite index on orders (created_at, id)."),
    (ASSISTANT, "Added the index in migration 0012, so that todo is done."),
    (ASSISTANT, "My guess: the slow export comes from the ORM's N+1 queries."),
    (ASSISTANT, "Found it: a missing index on orders.customer_id; adding it fixed the export."),
)


@pytest.fixture
async def planned(store: Store, settings: Settings, tmp_path: Path) -> PlannedBatch:
    t = Transcripts(tmp_path / "projects")
    t.add(SESSION_A, *LINES)
    await capture(store, settings, t)
    return await plan_one(store.db)


def _idea(planned: PlannedBatch, line: int, intent: str, key: str | None, **extra: Any) -> dict[str, Any]:
    content = LINES[line - 1][1]
    idea = {
        "session": SESSION_A,
        "source_file": planned.batch.updates[0].file_path,
        "source_line": line,
        "content": content,
        "intent": intent,
        "confidence": 0.9,
        **extra,
    }
    return idea if key is None else {**idea, "key": key}


def linked(planned: PlannedBatch) -> dict[str, Any]:
    """Every kind of in-batch link: answer, completion, supersedes, and a relation by line and key."""
    return {
        "ideas": [
            _idea(planned, 1, "question", "q1"),
            _idea(planned, 2, "decision", "d1"),
            _idea(planned, 3, "todo", "t1", related_to=["d1"]),
            _idea(planned, 4, "context", None),
            _idea(planned, 5, "conclusion", "g1", confidence=0.5),
            _idea(planned, 6, "solution", "f1"),
        ],
        "answered_questions": [{"question_idea_id": "q1", "answered_at_line": 2}],
        "completed_todos": [{"todo_idea_id": "t1", "completed_at_line": 4}],
        "relations": [
            {"from_key": "f1", "to_idea_id": "g1", "relation_type": "supersedes"},
            {"from_session": SESSION_A, "from_line": 2, "to_idea_id": "q1", "relation_type": "answers"},
        ],
    }


async def test_answers_completions_and_supersedes_by_key_apply_once(
    store: Store, planned: PlannedBatch
) -> None:
    db = store.db
    stats = await apply(db, planned, IndexResult.model_validate(linked(planned)), run_record())

    assert stats.rejected == 0
    assert (stats.questions_answered, stats.todos_completed) == (1, 1)
    assert stats.relations_by_type == {"answers": 1, "relates_to": 1, "supersedes": 1}
    ids = {line: await idea_id(db, SESSION_A, line) for line in range(1, 7)}
    question = await db.fetchone("SELECT * FROM ideas WHERE id = ?", (ids[1],))
    assert question is not None
    assert (question["answered_by"], question["answered_at"], question["resolved_line"]) == (
        ids[2],
        stamp(SESSION_A, 2),
        2,
    )
    assert question["resolution"] == LINES[1][1]  # no summary: the answering idea's content
    todo = await db.fetchone("SELECT completed_at, resolved_line FROM ideas WHERE id = ?", (ids[3],))
    assert todo is not None and tuple(todo) == (stamp(SESSION_A, 4), 4)
    guess = await db.fetchone("SELECT superseded_by, valid_until FROM ideas WHERE id = ?", (ids[5],))
    assert guess is not None and tuple(guess) == (ids[6], stamp(SESSION_A, 6))
    relations = await db.fetchall("SELECT from_idea_id, to_idea_id, relation_type FROM relations ORDER BY id")
    assert [tuple(r) for r in relations] == [
        (ids[3], ids[2], "relates_to"),
        (ids[6], ids[5], "supersedes"),
        (ids[2], ids[1], "answers"),
    ]

    written = await counts(db)
    with pytest.raises(StaleBatchError):
        await apply(db, planned, IndexResult.model_validate(linked(planned)), run_record())
    assert await counts(db) == written
    assert await cursors(db) == {SESSION_A: 6}


@pytest.mark.parametrize("step", ["_resolve", "_relations"])
async def test_a_crash_while_linking_leaves_nothing_half_applied(
    store: Store, planned: PlannedBatch, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    db = store.db
    before = await counts(db)
    seen: list[int] = []

    async def crash(self: Any, *_args: Any, **_kwargs: Any) -> None:
        async with self.conn.execute("SELECT count(*) FROM ideas") as cursor:
            row = await cursor.fetchone()
        seen.append(row[0])
        raise RuntimeError("killed mid-apply")

    monkeypatch.setattr(executor._Writer, step, crash)
    with pytest.raises(RuntimeError, match="killed mid-apply"):
        await apply(db, planned, IndexResult.model_validate(linked(planned)), run_record())
    assert seen == [6]  # the ideas were in, the links not yet: the rollback takes both
    assert await counts(db) == before
    assert await cursors(db) == {SESSION_A: 0}

    monkeypatch.undo()
    replanned = await plan_one(db)
    stats = await apply(db, replanned, IndexResult.model_validate(linked(planned)), run_record())
    assert (stats.questions_answered, stats.todos_completed, stats.rejected) == (1, 1, 0)


async def test_references_that_resolve_nowhere_are_rejected_and_counted(
    store: Store, planned: PlannedBatch
) -> None:
    db = store.db
    result = {
        "ideas": [
            _idea(planned, 1, "question", "q1"),
            _idea(planned, 2, "decision", "dup"),
            _idea(planned, 3, "todo", "dup"),
            _idea(planned, 4, "context", "low", confidence=0.1),
            _idea(planned, 5, "conclusion", "g1", related_to=["g1", "nope"]),
            _idea(planned, 6, "solution", "f1"),
        ],
        "answered_questions": [
            {"question_idea_id": "q9", "answered_at_line": 2},
            {"question_idea_id": "q1", "answered_at_line": 1},
        ],
        "completed_todos": [
            {"todo_idea_id": "dup", "completed_at_line": 4},
            {"todo_idea_id": "f1", "completed_at_line": 6},
        ],
        "relations": [
            {"from_key": "f1", "to_idea_id": "low", "relation_type": "builds_on"},
            {"from_key": "f1", "to_idea_id": "f1", "relation_type": "relates_to"},
            {"from_key": "f1", "to_idea_id": "g1", "relation_type": "supersedes"},
            {"from_key": "g1", "to_idea_id": "f1", "relation_type": "supersedes"},
            {"from_key": "zz", "to_idea_id": "q1", "relation_type": "relates_to"},
            {"to_idea_id": "q1", "relation_type": "relates_to"},
        ],
    }
    stats = await apply(db, planned, IndexResult.model_validate(result), run_record())

    row = await db.fetchone("SELECT rejected_items FROM index_runs WHERE id = ?", (stats.run_id,))
    assert row is not None
    rejected = [(r["field"], r["reason"]) for r in json.loads(row["rejected_items"])]
    assert rejected == [
        ("ideas.key", "key 'dup' is given to several ideas of this result (lines 2, 3)"),
        ("ideas.key", "key 'dup' is given to several ideas of this result (lines 2, 3)"),
        ("ideas", "confidence 0.1 is below 0.3"),
        ("ideas.related_to", "an idea cannot relate to itself"),
        ("ideas.related_to", "no idea of this result has key 'nope'"),
        ("relations", "key 'low' names an idea that was rejected: confidence 0.1 is below 0.3"),
        ("relations", "self-relation: the target is the idea it starts from"),
        ("relations", "supersedes would close a cycle: the target already supersedes this idea"),
        ("relations", "no idea of this result has key 'zz'"),
        ("relations", "a relation starts at from_key, or at from_session and from_line"),
        ("answered_questions", "no idea of this result has key 'q9'"),
        ("answered_questions", "idea 'q1' is answered at its own line 1, where no other new idea says how"),
        ("completed_todos", "key 'dup' is given to several ideas of this result (lines 2, 3)"),
        ("completed_todos", "idea 'f1' is a solution, not a todo"),
    ]
    assert stats.rejected == len(rejected)
    assert (stats.questions_answered, stats.todos_completed) == (0, 0)
    assert stats.relations_by_type == {"supersedes": 1}
    assert sum(stats.ideas_by_intent.values()) == 5  # ambiguous keys cost the ideas nothing
    unresolved = await db.scalar(
        "SELECT count(*) FROM ideas WHERE answered_at IS NOT NULL OR completed_at IS NOT NULL"
    )
    assert unresolved == 0


async def test_the_accepted_part_checks_clean_and_keeps_its_keys(store: Store, planned: PlannedBatch) -> None:
    result = IndexResult.model_validate(linked(planned))
    cleaned, rejected = await validate(store.db, planned, result)
    assert rejected == []
    assert [i.key for i in cleaned.ideas] == ["q1", "d1", "t1", None, "g1", "f1"]
    assert cleaned.answered_questions[0].question_idea_id == "q1"
    again, rejected_again = await validate(store.db, planned, cleaned)
    assert (again, rejected_again) == (cleaned, [])


async def test_a_key_of_an_idea_stored_already_names_the_stored_copy(
    store: Store, planned: PlannedBatch
) -> None:
    db = store.db
    question = LINES[0][1]
    stored = await insert(
        db,
        "INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash) "
        "VALUES (?, ?, 1, 'question', ?, ?)",
        (SESSION_A, (await file_ids(db))[SESSION_A], question, idea_hash(question)),
    )
    result = {
        "ideas": [_idea(planned, 1, "question", "q1"), _idea(planned, 2, "decision", "d1")],
        "answered_questions": [{"question_idea_id": "q1", "answered_at_line": 2}],
    }
    stats = await apply(db, planned, IndexResult.model_validate(result), run_record())

    assert stats.rejected == 1  # the repeated question itself, a duplicate
    assert stats.questions_answered == 1
    answered_by = await db.scalar("SELECT answered_by FROM ideas WHERE id = ?", (stored,))
    assert answered_by == await idea_id(db, SESSION_A, 2)
