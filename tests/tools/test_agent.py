"""The tools inside a real pydantic-ai Agent run, driven by a scripted FunctionModel."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cairn.agent.schema import IndexResult
from cairn.tools import TOOLS, ToolDeps, indexing_toolset
from cairn.tools.results import EntityList, IdeaList, IdeaRelations, Notice, SpanInfo
from tests.tools.memory import MAIN, Memory, Seeded

pytestmark = pytest.mark.asyncio(loop_scope="module")

Turn = list[tuple[str, dict[str, Any]]]


def scripted(turns: list[Turn], seen: list[AgentInfo] | None = None) -> FunctionModel:
    """A model that makes each turn's tool calls in order, then returns an empty result."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        turn = sum(isinstance(message, ModelResponse) for message in messages)
        if turn < len(turns):
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in turns[turn]])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {})])

    return FunctionModel(respond)


async def run(seeded: Seeded, turns: list[Turn], **budget: int) -> tuple[ToolDeps, list[ModelMessage]]:
    deps = ToolDeps(db=seeded.store.db, vectors=seeded.store.vectors, **budget)
    agent = Agent(deps_type=ToolDeps, output_type=IndexResult, toolsets=[indexing_toolset()])
    result = await agent.run("index this batch", deps=deps, model=scripted(turns))
    assert result.output == IndexResult()
    return deps, result.all_messages()


def tool_parts(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """What the tools (not the output tool) sent back, retry prompts included."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name != "final_result"
    ]


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [part for part in tool_parts(messages) if part.outcome != "retried"]


async def test_the_model_sees_eleven_described_tools(seeded: Seeded) -> None:
    seen: list[AgentInfo] = []
    agent = Agent(deps_type=ToolDeps, output_type=IndexResult, toolsets=[indexing_toolset()])
    await agent.run("index", deps=ToolDeps(db=seeded.store.db, vectors=None), model=scripted([], seen))
    tools = {tool.name: tool for tool in seen[0].function_tools}
    assert set(tools) == {f.__name__ for f in TOOLS}
    for tool in tools.values():
        assert tool.description and len(tool.description) > 80, tool.name
        for name, schema in tool.parameters_json_schema["properties"].items():
            assert schema.get("description"), (tool.name, name)
    assert "ctx" not in json.dumps([t.parameters_json_schema for t in tools.values()])


async def test_tool_calls_in_an_agent_run(seeded: Seeded, memory: Memory) -> None:
    deps, messages = await run(
        seeded,
        [
            [
                ("get_current_span", {"session": MAIN}),
                ("get_open_questions", {"session": MAIN}),
                ("search_entities", {"name": "PydanticAI"}),
            ],
            [("search_ideas", {"query": 'vectors AND( "blobs', "session": MAIN})],
            [
                ("get_idea_relations", {"idea_id": memory.ideas["chroma"]}),
                ("get_idea_relations", {"idea_id": 0}),
            ],
        ],
    )
    parts = {(part.tool_name, part.tool_call_id): part for part in returns(messages)}
    by_tool: dict[str, list[Any]] = {}
    for (tool, _), part in parts.items():
        by_tool.setdefault(tool, []).append(part.content)
        text = part.model_response_str()
        assert "null" not in text and json.loads(text)
    assert isinstance(by_tool["get_current_span"][0], SpanInfo)
    assert [i.id for i in by_tool["get_open_questions"][0].ideas] == [
        memory.ideas["locked"],
        memory.ideas["duplicates"],
    ]
    entities = by_tool["search_entities"][0]
    assert isinstance(entities, EntityList) and entities.entities[0].canonical_name == "pydantic-ai"
    ideas = by_tool["search_ideas"][0]
    assert isinstance(ideas, IdeaList) and ideas.ideas[0].id == memory.ideas["blobs"]
    relations = sorted(by_tool["get_idea_relations"], key=lambda r: isinstance(r, Notice))
    assert isinstance(relations[0], IdeaRelations)
    assert relations[1] == Notice(notice="no idea with id 0")
    assert deps.tool_calls == 6


async def test_budget_notice_lets_the_run_finish(seeded: Seeded) -> None:
    turns = [[("get_open_todos", {"session": MAIN})] for _ in range(5)]
    deps, messages = await run(seeded, turns, max_tool_calls=3)
    contents = [part.content for part in returns(messages)]
    assert [isinstance(c, IdeaList) for c in contents] == [True, True, True, False, False]
    assert all(isinstance(c, Notice) and "budget used up" in c.notice for c in contents[3:])
    assert deps.tool_calls == 5


async def test_bad_arguments_are_retried_not_fatal(seeded: Seeded) -> None:
    deps, messages = await run(
        seeded,
        [
            [("search_ideas", {"query": "SQLite", "intent": "rumour"})],
            [("search_ideas", {"query": "SQLite", "intent": "problem"})],
        ],
    )
    retries = [part for part in tool_parts(messages) if part.outcome == "retried"]
    assert len(retries) == 1 and retries[0].tool_name == "search_ideas"
    assert "rumour" in retries[0].model_response_str()
    assert isinstance(returns(messages)[0].content, IdeaList)
    assert deps.tool_calls == 1  # an invalid call never reaches the tool
