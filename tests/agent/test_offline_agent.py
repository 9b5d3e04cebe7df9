"""The offline model through a real pydantic-ai `Agent`, the real tools, a real store and the executor.

Transcripts are captured with `sync_paths`, cut with `plan_batches`, rendered with
`render_batch_prompt`, indexed by `Agent(offline_model(), output_type=IndexResult, deps_type=ToolDeps)`
with `indexing_toolset()`, and applied with `executor.apply` — the indexer's loop minus Chroma
(`ToolDeps(vectors=None)`: the tools then match by FTS5 and LIKE), which keeps the tests fast.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry, RunContext, capture_run_messages
from pydantic_ai.messages import ModelResponse, ToolCallPart

from cairn.agent.batches import plan_batches
from cairn.agent.executor import ApplyStats
from cairn.agent.offline import LOOKUP_BUDGET, OFFLINE_MODEL_NAME, offline_model
from cairn.agent.schema import IndexResult, render_batch_prompt
from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.store import Store
from cairn.tools import ToolDeps, indexing_toolset
from tests.agent.offline_helpers import _agent, _apply, _index_all, _run
from tests.helpers.builders import Transcript
from tests.helpers.paths import REPO_ROOT, real_transcripts

DEMO = REPO_ROOT / "cairn" / "demo" / "demo-session.jsonl"
SESSION = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000abc"


def _line(session: str, line: int, role: str, text: str) -> str:
    message: dict[str, Any] = {"role": role, "content": text}
    if role == "assistant":
        message = {
            "id": f"msg_{line:04d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": text}],
        }
    return json.dumps(
        {
            "parentUuid": None,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/acme",
            "sessionId": session,
            "version": "2.0.76",
            "gitBranch": "main",
            "type": role,
            "uuid": f"00000000-0000-4000-8000-{line:012d}",
            "timestamp": f"2026-01-01T10:00:{line:02d}.000Z",
            "message": message,
        }
    )


def _append(path: Path, *turns: tuple[str, str]) -> None:
    start = len(path.read_text().splitlines()) if path.exists() else 0
    with path.open("a") as fh:
        for offset, (role, text) in enumerate(turns, start=1):
            fh.write(_line(SESSION, start + offset, role, text) + "\n")


def test_the_model_is_named_offline() -> None:
    assert offline_model().model_name == OFFLINE_MODEL_NAME == "offline"


async def _demo(settings: Settings) -> tuple[IndexResult, int, ApplyStats, Store]:
    store = await Store.open(settings)
    [(_planned, result, calls, stats)] = await _index_all(store, settings, [DEMO])
    return result, calls, stats, store


def _near(result: IndexResult, lines: range, intents: set[str], *words: str) -> list[str]:
    """The contents of ideas of `intents` at `lines` that name every one of `words`."""
    return [
        i.content
        for i in result.ideas
        if i.source_line in lines and i.intent in intents and all(w in i.content for w in words)
    ]


async def test_demo_session_yields_the_expected_ideas(settings: Settings) -> None:
    """What a teammate asks the demo about later: the lock problem, the WAL + BEGIN IMMEDIATE fix near
    where it is decided (13-14), the load test's outcome (27) — grounded, within budget, nothing
    rejected, no secret stored, one topic from the first request."""
    result, calls, stats, store = await _demo(settings)
    async with store:
        assert stats.rejected == 0
        assert 1 <= calls <= LOOKUP_BUDGET
        by_intent = Counter(idea.intent for idea in result.ideas)
        assert {"conclusion", "question", "problem", "solution", "todo"} <= set(by_intent)
        assert _near(result, range(2, 12), {"problem"}, "database is locked")
        assert _near(result, range(13, 15), {"decision", "solution"}, "WAL", "BEGIN IMMEDIATE")
        assert _near(result, range(27, 28), {"conclusion"}, "Load test", "SQLite")
        # The question the person asks at 12 ("WAL mode?") is answered by the decision's line.
        keys = {i.key: i.source_line for i in result.ideas if i.key}
        assert (12, 13) in {
            (keys[str(a.question_idea_id)], a.answered_at_line) for a in result.answered_questions
        }
        assert 3 in result.skip_lines  # "Let me look at how …": a tool preamble
        assert not any("sk-ant-" in i.content for i in result.ideas)  # the pasted key is redacted
        assert {"SQLite", "WAL", "PostgreSQL"} <= {e.name for i in result.ideas for e in i.entities}
        # The topic opens at the first request (line 2), not at the summary line above it.
        [change] = result.topic_changes
        assert change.from_span_id is None and change.start_line == 2
        stored = await store.db.fetchall("SELECT intent, count(*) AS n FROM ideas GROUP BY intent")
        assert {row["intent"]: row["n"] for row in stored} == dict(by_intent)


async def test_demo_session_keeps_its_decision_at_its_line(settings: Settings) -> None:
    result, _calls, _stats, store = await _demo(settings)
    async with store:
        assert _near(result, range(13, 14), {"decision"}, "WAL journal mode", "BEGIN IMMEDIATE")


async def test_demo_session_keeps_the_open_postgres_question_and_the_load_test_todo(
    settings: Settings,
) -> None:
    result, _calls, _stats, store = await _demo(settings)
    async with store:
        assert _near(result, range(19, 20), {"question"}, "Postgres")
        assert _near(result, range(20, 21), {"todo"}, "load test")


@pytest.mark.xfail(
    strict=True,
    reason="the learned model does not pick the hedged first guess (8, 'My first guess is…': its best kind, "
    "fix, scores 0.69 under the 0.89 threshold), so the correction at 11 has no guess to supersede",
)
async def test_demo_session_keeps_the_refuted_guess_superseded_by_the_real_cause(settings: Settings) -> None:
    result, _calls, _stats, store = await _demo(settings)
    async with store:
        keys = {(i.source_line, i.intent): i.key for i in result.ideas}
        assert keys.get((8, "conclusion")) and keys.get((11, "conclusion"))
        assert (keys[(11, "conclusion")], keys[(8, "conclusion")], "supersedes") in {
            (r.from_key, r.to_idea_id, r.relation_type) for r in result.relations
        }


@pytest.mark.slow
async def test_every_shared_transcript_indexes_cleanly_within_budget(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        done = await _index_all(store, settings, [*real_transcripts(), DEMO])
        assert len(done) >= 7
        intents: Counter[str] = Counter()
        for planned, result, calls, stats in done:
            IndexResult.model_validate(result.model_dump())
            assert calls + 1 <= 12
            assert stats.rejected == 0, planned.batch.updates[0].file_path
            for idea in result.ideas:
                assert idea.source_line in planned.lines(idea.session)
                assert len(idea.content) <= 300 and 0.5 <= idea.confidence <= 0.9
            intents.update(i.intent for i in result.ideas)
        assert len(intents) >= 5
        pending = await plan_batches(store.db)
        assert pending == []


@pytest.mark.slow
async def test_two_runs_over_the_same_state_are_equal(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [*real_transcripts(), DEMO], settings, vectors=False)
        for planned in await plan_batches(store.db):
            first, _ = await _run(store, planned)
            second, _ = await _run(store, planned)
            assert first == second
            await _apply(store, planned, first)


LOAD_TEST = "Add a load test that replays 10k orders per minute against SQLite"
POSTGRES_QUESTION = "Should we move the orders database to Postgres before the Black Friday load test?"


def _orders_session(root: Path) -> Transcript:
    """A first batch that leaves an open TodoWrite item (the load test) and the person's open question:
    the question's turn has only a tool call after it, so nothing in the batch settles either."""
    t = Transcript(root / "shop")
    t.user("get the orders service ready for Black Friday")
    todo = {"content": LOAD_TEST, "status": "pending", "activeForm": "Adding a load test"}
    t.tool("TodoWrite", {"todos": [todo]}, "Todos have been modified successfully.")
    t.user(POSTGRES_QUESTION)
    t.tool("Read", {"file_path": str(root / "shop" / "app" / "db.py")}, "engine = create_engine(URL)")
    return t


