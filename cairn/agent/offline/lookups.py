"""What the offline indexer asks the read-only tools, and what it makes of their answers.

The plan is a fixed priority list cut at a budget: each session's current span first (topic changes
depend on it), then its open questions and todos, then searches for earlier decisions the batch's
decisions may supersede, then existing entities the batch names, then recent ideas for duplicates.
Only tools the agent actually offers are called, with only the parameters their schemas declare, so
a toolset that lacks a tool or a parameter narrows the plan instead of failing the run.

Answers are read by shape, not by class: any mapping with `id`, `intent` and `content` is an idea,
with `id`, `name` and `start_line` a span, with `id`, `canonical_name` (or `name`) and `type` an
entity. A budget notice or any other text is ignored.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python

from cairn.agent.offline.extract import Candidate
from cairn.agent.offline.text import query_words

LOOKUP_BUDGET = 11
"""Tool calls one run makes at most; with the final output call a run stays within 12."""
MAX_SESSIONS_LOOKED_UP = 4
MAX_IDEA_SEARCHES = 3
MAX_ENTITY_SEARCHES = 3
OPEN_ITEMS_LIMIT = 10
RECENT_IDEAS_LIMIT = 20
SEARCH_LIMIT = 5


@dataclass(frozen=True)
class Lookup:
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class KnownIdea:
    id: int
    intent: str
    content: str
    session: str | None = None
    line: int | None = None
    superseded: bool = False
    answered: bool = False
    completed: bool = False


@dataclass(frozen=True)
class KnownSpan:
    id: int
    session: str | None
    name: str
    summary: str
    start_line: int
    open: bool = True


@dataclass(frozen=True)
class KnownEntity:
    id: int
    name: str
    type: str
    aliases: tuple[str, ...] = ()


@dataclass
class Known:
    """Everything the tools said in this run, by what it is."""

    spans: dict[str, KnownSpan | None] = field(default_factory=dict)  # only sessions that were asked
    open_questions: dict[str, list[KnownIdea]] = field(default_factory=dict)
    open_todos: dict[str, list[KnownIdea]] = field(default_factory=dict)
    recent: dict[str, list[KnownIdea]] = field(default_factory=dict)
    ideas: dict[int, KnownIdea] = field(default_factory=dict)  # every idea any tool returned
    entities: dict[int, KnownEntity] = field(default_factory=dict)

    def idea_ids(self) -> set[int]:
        """Every idea id a tool returned in this run, whichever list it came in."""
        listed = [*self.open_questions.values(), *self.open_todos.values(), *self.recent.values()]
        return set(self.ideas) | {idea.id for ideas in listed for idea in ideas}


def _params(tools: Mapping[str, Iterable[str]], tool: str, args: dict[str, Any]) -> Lookup | None:
    """The call, with only the parameters the tool declares; None if the tool or its key parameter is missing.

    The first argument is the key one (the session, query or name the call is about).
    """
    if tool not in tools:
        return None
    allowed = set(tools[tool])
    if next(iter(args)) not in allowed:
        return None
    return Lookup(tool, {k: v for k, v in args.items() if k in allowed and v is not None})


def _entity_counts(candidates: list[Candidate]) -> list[tuple[str, str]]:
    """Entity (name, type) pairs by how often the batch's ideas name them: concepts and technologies first."""
    counts: Counter[tuple[str, str]] = Counter()
    for candidate in candidates:
        for entity in candidate.entities:
            counts[(entity.name, entity.type)] += 1
    rank = {"technology": 0, "concept": 1, "project": 2, "person": 3, "file": 4}
    return sorted(counts, key=lambda pair: (-counts[pair], rank.get(pair[1], 5), pair[0].lower()))


def _search_targets(candidates: list[Candidate]) -> list[Candidate]:
    """Decisions and conclusions worth checking against earlier ones: change-of-mind cues first."""
    pool = [c for c in candidates if c.intent in ("decision", "conclusion") and not c.hypothesis]
    return sorted(pool, key=lambda c: (not (c.supersession or c.refutation), c.intent != "decision", c.line))


