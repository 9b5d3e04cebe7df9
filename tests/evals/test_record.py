"""Recording model traffic and replaying it: same scores and tokens with no model, or a clear refusal.

The offline indexer is recorded and replayed, and a scripted `FunctionModel` named like a paid model stands
in for a real one: it reports token usage, so replaying it must reproduce tokens and dollars too.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from cairn.config import Settings
from cairn.evals import indexing
from cairn.evals.dataset import Dataset, load_dataset
from cairn.evals.indexing import IndexingRun, run_indexing
from cairn.evals.record import RecordingError, ReplayMismatchError, read_recording
from cairn.prompts import load_prompt
from tests.evals import demo_labels, make_dataset
from tests.evals.helpers import GOLD_SPECS, _scripted, use_model

PAID = "anthropic:claude-haiku-4-5"


@pytest.fixture
def demo(tmp_path: Path) -> Dataset:
    return load_dataset(make_dataset(tmp_path / "dataset"))


def _same_results(a: IndexingRun, b: IndexingRun) -> None:
    assert a.metrics == b.metrics
    assert a.per_case == b.per_case
    assert a.misses == b.misses
    assert a.idea_map == b.idea_map
    for key in ("batches", "messages", "input_tokens", "output_tokens", "tool_calls", "requests", "dollars"):
        assert a.cost[key] == b.cost[key], key


async def test_offline_recorded_then_replayed_scores_identically(demo: Dataset, tmp_path: Path) -> None:
    recording = tmp_path / "offline.jsonl"
    recorded = await run_indexing(demo, tmp_path / "one", record=recording)
    header = read_recording(recording).header
    assert header["model"] == "offline" and header["prompt"] == load_prompt().id
    # Another directory: the store's paths are placeholders in the recording.
    replayed = await run_indexing(demo, tmp_path / "two", replay=recording)
    assert replayed.model == "offline" and replayed.replayed_from == str(recording)
    _same_results(recorded, replayed)
    assert str(tmp_path / "one") not in recording.read_text()


def _paid_stand_in(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Looks something up first, then answers like the scripted indexer; reports real-looking usage."""
    looked_up = any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
    if looked_up:
        response = _scripted(GOLD_SPECS)(messages, info)
    else:
        response = ModelResponse(parts=[ToolCallPart("search_ideas", {"query": "orders database locked"})])
    return dataclasses.replace(response, usage=RequestUsage(input_tokens=1000, output_tokens=100))


async def test_a_paid_model_replays_with_its_tokens_and_dollars(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = tmp_path / "paid.jsonl"
    with monkeypatch.context() as patch:
        use_model(patch, PAID, FunctionModel(_paid_stand_in))
        recorded = await run_indexing(demo, tmp_path / "one", model=PAID, record=recording)
    assert recorded.metrics["ideas"]["f1"] == 1.0
    assert recorded.cost["requests"] == 2 * recorded.cost["batches"]
    assert recorded.cost["input_tokens"] == 2000 * recorded.cost["batches"]
    assert recorded.cost["dollars"] == pytest.approx(
        recorded.cost["batches"] * (2000 * 1.0 + 200 * 5.0) / 1e6
    )

    def no_model(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a replay must not set up any model")

    monkeypatch.setattr(indexing, "resolve_model", no_model)
    replayed = await run_indexing(demo, tmp_path / "two", replay=recording)
    assert replayed.model == PAID
    _same_results(recorded, replayed)
    with pytest.raises(ReplayMismatchError, match="recorded with model 'anthropic:claude-haiku-4-5'"):
        await run_indexing(demo, tmp_path / "three", model="offline", replay=recording)


async def test_the_users_budget_caps_a_paid_eval_run_but_never_its_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_dataset(tmp_path / "dataset")
    two_cases = load_dataset(make_dataset(root, {**demo_labels(), "case": "again"}, case="again"))
    recording = tmp_path / "paid.jsonl"
    with monkeypatch.context() as patch:
        use_model(patch, PAID, FunctionModel(_paid_stand_in))
        recorded = await run_indexing(two_cases, tmp_path / "one", model=PAID, record=recording)
        assert recorded.cost["batches"] >= 2  # the budget is read before each batch
        tight = Settings.load(tmp_path / "user", daily_token_budget=1000)
        with pytest.raises(indexing.IndexingStoppedError, match="daily indexing budget spent"):
            await run_indexing(two_cases, tmp_path / "two", model=PAID, base_settings=tight)
    replayed = await run_indexing(two_cases, tmp_path / "three", replay=recording, base_settings=tight)
    _same_results(recorded, replayed)


async def test_a_changed_prompt_refuses_to_replay(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = tmp_path / "offline.jsonl"
    await run_indexing(demo, tmp_path / "one", record=recording)
    original = load_prompt("indexer")
    changed = dataclasses.replace(original, text=original.text + "\nAlso extract every greeting.\n")
    monkeypatch.setattr(indexing, "load_prompt", lambda *_args: changed)
    with pytest.raises(ReplayMismatchError) as caught:
        await run_indexing(demo, tmp_path / "two", replay=recording)
    message = str(caught.value)
    assert "request 1 differs from the recording at request.messages[0].instructions" in message
    assert "record the run again" in message
    assert "Also extract every greeting" in message


def _rewrite(path: Path, change: Any) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(entry) + "\n" for entry in change(lines)))


async def test_a_changed_tool_answer_names_the_request(demo: Dataset, tmp_path: Path) -> None:
    recording = tmp_path / "offline.jsonl"
    await run_indexing(demo, tmp_path / "one", record=recording)

    def tamper(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        last = lines[2]["request"]["messages"][-1]
        assert last["parts"][0]["part_kind"] == "tool-return"
        last["parts"][0]["content"] = {"notice": "an answer the tools no longer give"}
        return lines

    _rewrite(recording, tamper)
    with pytest.raises(
        ReplayMismatchError, match=r"request 2 differs .* at request\.messages\[2\]\.parts\[0\]"
    ):
        await run_indexing(demo, tmp_path / "two", replay=recording)


async def test_a_short_or_long_recording_is_a_mismatch(demo: Dataset, tmp_path: Path) -> None:
    recording = tmp_path / "offline.jsonl"
    await run_indexing(demo, tmp_path / "one", record=recording)
    full = recording.read_text()
    _rewrite(recording, lambda lines: lines[:-1])
    with pytest.raises(ReplayMismatchError, match="the recording ends after 1"):
        await run_indexing(demo, tmp_path / "two", replay=recording)
    recording.write_text(full)
    _rewrite(recording, lambda lines: [*lines, lines[-1]])
    with pytest.raises(ReplayMismatchError, match="the run made 2 requests, the recording holds 3"):
        await run_indexing(demo, tmp_path / "three", replay=recording)


def test_a_file_that_is_no_recording(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"kind": "exchange"}\n')
    with pytest.raises(RecordingError, match="no header line"):
        read_recording(path)
    path.write_text("not json\n")
    with pytest.raises(RecordingError, match="bad JSON"):
        read_recording(path)