def _orders_report(t: Transcript) -> int:
    """The later batch: the load test run and reported done, with what it means for the question; the
    report's line."""
    t.tool("Bash", {"command": "python bench/load_orders.py --rate 10000"}, "p95=11.8ms errors=0")
    t.say("Load test done: it replays 10k orders per minute against SQLite with p95 11.8 ms and zero errors.")
    line = len(t.lines)
    t.say("Conclusion: the orders database stays on SQLite for Black Friday; no move to Postgres.")
    return line


async def test_a_later_batch_completes_the_stored_todo(settings: Settings, tmp_path: Path) -> None:
    t = _orders_session(tmp_path)
    path = t.append(tmp_path / "live.jsonl")  # as a live session writes; `append` later adds the rest
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path], mode="continuous")
        todo = await store.db.fetchone(
            "SELECT id FROM ideas WHERE intent = 'todo' AND content = ? AND completed_at IS NULL",
            (LOAD_TEST,),
        )
        assert todo is not None
        report = _orders_report(t)
        t.append(path)
        [(_planned, result, _calls, stats)] = await _index_all(store, settings, [path], mode="continuous")
        assert [(c.todo_idea_id, c.completed_at_line) for c in result.completed_todos] == [
            (todo["id"], report)
        ]
        assert stats.todos_completed == 1 and stats.rejected == 0
        # The batch continues the session's span: no new topic (with no new idea, no summary update).
        assert result.topic_changes == [] and len(result.topic_updates) == (1 if result.ideas else 0)


