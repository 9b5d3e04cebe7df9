"""The offline indexer links a batch's own ideas (issue 15, part 2), through the real agent and executor.

The transcript is one the team wrote for the eval dataset (`evals/datasets/core`, case 02): a
question asked at line 3 and answered at line 41, a todo set at line 7 and done at line 36, and a
guess at line 19 that the fix at line 22 replaces. All of it arrives in one backfill batch, so the
links can only be made by key.
"""

from __future__ import annotations

from pathlib import Path

from cairn.agent.offline import build_result
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.store.store import Store
from tests.agent.test_offline_agent import _index_all
from tests.agent.test_offline_heuristics import batch, fresh
from tests.conftest import REPO_ROOT

CASE = REPO_ROOT / "evals" / "datasets" / "core" / "sessions" / "02-ledger-postgres-migration.jsonl"


async def test_a_question_a_todo_and_a_guess_are_linked_inside_one_batch(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / CASE.name
    path.write_bytes(CASE.read_bytes())
    async with await Store.open(settings) as store:
        [(_planned, result, _calls, stats)] = await _index_all(store, settings, [path])
        assert stats.rejected == 0
        keyed = {i.key: i for i in result.ideas if i.key is not None}
        assert all(isinstance(a.question_idea_id, str) for a in result.answered_questions)
        assert {keyed[str(a.question_idea_id)].source_line for a in result.answered_questions} >= {3}

        db = store.db
        question = await db.fetchone(
            "SELECT answered_at, resolved_line FROM ideas WHERE source_line = 3 AND intent = 'question'"
        )
        assert question is not None and question["answered_at"] is not None
        assert question["resolved_line"] == 41  # "To answer your earlier question: RDS is pinned to 16.4"
        todo = await db.fetchone(
            "SELECT completed_at, resolved_line FROM ideas WHERE source_line = 7 AND intent = 'todo'"
        )
        assert todo is not None and todo["completed_at"] is not None and todo["resolved_line"] == 36
        guess = await db.fetchone(
            """
            SELECT g.content, f.source_line AS by_line
            FROM ideas AS g JOIN ideas AS f ON f.id = g.superseded_by WHERE g.source_line = 19
            """
        )
        assert guess is not None and guess["by_line"] == 22
        assert "guess" in guess["content"].lower()
        assert stats.questions_answered >= 1 and stats.todos_completed == 1
        assert stats.relations_by_type.get("supersedes", 0) >= 1

        # Applied once: nothing is left to index, so nothing can be linked twice.
        assert await _index_all(store, settings, [path]) == []


# Team-written snippets for each rule, through `build_result` (the offline model's last step).


def _keys(result: IndexResult) -> dict[int, str | None]:
    return {idea.source_line: idea.key for idea in result.ideas}


def test_a_todo_done_later_in_the_batch_is_completed_by_key() -> None:
    result = build_result(
        batch(
            ("user", "The nightly export drops rows with a NULL region."),
            ("assistant", "TODO: add a regression test for NULL regions in the nightly export."),
            ("assistant", "Exit code 0"),
            ("assistant", "Added `test_null_region_rows_are_exported`; it passes, so that todo is done."),
        ),
        fresh(),
    )
    keys = _keys(result)
    assert keys[2] is not None
    assert [(t.todo_idea_id, t.completed_at_line) for t in result.completed_todos] == [(keys[2], 4)]


def test_a_changed_plan_supersedes_the_decision_it_changes() -> None:
    result = build_result(
        batch(
            ("assistant", "Decision: we'll cache quotes in Redis with a 10 minute TTL."),
            ("user", "a TTL means stale prices for 10 minutes, that's too long"),
            (
                "assistant",
                "Changing the plan: drop the TTL cache and version the quote keys in Redis instead.",
            ),
        ),
        fresh(),
    )
    keys = _keys(result)
    assert [(r.from_key, r.to_idea_id, r.relation_type) for r in result.relations] == [
        (keys[3], keys[1], "supersedes")
    ]


def test_a_question_put_off_is_answered_where_the_reply_says_so() -> None:
    result = build_result(
        batch(
            ("user", "which Postgres version does the RDS instance run?"),
            ("assistant", "I can't answer that yet; I'll look at the Terraform later."),
            ("assistant", "The migration script copies all rows with their types."),
            ("assistant", "To answer your earlier question: the RDS instance runs Postgres 16.4."),
        ),
        fresh(),
    )
    keys = _keys(result)
    assert [(a.question_idea_id, a.answered_at_line) for a in result.answered_questions] == [(keys[1], 4)]


def test_the_reply_to_a_question_is_past_the_steps_that_look_for_it() -> None:
    # Issue 29: "what is the issue?" was answered by "Unit tests pass." (the first words of the turn,
    # said on the way to the integration tests), "…then refs are put to the fork?" by "Good question."
    result = build_result(
        batch(
            ("user", "we have some test failures on this dependency branch, what is the issue?"),
            ("assistant", "Unit tests pass. Let me check the integration tests the branch changed."),
            ("assistant", "Good question. The resume tests fail: the test repo never ignores .entire/."),
        ),
        fresh(),
    )
    keys = _keys(result)
    [answered] = result.answered_questions
    assert (answered.question_idea_id, answered.answered_at_line) == (keys[1], 3)
    assert "Unit tests pass" not in answered.answer_summary
