"""Correcting an idea by hand (`correct` op): its effects on search, open items and recall, the record
kept by the idea's place, and that record applied to an idea made there again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.daemon.server import OPS, WRITING_OPS, run_op
from cairn.lifecycle.correct import ANSWERED, DONE
from cairn.recall.abandoned import abandoned
from cairn.search.errors import SearchError
from cairn.store.memory import list_ideas
from cairn.store.store import Store, idea_hash
from tests.helpers.cli import cairn, cairn_json
from tests.tools.memory import add_idea

SESSION = "s-correct"


async def _memory(store: Store) -> dict[str, int]:
    """One session, one transcript file, an idea of each kind the corrections treat differently."""
    async with store.db.write() as conn:
        await conn.execute("INSERT INTO sessions (id) VALUES (?)", (SESSION,))
        async with conn.execute(
            "INSERT INTO transcript_files (path, session_id) VALUES ('/t/s.jsonl', ?) RETURNING id",
            (SESSION,),
        ) as cursor:
            row = await cursor.fetchone()
        assert row is not None
        file_id = int(row[0])
        ideas = {
            "question": await add_idea(
                conn, SESSION, "question", "Should the cache live in Redis?", 3, file_id=file_id
            ),
            "todo": await add_idea(
                conn, SESSION, "todo", "Write the cache eviction test", 5, file_id=file_id
            ),
            "decision": await add_idea(
                conn, SESSION, "decision", "Cache rendered pages in Redis", 7, file_id=file_id
            ),
        }
    await store.sync_vectors()
    return {**ideas, "file": file_id}


async def _idea(store: Store, idea: int) -> dict[str, Any]:
    row = await store.db.fetchone("SELECT * FROM ideas WHERE id = ?", (idea,))
    assert row is not None
    return dict(row)


async def _corrections(store: Store) -> list[dict[str, Any]]:
    return [dict(r) for r in await store.db.fetchall("SELECT * FROM idea_corrections ORDER BY id")]


def test_correct_is_a_writing_op() -> None:
    assert "correct" in OPS and "correct" in WRITING_OPS


async def test_answered_done_declined_and_open_show_at_once(store: Store) -> None:
    ids = await _memory(store)
    before = await run_op(store, "open_questions", {})
    assert {i["id"] for i in before["questions"]} == {str(ids["question"])}
    assert {i["id"] for i in before["todos"]} == {str(ids["todo"])}

    answered = await run_op(store, "correct", {"id": f"#{ids['question']}", "state": "answered"})
    done = await run_op(store, "correct", {"id": ids["todo"], "state": "done"})
    declined = await run_op(store, "correct", {"id": ids["decision"], "state": "declined"})

    assert answered["answered_at"] and answered["resolution"] == ANSWERED and answered["recorded"]
    assert done["completed_at"] and done["resolution"] == DONE
    assert declined["declined_at"] and not declined["answered_at"]
    after = await run_op(store, "open_questions", {})
    assert after["questions"] == [] and after["todos"] == []
    assert await list_ideas(store.db, open_only=True) == []
    # Declined: still found by search, with the state as a field; left out of recall.
    page = await run_op(store, "search", {"query": "cache redis", "mode": "keyword", "record_usage": False})
    found = {r["id"]: r for r in page["results"]}
    assert found[str(ids["decision"])]["declined_at"] == declined["declined_at"]
    assert found[str(ids["question"])]["answered_at"] == answered["answered_at"]
    assert await abandoned(store.db, [ids["decision"], ids["question"]]) == {ids["decision"]}
    shown = await run_op(store, "show", {"id": ids["decision"]})
    assert shown["declined_at"] == declined["declined_at"]

    for name in ("question", "todo", "decision"):
        await run_op(store, "correct", {"id": ids[name], "state": "open"})
    reopened = await run_op(store, "open_questions", {})
    assert {i["id"] for i in reopened["questions"]} == {str(ids["question"])}
    for name in ("question", "todo", "decision"):
        row = await _idea(store, ids[name])
        assert (row["answered_at"], row["completed_at"], row["declined_at"], row["resolution"]) == (None,) * 4
    assert await abandoned(store.db, [ids["decision"]]) == set()


async def test_importance_changes_ranking_and_requeues_the_vector(store: Store) -> None:
    ids = await _memory(store)
    assert await store.db.scalar("SELECT count(*) FROM vector_outbox") == 0

    result = await run_op(store, "correct", {"id": ids["decision"], "importance": 0.95})

    assert result["importance"] == 0.95 and (await _idea(store, ids["decision"]))["importance"] == 0.95
    queued = await store.db.fetchall("SELECT kind, item_id FROM vector_outbox")
    assert [tuple(r) for r in queued] == [("ideas", ids["decision"])], "its metadata carries importance"
    page = await run_op(store, "search", {"query": "cache redis", "mode": "keyword", "record_usage": False})
    scores = {r["id"]: r["scores"]["importance"] for r in page["results"]}
    assert scores[str(ids["decision"])] == 0.95


async def test_the_record_holds_the_place_and_hash_never_the_text(store: Store) -> None:
    ids = await _memory(store)
    await run_op(store, "correct", {"id": ids["question"], "state": "answered", "importance": 0.8})
    await run_op(store, "correct", {"id": ids["question"], "importance": 0.3})

    [row] = await _corrections(store)
    assert (row["source_file_id"], row["source_line"], row["intent"]) == (ids["file"], 3, "question")
    assert row["content_hash"] == idea_hash("Should the cache live in Redis?")
    assert (row["state"], row["importance"], row["hash_only"]) == ("answered", 0.3, 0)
    assert row["state_at"] is not None
    assert not any("Redis" in str(value) for value in row.values())


async def test_refusals_change_nothing(store: Store) -> None:
    ids = await _memory(store)
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"id": ids["decision"], "state": "answered"}, "only a question or problem"),
        ({"id": ids["question"], "state": "done"}, "only a todo"),
        ({"id": ids["question"], "state": "wrong"}, "unknown state"),
        ({"id": ids["question"], "state": "open"}, "nothing to reopen"),
        ({"id": ids["question"], "importance": 1.5}, "from 0 to 1"),
        ({"id": ids["question"], "importance": float("nan")}, "from 0 to 1"),
        ({"id": ids["question"]}, "nothing to correct"),
        ({"id": 999, "state": "declined"}, "no idea #999"),
        ({"id": "s1", "state": "declined"}, "not an idea"),
    ]
    for args, message in refusals:
        with pytest.raises(SearchError, match=message):
            await run_op(store, "correct", args)
    await run_op(store, "correct", {"id": ids["todo"], "state": "done"})
    with pytest.raises(SearchError, match="already done"):
        await run_op(store, "correct", {"id": ids["todo"], "state": "done"})
    assert [r["source_line"] for r in await _corrections(store)] == [5]
    assert (await _idea(store, ids["question"]))["importance"] == 0.5


async def _remade(store: Store, file_id: int, intent: str, content: str, line: int) -> dict[str, Any]:
    """An idea inserted at `line` as any writer would (the executor, a re-index swap, an import)."""
    async with store.db.write() as conn:
        idea = await add_idea(conn, SESSION, intent, content, line, file_id=file_id)
    return await _idea(store, idea)


async def test_an_idea_made_again_at_the_place_gets_the_correction(store: Store) -> None:
    ids = await _memory(store)
    await run_op(store, "correct", {"id": ids["question"], "state": "answered", "importance": 0.9})
    await run_op(store, "correct", {"id": ids["todo"], "state": "done"})
    await run_op(store, "correct", {"id": ids["decision"], "state": "declined", "importance": 0.1})
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM ideas")

    same = await _remade(store, ids["file"], "question", "Should the cache live in Redis?", 3)
    reworded = await _remade(store, ids["file"], "todo", "Add a test for cache eviction", 5)
    other_intent = await _remade(store, ids["file"], "context", "Redis runs on the build box", 7)
    declined = await _remade(store, ids["file"], "decision", "Keep rendered pages in Redis", 7)
    elsewhere = await _remade(store, ids["file"], "decision", "Cache rendered pages in Redis", 8)

    assert (same["answered_at"], same["resolution"], same["importance"]) != (None, None, 0.5)
    assert same["resolution"] == ANSWERED and same["importance"] == 0.9
    assert reworded["completed_at"] is not None and reworded["resolution"] == DONE, "same place and intent"
    assert other_intent["declined_at"] is None and other_intent["importance"] == 0.5
    assert declined["declined_at"] is not None and declined["importance"] == 0.1
    assert elsewhere["declined_at"] is None, "another line is another idea"


async def test_beside_another_idea_of_its_intent_only_the_same_words_get_it(store: Store) -> None:
    ids = await _memory(store)
    async with store.db.write() as conn:
        await add_idea(conn, SESSION, "decision", "Pages expire after an hour", 7, file_id=ids["file"])
    await run_op(store, "correct", {"id": ids["decision"], "state": "declined"})
    assert [r["hash_only"] for r in await _corrections(store)] == [1]
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM ideas WHERE source_line = 7")

    sibling = await _remade(store, ids["file"], "decision", "Pages expire after one hour", 7)
    same = await _remade(store, ids["file"], "decision", "Cache rendered pages in Redis", 7)

    assert sibling["declined_at"] is None and same["declined_at"] is not None


async def test_reopening_what_the_indexer_answered_holds_for_an_idea_made_again(store: Store) -> None:
    ids = await _memory(store)
    async with store.db.write() as conn:
        await conn.execute(
            "UPDATE ideas SET answered_at = '2025-01-01T00:00:00.000Z', resolution = 'use Redis' "
            "WHERE id = ?",
            (ids["question"],),
        )
    await run_op(store, "correct", {"id": ids["question"], "state": "open"})
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM ideas WHERE id = ?", (ids["question"],))
        idea = await add_idea(
            conn,
            SESSION,
            "question",
            "Should the cache live in Redis?",
            3,
            file_id=ids["file"],
            answered_at="2025-01-01T00:00:00.000Z",
            resolution="use Redis",
        )
        # The person spoke after both questions: by the session's own rule neither is open any more.
        await conn.execute(
            "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash) VALUES (?, ?, 10, 10, 0, 10, 'user', 'text', 'go on', 'h-go-on')",
            (SESSION, ids["file"]),
        )
        await add_idea(conn, SESSION, "question", "Which TTL should pages get?", 4, file_id=ids["file"])
    row = await _idea(store, idea)
    assert (row["answered_at"], row["resolution"]) == (None, None)
    open_now = await run_op(store, "open_questions", {})
    assert [i["id"] for i in open_now["questions"]] == [str(idea)], "reopened: open whatever the session did"


def test_the_cli_corrects_in_one_line_and_refuses_in_one_line(home: Path) -> None:
    ideas = cairn_json("ideas", "--project", "acme-api", "--limit", "100")
    decision = next(i for i in ideas if i["intent"] == "decision")

    shown = cairn("correct", f"#{decision['id']}", "--declined", "--importance", "0.25")
    assert shown.stdout.strip() == f"#{decision['id']} decision: declined, importance 0.25"
    again = cairn_json("correct", str(decision["id"]), "--open")
    assert again["declined_at"] is None and again["importance"] == 0.25 and again["recorded"]
    listed = cairn_json("ideas", "--project", "acme-api", "--limit", "100")
    assert next(i for i in listed if i["id"] == decision["id"])["importance"] == 0.25

    for args, code, message in (
        ((), 2, "nothing to correct"),
        (("--done", "--answered"), 2, "at most one"),
        (("--importance", "2"), 2, "from 0 to 1"),
        (("--answered",), 2, "only a question or problem"),
    ):
        refused = cairn("correct", str(decision["id"]), *args, check=False)
        assert refused.returncode == code, (args, refused.stderr)
        assert message in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    missing = cairn("correct", "999999", "--declined", check=False)
    assert missing.returncode == 2 and "no idea #999999" in missing.stderr


async def test_a_declined_item_is_not_open_for_the_indexer_nor_on_the_home_page(store: Store) -> None:
    """The indexing agent's open-question and todo tools, and the home page's open items, leave out what
    the person declined: the agent is not asked to answer it, the page does not count it as open."""
    from cairn.tools import ToolDeps
    from cairn.tools.ideas import get_open_questions, get_open_todos
    from cairn.tools.results import IdeaList
    from tests.tools.memory import context

    ids = await _memory(store)
    ctx = context(ToolDeps(db=store.db, vectors=None))

    def listed(result: object) -> list[int]:
        assert isinstance(result, IdeaList), result
        return [i.id for i in result.ideas]

    assert listed(await get_open_questions(ctx, session=SESSION)) == [ids["question"]]
    assert listed(await get_open_todos(ctx, session=SESSION)) == [ids["todo"]]
    assert (await run_op(store, "overview", {}))["totals"]["open_items"] == 2

    for idea in ("question", "todo"):
        await run_op(store, "correct", {"id": ids[idea], "state": "declined"})

    assert listed(await get_open_questions(ctx, session=SESSION)) == []
    assert listed(await get_open_todos(ctx, session=SESSION)) == []
    assert (await run_op(store, "overview", {}))["totals"]["open_items"] == 0


async def test_a_reindex_of_another_session_does_not_answer_a_reopened_question_again(store: Store) -> None:
    """Re-indexing session B re-derives B's old verdicts on session A's ideas (`_resolve_others`): an
    answer to a question, a todo done. Where the person reopened A's idea since, the verdict is stale —
    the re-index re-read what was said before the person's word — and is not applied; elsewhere it is."""
    from cairn.reindex.swap import _resolve_others

    ids = await _memory(store)
    async with store.db.write() as conn:
        extra = await add_idea(
            conn, SESSION, "question", "Which TTL should pages get?", 9, file_id=ids["file"]
        )
    for idea, state in ((ids["question"], "answered"), (ids["todo"], "done")):
        await run_op(store, "correct", {"id": idea, "state": state})
        await run_op(store, "correct", {"id": idea, "state": "open"})

    def verdict(idea: int, **columns: Any) -> dict[str, Any]:
        row = {"id": idea, "answered_at": None, "answered_by": None, "completed_at": None}
        return {**row, "resolved_line": 40, "resolution": "said in session B", "superseded_by": None,
                "valid_until": None, **columns}  # fmt: skip

    when = "2025-02-01T00:00:00.000Z"
    async with store.db.write() as conn:
        await _resolve_others(
            conn,
            [
                verdict(ids["question"], answered_at=when),
                verdict(ids["todo"], completed_at=when),
                verdict(extra, answered_at=when),
            ],
            {},
        )
    assert (await _idea(store, ids["question"]))["answered_at"] is None
    assert (await _idea(store, ids["todo"]))["completed_at"] is None
    assert (await _idea(store, extra))["answered_at"] == when, "a verdict on an idea nobody reopened applies"