async def test_a_later_batch_answers_the_stored_question(settings: Settings, tmp_path: Path) -> None:
    t = _orders_session(tmp_path)
    path = t.append(tmp_path / "live.jsonl")  # as a live session writes; `append` later adds the rest
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path], mode="continuous")
        question = await store.db.fetchone(
            "SELECT id FROM ideas WHERE intent = 'question' AND answered_at IS NULL AND content = ?",
            (POSTGRES_QUESTION,),
        )
        assert question is not None
        _orders_report(t)
        t.append(path)
        [(_planned, result, _calls, stats)] = await _index_all(store, settings, [path], mode="continuous")
        assert [a.question_idea_id for a in result.answered_questions] == [question["id"]]
        assert any(r.relation_type == "answers" and r.to_idea_id == question["id"] for r in result.relations)
        assert stats.questions_answered == 1


@pytest.mark.xfail(
    strict=True,
    reason="the first decision is stored by its 'Decision:' label, but the learned model does not pick the "
    "change of mind ('Actually, let's switch the orders database to PostgreSQL instead of SQLite.', line 4): "
    "no new decision, so nothing supersedes the stored one",
)
async def test_a_changed_decision_supersedes_the_stored_one(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    _append(
        path,
        ("user", "Which database should the orders service use?"),
        ("assistant", "Decision: we'll use SQLite for the orders database, with WAL mode."),
    )
    async with await Store.open(settings) as store:
        await _index_all(store, settings, [path])
        _append(
            path,
            ("user", "The orders database gets too many concurrent writers now."),
            ("assistant", "Actually, let's switch the orders database to PostgreSQL instead of SQLite."),
        )
        [(_planned, result, _calls, stats)] = await _index_all(store, settings, [path])
        old = await store.db.fetchone(
            "SELECT id, superseded_by FROM ideas WHERE intent = 'decision' AND source_line = 2"
        )
        assert old is not None and old["superseded_by"] is not None
        supersedes = [
            (r.from_line, r.to_idea_id) for r in result.relations if r.relation_type == "supersedes"
        ]
        assert supersedes == [(4, old["id"])]
        assert stats.rejected == 0
        assert old["id"] in result.activated_ideas
        # The stored entity is linked, and the idea still names it for the executor to alias.
        sqlite = await store.db.fetchone("SELECT id FROM entities WHERE canonical_name = 'SQLite'")
        assert sqlite is not None
        assert any(
            link.entity_id == sqlite["id"] and link.idea_source_line == 4 for link in result.entity_links
        )


async def test_new_ideas_without_stored_ones_relate_to_nothing(settings: Settings, tmp_path: Path) -> None:
    """With an empty memory a batch's ideas (here the person's question) relate to and activate nothing."""
    path = tmp_path / f"{SESSION}.jsonl"
    _append(
        path, ("user", "Should we switch the orders database from SQLite to PostgreSQL before Black Friday?")
    )
    async with await Store.open(settings) as store:
        [(_planned, result, _calls, _stats)] = await _index_all(store, settings, [path])
        assert [i.intent for i in result.ideas] == ["question"]
        assert result.relations == [] and result.activated_ideas == []


async def test_a_rejected_output_gets_a_conservative_retry(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [DEMO], settings, vectors=False)
        [planned] = await plan_batches(store.db)
        agent = _agent()
        seen: list[IndexResult] = []

        @agent.output_validator
        def reject_first(ctx: RunContext[ToolDeps], output: IndexResult) -> IndexResult:
            seen.append(output)
            if len(seen) == 1:
                raise ModelRetry("entity_links: unknown id")
            return output

        run = await agent.run(render_batch_prompt(planned.batch), deps=ToolDeps(db=store.db, vectors=None))
        assert len(seen) == 2
        assert run.output.ideas == seen[0].ideas
        assert run.output.entity_links == run.output.relations == run.output.activated_ideas == []


async def test_a_second_rejection_leaves_the_ideas_alone(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [DEMO], settings, vectors=False)
        [planned] = await plan_batches(store.db)
        agent = Agent(
            offline_model(),
            output_type=IndexResult,
            deps_type=ToolDeps,
            toolsets=[indexing_toolset()],
            retries={"tools": 1, "output": 2},
        )
        seen: list[IndexResult] = []

        @agent.output_validator
        def reject_twice(ctx: RunContext[ToolDeps], output: IndexResult) -> IndexResult:
            seen.append(output)
            if len(seen) < 3:
                raise ModelRetry("still invalid")
            return output

        run = await agent.run(render_batch_prompt(planned.batch), deps=ToolDeps(db=store.db, vectors=None))
        assert len(seen) == 3 and seen[1].topic_changes
        assert run.output == IndexResult(ideas=seen[0].ideas, skip_lines=seen[0].skip_lines)


async def test_a_continuous_batch_of_two_sessions_looks_up_both(settings: Settings, tmp_path: Path) -> None:
    first, second = tmp_path / f"{SESSION}.jsonl", tmp_path / "other.jsonl"
    _append(first, ("user", "Why does the nightly export fail with `KeyError: 'user_id'`?"))
    _append(second, ("user", "Should the nightly export jobs run on Celery or on plain cron?"))
    other = second.read_text().replace(SESSION, "0b7c5e2a-3d41-4c8e-9f6a-cafe00000def")
    second.write_text(other)
    async with await Store.open(settings) as store:
        await sync_paths(store, [first, second], settings, vectors=False)
        [planned] = await plan_batches(store.db, mode="continuous")
        assert len(planned.batch.updates) == 2
        with capture_run_messages() as messages:
            run = await _agent().run(
                render_batch_prompt(planned.batch), deps=ToolDeps(db=store.db, vectors=None)
            )
        asked = [
            (part.tool_name, part.args_as_dict().get("session"))
            for message in messages
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart) and part.tool_name == "get_current_span"
        ]
        assert sorted(session for _tool, session in asked) == sorted(u.session for u in planned.batch.updates)
        # Each session's idea is the person's own question, at its own line.
        assert sorted((i.session[-3:], i.source_line, i.content) for i in run.output.ideas) == [
            ("abc", 1, "Why does the nightly export fail with `KeyError: 'user_id'`?"),
            ("def", 1, "Should the nightly export jobs run on Celery or on plain cron?"),
        ]
        assert len(run.output.topic_changes) == 2
        stats = await _apply(store, planned, run.output)
        assert stats.rejected == 0 and stats.spans_opened == 2


async def test_without_tools_the_model_answers_at_once(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [DEMO], settings, vectors=False)
        [planned] = await plan_batches(store.db)
        agent = Agent(offline_model(), output_type=IndexResult)
        run = await agent.run(render_batch_prompt(planned.batch))
        assert run.usage.requests == 1 and run.usage.tool_calls == 0
        assert len(run.output.ideas) >= 8
        # Without `get_current_span` the session's span is unknown: no topic is opened on a guess.
        assert run.output.topic_changes == []


async def test_budget_notices_still_end_in_a_result(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await sync_paths(store, [DEMO], settings, vectors=False)
        [planned] = await plan_batches(store.db)
        result, calls = await _run(store, planned, max_tool_calls=1)
        assert calls > 1
        assert len(result.ideas) >= 8
        stats = await _apply(store, planned, result)
        assert stats.rejected == 0


async def test_a_prompt_without_a_batch_is_refused() -> None:
    agent = Agent(offline_model(), output_type=IndexResult)
    with pytest.raises(RuntimeError, match="render_batch_prompt"):
        await agent.run("hello")
