"""What the offline indexer asks the read-only tools, and what it makes of their answers.

Two rounds, both within `LOOKUP_BUDGET`:

1. A fixed priority list cut at the budget: each session's basics first (its current span, which
   topic changes depend on; its open questions and todos; its recent ideas, for duplicates, topics
   and links to its earlier batches), then `search_ideas` for the batch's strongest new ideas
   (change-of-mind decisions, then decisions, conclusions, solutions, problems: what relations start
   from), then `search_entities` for the entities the batch names, specific ones (files,
   identifiers) before technologies. When `get_entity_ideas` is offered, the cut leaves room for
   round 2.
2. `get_entity_ideas` for the entities round 1 found that the batch names most specifically: the
   ideas linked to the same file or identifier are the likeliest relatives of the new ones, in any
   session, even when they share few words. Skipped when the tools already reported a spent budget.

Only tools the agent actually offers are called, with only the parameters their schemas declare, so
a toolset that lacks a tool or a parameter narrows the plan instead of failing the run. Nothing here
depends on vectors: with or without them `search_ideas` answers in the same shape, and what its
answers are worth is decided in `relating` from shared words and entities, not from its ranking.

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

from cairn.agent.offline.candidate import TOOL_FAILURE_LEAD, Candidate
from cairn.agent.offline.entities import same_entity
from cairn.agent.offline.text import query_words

LOOKUP_BUDGET = 11
"""Tool calls one run makes at most; with the final output call a run stays within 12."""
MAX_SESSIONS_LOOKED_UP = 4
MAX_IDEA_SEARCHES = 3
MAX_ENTITY_SEARCHES = 3
# Round 2 at most: two entities' ideas (ten each) are enough candidates for two relations per idea,
# and with a single session's four basics and three idea searches they leave two entity searches.
MAX_ENTITY_IDEA_LOOKUPS = 2
OPEN_ITEMS_LIMIT = 10
RECENT_IDEAS_LIMIT = 20
SEARCH_LIMIT = 5
ENTITY_IDEAS_LIMIT = 10
# What relations start from, in the order searches are spent on them (a change of mind first).
_SEARCH_INTENTS = {"decision": 0, "conclusion": 1, "solution": 2, "problem": 3}
# Files and code identifiers name one thing; a project less so; a technology is in every idea of a stack.
_SPECIFICITY = {"file": 0, "concept": 0, "project": 1, "technology": 2, "person": 3}


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
    at: str | None = None  # when it was said (ISO 8601), if the tool said


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
    ideas: int | None = field(default=None, compare=False)  # how many ideas link to it, if the tool said


@dataclass
class Known:
    """Everything the tools said in this run, by what it is."""

    spans: dict[str, KnownSpan | None] = field(default_factory=dict)  # only sessions that were asked
    open_questions: dict[str, list[KnownIdea]] = field(default_factory=dict)
    open_todos: dict[str, list[KnownIdea]] = field(default_factory=dict)
    recent: dict[str, list[KnownIdea]] = field(default_factory=dict)
    ideas: dict[int, KnownIdea] = field(default_factory=dict)  # every idea any tool returned
    entities: dict[int, KnownEntity] = field(default_factory=dict)
    entity_ideas: dict[int, tuple[int, ...]] = field(default_factory=dict)  # entity id -> its ideas' ids
    exhausted: bool = False  # a tool answered that the run's tool budget is used up

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
    """Entity (name, type) pairs the batch's ideas name: specific ones first, then the ones their text names.

    A file an idea only carries because its turn wrote it is usually new in this very batch; a file
    (or identifier) the text talks about is likelier to be known already, so it is searched first.
    """
    named: Counter[tuple[str, str]] = Counter()
    counts: Counter[tuple[str, str]] = Counter()
    for candidate in candidates:
        text = candidate.content.lower()
        for entity in candidate.entities:
            pair = (entity.name, entity.type)
            counts[pair] += 1
            named[pair] += int(entity.name.rsplit("/", 1)[-1].lower() in text)
    return sorted(
        counts,
        key=lambda pair: (_SPECIFICITY.get(pair[1], 4), -named[pair], -counts[pair], pair[0].lower()),
    )


def search_query(candidate: Candidate) -> str:
    """The words to search stored ideas by: the idea's own, without the lead every tool failure shares."""
    return query_words(TOOL_FAILURE_LEAD.sub("", candidate.content))


def _search_targets(candidates: list[Candidate]) -> list[Candidate]:
    """The new ideas worth a search: change-of-mind cues first, then by intent, what people said first."""
    pool = [c for c in candidates if c.intent in _SEARCH_INTENTS and not c.hypothesis]
    return sorted(
        pool,
        key=lambda c: (
            not (c.changes_plan or c.refutation),
            c.origin == "tool_error",
            _SEARCH_INTENTS[c.intent],
            -c.importance,
            c.line,
        ),
    )


