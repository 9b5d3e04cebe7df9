"""The topic tools against a real store: current span, a session's spans, similar topics, the tree."""

from __future__ import annotations

import pytest
from pydantic_ai import RunContext

from cairn.tools import ToolDeps
from cairn.tools.results import Notice, SpanInfo, SpanList, SpanNode, TopicHierarchy
from cairn.tools.topics import find_similar_topics, get_current_span, get_topic_hierarchy, list_session_spans
from tests.tools.memory import CLOSED, CYCLE, EMPTY, MAIN, OTHER, Memory

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_current_span_is_the_latest_open_one(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    span = await get_current_span(ctx, session=MAIN)
    assert isinstance(span, SpanInfo)
    assert (span.id, span.name, span.start_line, span.end_line, span.open) == (
        memory.spans["tools"],
        "Indexing agent tools",
        41,
        None,
        True,
    )
    assert span.summary == "Designing read-only tools for the indexing agent"
    assert span.ideas == 6
    other = await get_current_span(ctx, session=OTHER)
    assert isinstance(other, SpanInfo) and other.id == memory.spans["login"]


async def test_current_span_notices(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    closed = await get_current_span(ctx, session=CLOSED)
    assert isinstance(closed, Notice)
    assert "no open topic span" in closed.notice and "'Release checklist'" in closed.notice
    none = await get_current_span(ctx, session=EMPTY)
    assert isinstance(none, Notice) and "no topic spans yet" in none.notice
    unknown = await get_current_span(ctx, session="nope")
    assert isinstance(unknown, Notice) and "no session" in unknown.notice


async def test_list_session_spans_newest_first(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    result = await list_session_spans(ctx, session=MAIN)
    assert isinstance(result, SpanList)
    assert [(s.id, s.open, s.depth, s.parent_id) for s in result.spans] == [
        (memory.spans["tools"], True, 0, None),
        (memory.spans["vectors"], False, 1, memory.spans["storage"]),
        (memory.spans["storage"], False, 0, None),
    ]
    assert result.spans[1].end_line == 30
    empty = await list_session_spans(ctx, session=EMPTY)
    assert isinstance(empty, SpanList) and empty.spans == []


async def test_similar_topics_across_sessions(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    by_words = await find_similar_topics(ctx, topic_name="Chroma vector index")
    assert isinstance(by_words, SpanList)
    assert by_words.spans[0].id == memory.spans["vectors"]
    # No word in common with "Login button component": found by meaning, in the other session.
    by_meaning = await find_similar_topics(ctx, topic_name="sign-in UI", limit=3)
    assert isinstance(by_meaning, SpanList)
    assert by_meaning.spans[0].id == memory.spans["login"]
    assert by_meaning.spans[0].session == OTHER
    assert by_meaning.spans[0].similarity is not None
    assert len(by_meaning.spans) <= 3


@pytest.mark.parametrize("topic", ['"', "NEAR(", "name:Chroma", "*", "🙂", "AND OR NOT"])
async def test_similar_topics_never_fail_on_hostile_names(
    ctx: RunContext[ToolDeps], memory: Memory, topic: str
) -> None:
    assert isinstance(await find_similar_topics(ctx, topic_name=topic), SpanList)


async def test_similar_topics_empty_name(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    assert isinstance(await find_similar_topics(ctx, topic_name=" "), Notice)


def walk(nodes: list[SpanNode]) -> list[tuple[int, int]]:
    """(span id, depth in the tree) of every node, depth first."""
    found: list[tuple[int, int]] = []

    def visit(node: SpanNode, depth: int) -> None:
        found.append((node.id, depth))
        for child in node.children or []:
            visit(child, depth + 1)

    for node in nodes:
        visit(node, 0)
    return found


async def test_hierarchy_groups_sessions_under_projects(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    tree = await get_topic_hierarchy(ctx)
    assert isinstance(tree, TopicHierarchy)
    assert [(p.name, [s.id for s in p.sessions]) for p in tree.projects] == [
        ("cairn", [MAIN, CLOSED]),
        ("webapp", [OTHER]),
        ("(no project)", [CYCLE]),
    ]
    main = tree.projects[0].sessions[0]
    assert main.branch == "main"
    assert walk(main.spans) == [
        (memory.spans["storage"], 0),
        (memory.spans["vectors"], 1),
        (memory.spans["tools"], 0),
    ]


async def test_hierarchy_of_one_session(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    tree = await get_topic_hierarchy(ctx, session=OTHER)
    assert isinstance(tree, TopicHierarchy)
    assert [(p.name, p.path, [s.id for s in p.sessions]) for p in tree.projects] == [
        ("webapp", "/work/webapp", [OTHER])
    ]
    empty = await get_topic_hierarchy(ctx, session=EMPTY)
    assert isinstance(empty, TopicHierarchy) and empty.projects[0].sessions[0].spans == []
    assert isinstance(await get_topic_hierarchy(ctx, session="nope"), Notice)


async def test_hierarchy_survives_a_parent_cycle(ctx: RunContext[ToolDeps], memory: Memory) -> None:
    tree = await get_topic_hierarchy(ctx, session=CYCLE)
    assert isinstance(tree, TopicHierarchy)
    spans = walk(tree.projects[0].sessions[0].spans)
    assert sorted(span for span, _ in spans) == sorted([memory.spans["chicken"], memory.spans["egg"]])
