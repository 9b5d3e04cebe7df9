"""The offline indexer links a batch's own ideas (issue 15, part 2), through the real agent and executor.

The transcript is one the team wrote for the eval dataset (`evals/datasets/core`, case 02): a
question asked at line 3 and answered at line 41, a todo set at line 7 and done at line 36, and a
guess at line 19 that the fix at line 22 replaces. All of it arrives in one backfill batch, so the
links can only be made by key.
"""

from __future__ import annotations

from pathlib import Path

from cairn.config import Settings
from cairn.store.store import Store
from tests.agent.test_offline_agent import _index_all
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