def _cut(wanted: Iterable[Lookup | None], budget: int) -> list[Lookup]:
    """The distinct lookups of `wanted`, in order, at most `budget` of them."""
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


def plan(
    sessions: list[str],
    candidates: dict[str, list[Candidate]],
    tools: Mapping[str, Iterable[str]],
    budget: int = LOOKUP_BUDGET,
) -> list[Lookup]:
    """The first round's tool calls, best first, at most `budget` of them (less the room kept for round 2)."""
    looked = sessions[:MAX_SESSIONS_LOOKED_UP]
    everything = [c for s in sessions for c in candidates.get(s, [])]
    wanted: list[Lookup | None] = []
    wanted += [_params(tools, "get_current_span", {"session": s}) for s in looked]
    wanted += [
        _params(tools, "get_open_questions", {"session": s, "limit": OPEN_ITEMS_LIMIT}) for s in looked
    ]
    wanted += [_params(tools, "get_open_todos", {"session": s, "limit": OPEN_ITEMS_LIMIT}) for s in looked]
    wanted += [
        _params(tools, "get_recent_ideas", {"session": s, "limit": RECENT_IDEAS_LIMIT}) for s in looked
    ]
    queries = dict.fromkeys(q for c in _search_targets(everything) if (q := search_query(c)))
    wanted += [_params(tools, "search_ideas", {"query": q, "limit": SEARCH_LIMIT}) for q in queries][
        :MAX_IDEA_SEARCHES
    ]
    # Typed only for files: a technology stored as a concept (or the reverse) is still the same thing.
    wanted += [
        _params(tools, "search_entities", {"name": name, "type": kind if kind == "file" else None})
        for name, kind in _entity_counts(everything)
    ][:MAX_ENTITY_SEARCHES]
    first = _cut(wanted, budget)
    entity_searches = sum(1 for lookup in first if lookup.tool == "search_entities")
    if "get_entity_ideas" in tools and entity_searches:
        first = _cut(wanted, budget - min(MAX_ENTITY_IDEA_LOOKUPS, entity_searches))
    return first


def follow_up(
    candidates: list[Candidate], known: Known, tools: Mapping[str, Iterable[str]], budget: int
) -> list[Lookup]:
    """Round 2: `get_entity_ideas` for the found entities the batch names, most specific first.

    An entity the tools say no idea links to is not asked about; nor is anything once a tool has
    reported the run's budget spent, or when the first round left no room.
    """
    if known.exhausted or budget <= 0:
        return []
    stored = sorted(known.entities.values(), key=lambda e: e.id)
    chosen: list[int] = []
    for name, kind in _entity_counts(candidates):
        same = [e for e in stored if same_entity(name, kind, e.name, e.type, e.aliases) and e.ideas != 0]
        # The entity spelled exactly so first ("app/page.tsx" before a bare "page.tsx").
        same.sort(key=lambda e: (e.name.lower() != name.lower(), e.id))
        if same and same[0].id not in chosen:
            chosen.append(same[0].id)
    wanted = [
        _params(tools, "get_entity_ideas", {"entity_id": ident, "limit": ENTITY_IDEAS_LIMIT})
        for ident in chosen
    ]
    return _cut(wanted, min(budget, MAX_ENTITY_IDEA_LOOKUPS))


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
    at = node.get("at")
    return KnownIdea(
        ident,
        node["intent"],
        node["content"],
        node.get("session") or node.get("session_id"),
        line if isinstance(line, int) else None,
        superseded=node.get("superseded_by") is not None,
        answered=node.get("answered_at") is not None,
        completed=node.get("completed_at") is not None,
        at=at if isinstance(at, str) else None,
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
    return KnownEntity(ident, name, node["type"], aliases, _count(node.get("ideas")))


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def absorb(known: Known, tool: str, args: Mapping[str, Any], content: Any) -> None:
    """Add what one tool call returned to `known`; a notice (budget used, nothing found) adds no ideas."""
    data = jsonable(content)
    session = args.get("session") if isinstance(args.get("session"), str) else None
    notice = data if isinstance(data, str) else data.get("notice") if isinstance(data, dict) else None
    if isinstance(notice, str):
        known.exhausted = known.exhausted or "budget" in notice.lower()
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
    elif tool == "get_entity_ideas" and isinstance(data, dict) and isinstance(data.get("entity"), dict):
        entity = _entity(data["entity"])
        if entity is not None:
            known.entities.setdefault(entity.id, entity)
            known.entity_ideas[entity.id] = tuple(idea.id for idea in ideas)


def tool_parameters(function_tools: Iterable[Any]) -> dict[str, list[str]]:
    """Tool name -> parameter names, from pydantic-ai `ToolDefinition`s."""
    found: dict[str, list[str]] = {}
    for definition in function_tools:
        schema = getattr(definition, "parameters_json_schema", None) or {}
        found[definition.name] = sorted((schema.get("properties") or {}).keys())
    return found