def plan(
    sessions: list[str],
    candidates: dict[str, list[Candidate]],
    tools: Mapping[str, Iterable[str]],
    budget: int = LOOKUP_BUDGET,
) -> list[Lookup]:
    """The tool calls of the first step, best first, at most `budget` of them."""
    looked = sessions[:MAX_SESSIONS_LOOKED_UP]
    everything = [c for s in sessions for c in candidates.get(s, [])]
    wanted: list[Lookup | None] = []
    wanted += [_params(tools, "get_current_span", {"session": s}) for s in looked]
    wanted += [
        _params(tools, "get_open_questions", {"session": s, "limit": OPEN_ITEMS_LIMIT}) for s in looked
    ]
    wanted += [_params(tools, "get_open_todos", {"session": s, "limit": OPEN_ITEMS_LIMIT}) for s in looked]
    searches = [
        _params(tools, "search_ideas", {"query": query_words(c.content), "limit": SEARCH_LIMIT})
        for c in _search_targets(everything)
        if query_words(c.content)
    ]
    # Typed only for files: a technology stored as a concept (or the reverse) is still the same thing.
    entity_searches = [
        _params(tools, "search_entities", {"name": name, "type": kind if kind == "file" else None})
        for name, kind in _entity_counts(everything)
    ]
    wanted += searches[:MAX_IDEA_SEARCHES] + entity_searches[:MAX_ENTITY_SEARCHES]
    wanted += [
        _params(tools, "get_recent_ideas", {"session": s, "limit": RECENT_IDEAS_LIMIT}) for s in looked
    ]
    plan_: list[Lookup] = []
    seen: set[str] = set()
    for lookup in wanted:
        if lookup is None:
            continue
        key = lookup.tool + json.dumps(lookup.args, sort_keys=True)
        if key not in seen and len(plan_) < budget:
            seen.add(key)
            plan_.append(lookup)
    return plan_


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def jsonable(content: Any) -> Any:
    """A tool return as plain JSON data (pydantic models dumped; JSON text parsed; other text kept)."""
    data = to_jsonable_python(content, fallback=str)
    if isinstance(data, str):
        try:
            return json.loads(data)
        except ValueError:
            return data
    return data


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _idea(node: dict[str, Any]) -> KnownIdea | None:
    ident = _int(node.get("id"))
    if ident is None or not isinstance(node.get("content"), str) or not isinstance(node.get("intent"), str):
        return None
    line = node.get("line", node.get("source_line"))
    return KnownIdea(
        ident,
        node["intent"],
        node["content"],
        node.get("session") or node.get("session_id"),
        line if isinstance(line, int) else None,
        superseded=node.get("superseded_by") is not None,
        answered=node.get("answered_at") is not None,
        completed=node.get("completed_at") is not None,
    )


def _span(node: dict[str, Any]) -> KnownSpan | None:
    ident = _int(node.get("id"))
    if ident is None or not isinstance(node.get("name"), str) or not isinstance(node.get("start_line"), int):
        return None
    return KnownSpan(
        ident,
        node.get("session") or node.get("session_id"),
        node["name"],
        node.get("summary") or "",
        node["start_line"],
        bool(node.get("open", node.get("end_line") is None)),
    )


def _entity(node: dict[str, Any]) -> KnownEntity | None:
    ident = _int(node.get("id"))
    name = node.get("canonical_name", node.get("name"))
    if (
        ident is None
        or not isinstance(name, str)
        or not isinstance(node.get("type"), str)
        or "content" in node
    ):
        return None
    aliases = tuple(a for a in node.get("aliases") or () if isinstance(a, str))
    return KnownEntity(ident, name, node["type"], aliases)


def absorb(known: Known, tool: str, args: Mapping[str, Any], content: Any) -> None:
    """Add what one tool call returned to `known`; a notice (budget used, nothing found) adds no ideas."""
    data = jsonable(content)
    session = args.get("session") if isinstance(args.get("session"), str) else None
    notice = data if isinstance(data, str) else data.get("notice") if isinstance(data, dict) else None
    if isinstance(notice, str):
        # `get_current_span` answers "no (open) span" with a notice; only a budget notice leaves it unknown.
        if tool == "get_current_span" and session is not None and "budget" not in notice.lower():
            known.spans[session] = None
        return
    nodes = list(_walk(data))
    ideas = [i for i in (_idea(n) for n in nodes) if i is not None]
    for idea in ideas:
        known.ideas.setdefault(idea.id, idea)
    if tool == "get_current_span" and session is not None:
        spans = [s for s in (_span(n) for n in nodes) if s is not None and s.open]
        known.spans[session] = spans[0] if spans else None
    elif tool == "get_open_questions" and session is not None:
        known.open_questions[session] = [
            i for i in ideas if not i.answered and i.intent in ("question", "problem")
        ]
    elif tool == "get_open_todos" and session is not None:
        known.open_todos[session] = [i for i in ideas if not i.completed and i.intent == "todo"]
    elif tool == "get_recent_ideas" and session is not None:
        known.recent[session] = ideas
    elif tool == "search_entities":
        for entity in (_entity(n) for n in nodes):
            if entity is not None:
                known.entities.setdefault(entity.id, entity)


def tool_parameters(function_tools: Iterable[Any]) -> dict[str, list[str]]:
    """Tool name -> parameter names, from pydantic-ai `ToolDefinition`s."""
    found: dict[str, list[str]] = {}
    for definition in function_tools:
        schema = getattr(definition, "parameters_json_schema", None) or {}
        found[definition.name] = sorted((schema.get("properties") or {}).keys())
    return found
