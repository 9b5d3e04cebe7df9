"""The offline indexer as a pydantic-ai `FunctionModel`: one round of lookups, then the result.

It is a state machine over the run's own message history, so it holds no state between calls and
two runs over the same batch and the same tool answers give the same result:

1. Only the batch prompt so far: read the batch, return the planned tool calls (or, when the agent
   offers no tools, go straight to step 3 with nothing known).
2. One round of tool answers present: return the follow-up calls (`get_entity_ideas` for entities
   the first round found), if the budget left allows any and there is something to ask.
3. Otherwise: build the `IndexResult` from the batch and the answers and return it as a call of the
   agent's output tool. Both lookup rounds together make at most `LOOKUP_BUDGET` calls.
4. The output was rejected (the history holds an earlier output call): return a conservative result
   without references to stored ids, and after a second rejection the ideas alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cairn.agent.offline.build import build_result, read_batch
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.lookups import (
    LOOKUP_BUDGET,
    Known,
    Lookup,
    absorb,
    follow_up,
    plan,
    tool_parameters,
)
from cairn.agent.schema import BATCH_OPEN, IndexBatch, IndexResult, extract_batch
from cairn.errors import Failure

OFFLINE_MODEL_NAME = "offline"


class OfflineModelError(Failure):
    """The run's prompt holds no transcript batch: the offline model only indexes batches."""


def _prompt_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "".join(item for item in part.content if isinstance(item, str))


def _batch_start(messages: Sequence[ModelMessage]) -> tuple[int, IndexBatch]:
    """Index of the request holding the (last) batch prompt, and the batch."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and BATCH_OPEN in (text := _prompt_text(part)):
                    return index, extract_batch(text)
    raise OfflineModelError("the offline model needs a prompt made by render_batch_prompt")


def known_from(messages: Sequence[ModelMessage], output_tool: str | None) -> Known:
    """What the tools answered to the calls made in `messages`."""
    calls: dict[str, ToolCallPart] = {}
    known = Known()
    for message in messages:
        for part in message.parts:
            if isinstance(message, ModelResponse) and isinstance(part, ToolCallPart):
                if part.tool_name != output_tool:
                    calls[part.tool_call_id] = part
            elif (
                isinstance(part, ToolReturnPart) and part.outcome == "success" and part.tool_call_id in calls
            ):
                call = calls[part.tool_call_id]
                absorb(known, call.tool_name, call.args_as_dict(), part.content)
    return known


def _calls(messages: Sequence[ModelMessage], output_tool: str | None) -> list[list[ToolCallPart]]:
    """The function tool calls of each model response in `messages`, one list per response that made any."""
    rounds = [
        [part for part in message.parts if isinstance(part, ToolCallPart) and part.tool_name != output_tool]
        for message in messages
        if isinstance(message, ModelResponse)
    ]
    return [calls for calls in rounds if calls]


def _output_attempts(messages: Sequence[ModelMessage], output_tool: str) -> int:
    return sum(
        1
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_name == output_tool
    )


def _output(result: IndexResult, info: AgentInfo, attempt: int) -> ModelResponse:
    if not info.output_tools:
        raise OfflineModelError("the offline model returns an IndexResult through an output tool")
    name = info.output_tools[0].name
    return ModelResponse(
        parts=[ToolCallPart(name, result.model_dump(mode="json"), f"offline_result_{attempt}")]
    )


def _lookups(response_id: str, lookups: list[Lookup]) -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart(lk.tool, lk.args, f"offline_{response_id}_{i}") for i, lk in enumerate(lookups)]
    )


async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The `FunctionModel` function: lookups first, the result once the tools have answered."""
    start, batch = _batch_start(messages)
    run = messages[start:]
    output_tool = info.output_tools[0].name if info.output_tools else None
    attempt = _output_attempts(run, output_tool) if output_tool else 0
    rounds = _calls(run, output_tool)
    tools = tool_parameters(info.function_tools)
    known = known_from(run, output_tool)
    if attempt == 0 and tools and len(rounds) < 2:
        drafts = read_batch(batch)
        candidates: dict[str, list[Candidate]] = {}
        for draft in drafts:
            candidates.setdefault(draft.view.session, []).extend(draft.candidates)
        if not rounds and (lookups := plan(list(candidates), candidates, tools)):
            return _lookups("1", lookups)
        everything = [c for found in candidates.values() for c in found]
        left = LOOKUP_BUDGET - sum(len(calls) for calls in rounds)
        if rounds and (lookups := follow_up(everything, known, tools, left)):
            return _lookups("2", lookups)
    result = build_result(batch, known, conservative=attempt >= 1)
    if attempt >= 2:
        result = IndexResult(ideas=result.ideas, skip_lines=result.skip_lines)
    return _output(result, info, attempt)


def offline_model() -> FunctionModel:
    """cairn's zero-cost indexer: deterministic heuristics behind the same agent, tools and executor."""
    return FunctionModel(respond, model_name=OFFLINE_MODEL_NAME)
