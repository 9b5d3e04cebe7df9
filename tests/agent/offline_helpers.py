"""Shared by the offline indexer's tests: the type of the `model_picks` fixture (tests/agent/conftest.py),
one-session batches written by hand, the offline agent run over a real store, and a lint run that fails."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.messages import ModelResponse, ToolCallPart

from cairn.agent import executor
from cairn.agent.batches import PlannedBatch, plan_batches
from cairn.agent.executor import ApplyStats, RunRecord
from cairn.agent.offline import OFFLINE_MODEL_NAME, Known, offline_model
from cairn.agent.schema import BatchMessage, IndexBatch, IndexResult, SessionUpdate, render_batch_prompt
from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.store import Store
from cairn.tools import ToolDeps, indexing_toolset

Picks = Callable[..., None]


SESSION = "s-1"
FILE = "/home/dev/.claude/projects/acme/s-1.jsonl"


def batch(*messages: tuple[str, str], start: int = 1, session: str = SESSION) -> IndexBatch:
    """A one-session batch of (role, content) messages at consecutive lines from `start`."""
    return IndexBatch(
        updates=[
            SessionUpdate(
                session=session,
                file_path=FILE,
                messages=[
                    BatchMessage(line=start + i, role=role, content=text)
                    for i, (role, text) in enumerate(messages)
                ],
            )
        ]
    )


def fresh() -> Known:
    """What the tools say about a session they have never seen: no span, nothing open, nothing stored."""
    return Known(spans={SESSION: None}, open_questions={SESSION: []}, open_todos={SESSION: []})


def _agent() -> Agent[ToolDeps, IndexResult]:
    return Agent(offline_model(), output_type=IndexResult, deps_type=ToolDeps, toolsets=[indexing_toolset()])


async def _run(store: Store, planned: PlannedBatch, *, max_tool_calls: int = 15) -> tuple[IndexResult, int]:
    """The agent's result for one batch, and how many function tools it called."""
    deps = ToolDeps(db=store.db, vectors=None, max_tool_calls=max_tool_calls)
    with capture_run_messages() as messages:
        run = await _agent().run(render_batch_prompt(planned.batch), deps=deps)
    calls = [
        part
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_name != "final_result"
    ]
    assert run.usage.tool_calls == len(calls) == deps.tool_calls
    return run.output, len(calls)


async def _apply(store: Store, planned: PlannedBatch, result: IndexResult) -> ApplyStats:
    return await executor.apply(
        store.db, planned, result, RunRecord(OFFLINE_MODEL_NAME, "test", planned.batch.mode)
    )


async def _index_all(
    store: Store, settings: Settings, paths: list[Path], mode: str = "backfill"
) -> list[Any]:
    """Capture `paths`, then index every pending batch; (batch, result, tool calls, stats) per batch."""
    await sync_paths(store, paths, settings, vectors=False)
    done = []
    for planned in await plan_batches(store.db, mode=mode):  # type: ignore[arg-type]
        result, calls = await _run(store, planned)
        done.append((planned, result, calls, await _apply(store, planned, result)))
    return done


_LINT = ("assistant", 'Running the linter.\n[tool_use Bash] command="mise run lint 2>&1" description="lint"')
_LINT_FAILS = ("tool", "[tool_result Bash error] lint failed: hooks.go:42: noctx: exec.Command needs a ctx")
_LINT_AGAIN = ("assistant", '[tool_use Bash] command="mise run lint 2>&1" description="lint again"')
# The lint run fails and the conversation takes the failure up: a problem of the batch.
_LINT_TAKEN_UP = (
    ("user", "make the linter happy"),
    _LINT,
    _LINT_FAILS,
    ("assistant", "The lint error says exec.Command needs a context."),
)
