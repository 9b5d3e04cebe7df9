"""`cairn reindex` in process: real SQLite and Chroma, the offline model, a changed offline model.

The re-index must replace a session's ideas, spans and entities by the new model's without touching
a message, keep what other rows learned about the old ideas (usage, injections, links from other
sessions), leave the old generation whole when the new one cannot be finished, and price itself
per model without running anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.agent.offline import model as offline_model
from cairn.agent.schema import IndexResult
from cairn.config import Settings
from cairn.daemon.jobs import reindex_job
from cairn.ingest import sync_file
from cairn.reindex.run import Selection, select_sessions
from cairn.store.store import Store
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.helpers.reindex import indexed, rows

VIEWER = sorted((REAL_TRANSCRIPTS / "claude-code-viewer").glob("*.jsonl"))
SMALL = [p for p in VIEWER if p.stat().st_size < 200_000][:2]
MARK = "[v2] "


async def test_reindex_after_a_model_change_replaces_memory_and_never_touches_messages(
    store: Store, settings: Settings
) -> None:
    before = await indexed(store, settings, SMALL)
    messages = await rows(store, "SELECT id, file_id, line, text, content_hash FROM messages ORDER BY id")
    old_ideas = await rows(store, "SELECT id, content FROM ideas ORDER BY id")
    assert not any(content.startswith(MARK) for _, content in old_ideas)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_model, "build_result", _marked(offline_model.build_result))
        data = await reindex_job(store, settings, model="offline")

    assert data["sessions_swapped"] == len(SMALL) and not data["interrupted"] and data["runs_failed"] == 0
    assert (
        await rows(store, "SELECT id, file_id, line, text, content_hash FROM messages ORDER BY id")
        == messages
    )
    new_ideas = await rows(store, "SELECT id, content FROM ideas ORDER BY id")
    assert len(new_ideas) == len(old_ideas)
    assert [c for _, c in new_ideas] == [MARK + c for _, c in old_ideas]
    assert not {i for i, _ in new_ideas} & {i for ids in before.values() for i in ids}
    # Spans, entity links and cursors are the new generation's; the job is finished.
    assert await rows(store, "SELECT count(*) FROM topic_spans WHERE id IN (SELECT span_id FROM ideas)") != [
        (0,)
    ]
    assert await rows(store, "SELECT count(*) FROM ideas WHERE span_id IS NULL") == [(0,)]
    assert await rows(store, "SELECT count(*) FROM reindex_jobs WHERE finished_at IS NULL") == [(0,)]
    # The vectors followed: Chroma holds exactly the new ideas.
    assert await rows(store, "SELECT count(*) FROM vector_outbox") == [(0,)]
    held = store.vectors._collection("ideas").get(include=[])["ids"]
    assert sorted(int(i) for i in held) == sorted(i for i, _ in new_ideas)
    # Searching finds the new wording only.
    found = await rows(store, "SELECT content FROM ideas_fts WHERE ideas_fts MATCH 'v2'")
    assert len(found) == len(new_ideas)


def _marked(build: Any) -> Any:
    def build_result(*args: Any, **kwargs: Any) -> IndexResult:
        result = build(*args, **kwargs)
        ideas = [idea.model_copy(update={"content": MARK + idea.content}) for idea in result.ideas]
        return result.model_copy(update={"ideas": ideas})

    return build_result


async def test_what_other_rows_learned_moves_to_the_successor(store: Store, settings: Settings) -> None:
    ideas = await indexed(store, settings, SMALL)
    (target_session, targets), (other_session, others) = sorted(ideas.items())
    target, other = targets[0], others[0]
    async with store.db.write() as conn:
        await conn.execute(
            "UPDATE ideas SET usage_count = 3, last_used_at = '2030-01-01' WHERE id = ?", (target,)
        )
        await conn.execute(
            "INSERT INTO recall_injections (session_id, idea_id, event) VALUES ('cc', ?, 'UserPromptSubmit')",
            (target,),
        )
        await conn.execute(
            "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, 'builds_on')",
            (other, target),
        )
        await conn.execute("UPDATE ideas SET superseded_by = ? WHERE id = ?", (other, target))
    (place,) = await rows(
        store, "SELECT source_file_id, source_line, content FROM ideas WHERE id = ?", target
    )

    data = await reindex_job(store, settings, model="offline", session=target_session[:8])

    assert data["sessions_total"] == 1 and data["sessions_swapped"] == 1
    (successor,) = await rows(
        store,
        "SELECT id, usage_count, last_used_at FROM ideas WHERE source_file_id = ? AND source_line = ? "
        "AND content = ?",
        *place,
    )
    assert successor[0] != target and successor[1:] == (3, "2030-01-01")
    assert await rows(store, "SELECT idea_id FROM recall_injections WHERE session_id = 'cc'") == [
        (successor[0],)
    ]
    assert await rows(store, "SELECT to_idea_id FROM relations WHERE from_idea_id = ?", other) == [
        (successor[0],)
    ]
    # Superseded by another session's idea, it stays superseded under its successor.
    assert await rows(store, "SELECT id FROM ideas WHERE superseded_by = ?", other) == [(successor[0],)]
    # The other session was not re-indexed.
    assert [
        i for (i,) in await rows(store, "SELECT id FROM ideas WHERE session_id = ?", other_session)
    ] == others


async def test_a_failed_reindex_keeps_the_old_generation_and_a_rerun_finishes(
    store: Store, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    await indexed(store, settings, SMALL)
    old = await rows(store, "SELECT id, content FROM ideas ORDER BY id")
    runs = await rows(store, "SELECT count(*) FROM index_runs")

    def broken(*_args: Any, **_kwargs: Any) -> IndexResult:
        raise RuntimeError("the new model is broken")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_model, "build_result", broken)
        failed = await reindex_job(store, settings, model="offline")
    assert failed["sessions_swapped"] == 0 and failed["runs_failed"] > 0
    assert all(s["error"] for s in failed["sessions"])
    assert await rows(store, "SELECT id, content FROM ideas ORDER BY id") == old
    # The failed runs are accounted in the store even though their scratch generation was dropped.
    assert (await rows(store, "SELECT count(*) FROM index_runs"))[0][0] > runs[0][0]
    assert await rows(store, "SELECT count(*) FROM reindex_jobs WHERE finished_at IS NULL") == [(1,)]
    assert not (settings.home / "reindex-scratch").exists()

    finished = await reindex_job(store, settings, model="offline")
    assert finished["job"] == failed["job"] and finished["sessions_swapped"] == len(SMALL)
    assert [c for _, c in await rows(store, "SELECT id, content FROM ideas ORDER BY id")] == [
        c for _, c in old
    ]


async def test_dry_run_prices_per_model_and_changes_nothing(store: Store, settings: Settings) -> None:
    await indexed(store, settings, SMALL)
    ideas = await rows(store, "SELECT * FROM ideas ORDER BY id")
    data = await reindex_job(store, settings, model="offline", dry_run=True)
    assert data["dry_run"] is True and data["model"] == "offline"
    assert len(data["sessions"]) == len(SMALL)
    total = data["total"]
    assert total["batches"] >= len(SMALL) and total["messages"] > 0 and total["input_tokens"] > 0
    assert total["cost_usd"]["offline"] == 0 and total["cost_usd"]["claude-haiku-4-5"] > 0
    assert await rows(store, "SELECT * FROM ideas ORDER BY id") == ideas
    assert await rows(store, "SELECT count(*) FROM reindex_jobs") == [(0,)]


async def test_project_selection_resolves_as_everywhere_else(store: Store, settings: Settings) -> None:
    """`reindex --project` takes what `--project` takes everywhere (a path inside the project, here a
    subdirectory of the stored root that does not exist on this machine), and falls back to a
    substring when nothing resolves."""
    viewer = SMALL[0]
    other = sorted((REAL_TRANSCRIPTS / "fasthooks").glob("sample_main_transcript.jsonl"))[0]
    for path in (viewer, other):
        await sync_file(store, path, settings)
    sql = "SELECT s.id, p.path FROM sessions s JOIN projects p ON p.id = s.project_id"
    roots = dict(await rows(store, sql))
    viewer_session = viewer.stem
    assert len(set(roots.values())) == 2, roots

    inside = await select_sessions(store.db, Selection(project=roots[viewer_session] + "/src/components"))
    substring = await select_sessions(store.db, Selection(project=Path(roots[viewer_session]).name[:4]))

    assert [s.id for s in inside] == [viewer_session]
    assert viewer_session in [s.id for s in substring]


async def test_a_spent_budget_stops_the_reindex_counting_the_scratch_runs_too(
    store: Store, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-index records a session's runs in its scratch store until the swap: the budget counts them
    with the store's, so a budget smaller than one run lets exactly one run go, then stops with the line;
    the stopped session keeps its old generation."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    from cairn.agent import batches
    from cairn.agent.models import ModelChoice, request_settings
    from cairn.reindex.run import reindex

    await indexed(store, settings, SMALL)
    old = await rows(store, "SELECT id, content FROM ideas ORDER BY id")
    monkeypatch.setattr(batches, "BACKFILL_MESSAGE_TOKENS", 600)  # several batches per session

    def nothing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {})],
            usage=RequestUsage(input_tokens=900, output_tokens=100),
        )

    budgeted = settings.model_copy(update={"daily_token_budget": 500})
    choice = ModelChoice("function:nothing", FunctionModel(nothing), request_settings(budgeted))
    selection = Selection()
    sessions = await select_sessions(store.db, selection)
    report = await reindex(store, budgeted, sessions, choice, selection, embed=None)
    assert len(report.index.runs) == 1 and report.index.runs[0].ok
    assert report.index.stopped is not None and report.index.paused_until is not None
    assert report.index.stopped.startswith("daily indexing budget spent: 1,000 of 500 tokens today")
    assert not report.interrupted
    spent = await rows(
        store, "SELECT sum(input_tokens + output_tokens) FROM index_runs WHERE model = ?", choice.name
    )
    assert spent == [(1_000,)], "the one run is accounted in the store, swapped or not"
    assert not any(s.swapped for s in report.sessions), "stopped inside its first session"
    assert await rows(store, "SELECT id, content FROM ideas ORDER BY id") == old


async def test_a_killed_reindexs_runs_are_recorded_by_the_next_one_once(
    store: Store, settings: Settings
) -> None:
    """A re-index killed mid-session leaves its scratch store, whose runs (paid for) no ledger has: the
    next re-index records them in the store before it starts, once; a finished one leaves no scratch."""
    from cairn.agent.budget import budget_state
    from cairn.reindex.scratch import build_scratch

    await indexed(store, settings, SMALL)
    [(session,)] = await rows(store, "SELECT id FROM sessions ORDER BY id LIMIT 1")
    scratch = await build_scratch(store.db, settings, session)
    async with scratch.db.write() as conn:  # what a killed claude-code re-index had recorded
        await conn.execute(
            "INSERT INTO index_runs (model, prompt_version, mode, input_tokens, output_tokens, outcome) "
            "VALUES ('claude-code:claude-haiku-4-5', 'v', 'backfill', 58000, 2000, 'ok')"
        )
    await scratch.close()  # the process is gone; the scratch stays on disk
    paid = settings.model_copy(update={"daily_token_budget": 1_000_000})
    assert (await budget_state(store.db, paid)).spent == 0

    data = await reindex_job(store, settings, model="offline")

    assert data["sessions_swapped"] == len(SMALL)
    paid_runs = "SELECT input_tokens, output_tokens FROM index_runs WHERE model LIKE 'claude-code%'"
    assert await rows(store, paid_runs) == [(58000, 2000)]
    assert (await budget_state(store.db, paid)).spent == 60_000
    assert not (settings.home / "reindex-scratch").exists()
    again = await reindex_job(store, settings, model="offline")
    assert again["sessions_swapped"] == len(SMALL)
    assert len(await rows(store, paid_runs)) == 1
