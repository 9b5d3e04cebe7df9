"""Candidate ideas of one session: what the learned model finds, what the session's structure shows,
deduplicated and linked to the files and things they are about.

A hedged hypothesis ("My first guess is…") is kept even when a later message refutes it: `inbatch` marks
it superseded by the correction, so the chain of reasoning stays findable while recall can leave the
guess out.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cairn.agent.offline.anchoring import anchored
from cairn.agent.offline.answers import OFFER, offer_replies
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.cues import (
    capitalise,
)
from cairn.agent.offline.deferred import put_off
from cairn.agent.offline.entities import (
    MAX_ENTITIES_PER_IDEA,
    Entity,
    entity_key,
    extract,
    resolve_file,
)
from cairn.agent.offline.failures import failure_cause, tool_error
from cairn.agent.offline.gazetteer import find_technologies
from cairn.agent.offline.given_up import given_up
from cairn.agent.offline.labels import with_labelled
from cairn.agent.offline.learned import learned_candidates
from cairn.agent.offline.naming import named_in_code
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import jaccard, overlap, shorten, term_set
from cairn.agent.offline.tool_fixes import tool_fixes
from cairn.agent.schema import DEFAULT_IMPORTANCE

MAX_TODO_WRITE_IDEAS = 5
# (overlap coefficient, Jaccard) at which two ideas of one intent say the same thing. Reports of work
# done share a project's vocabulary ("TODO app", "TypeScript") without repeating each other.
DUPLICATE = {"context": (0.75, 0.5)}
DUPLICATE_DEFAULT = (0.6, 0.35)
_ATTACH_FILES = frozenset({"decision", "solution", "conclusion", "context"})


# The assistant asking the person to choose ("Which way do you want to go?"), and the options it laid
# out as headings ("**Option 1: Fine-grained PAT (quick)**").
_CHOICE_ASKED = re.compile(
    r"\b(?:which|what) (?:way|one|option|approach)\b|\bwhich of\b|\bprefer\b|\w \bor\b [^?]+\?$", re.I
)
_OPTION_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?\*{0,2}(?P<name>(?:option|approach|choice)\b[^*\n]{0,80}?)"
    r"\*{0,2}[ \t]*:?[ \t]*$",
    re.I | re.M,
)
MAX_OPTIONS = 4


def _closing_choice(view: SessionView) -> Candidate | None:
    """The choice the batch ends on: the assistant's last words ask the person to choose and nobody
    has answered yet. It is the open question a teammate would pass on ("Which way do you want to go?
    (Option 1: Fine-grained PAT; Option 2: GitHub App)"), and it reads only with its options. A later
    batch that brings the answer settles it as any question is settled; SessionStart lists it only
    while it is the last thing the session said (`cairn.search.open_items.still_open`)."""
    spoken = [m for m in view.messages if m.role in ("user", "assistant") and m.prose]
    if not spoken or spoken[-1].role != "assistant":
        return None
    last = spoken[-1]
    question = last.prose[-1].text
    if not question.endswith("?") or OFFER.match(question) or not _CHOICE_ASKED.search(question):
        return None
    options = [m["name"].strip(" :") for m in _OPTION_HEADING.finditer(last.text)][:MAX_OPTIONS]
    content = question + (f" ({'; '.join(options)})" if options else "")
    if len(term_set(content)) < 3:
        return None  # "Which one?" with nothing to choose from says nothing
    return Candidate(
        view.session,
        view.source_file,
        last.line,
        "question",
        shorten(content),
        0.75,
        DEFAULT_IMPORTANCE["question"],
        last.turn,
        extract(content, view.known_files),
    )


def _todo_write_candidates(view: SessionView) -> list[Candidate]:
    """Open TodoWrite items: the ones still not completed at the end of the batch."""
    first: dict[str, tuple[int, int, str]] = {}
    status: dict[str, str] = {}
    for message in view.messages:
        for item in message.todo_items:
            key = item.content.lower()
            first.setdefault(key, (item.line, message.turn, item.content))
            status[key] = item.status
    out: list[Candidate] = []
    for key, (line, turn, content) in first.items():
        if status[key] != "completed" and len(out) < MAX_TODO_WRITE_IDEAS:
            text = shorten(capitalise(content))
            out.append(
                Candidate(
                    view.session,
                    view.source_file,
                    line,
                    "todo",
                    text,
                    0.8,
                    DEFAULT_IMPORTANCE["todo"],
                    turn,
                    extract(text, view.known_files),
                    origin="todo_write",
                )
            )
    return out


WRITTEN_FILES_PER_IDEA = 1


def _attach_written_files(view: SessionView, candidates: list[Candidate]) -> None:
    """Give decisions, solutions, conclusions and reports the file written in their turn nearest to
    them: the one the idea is about; a turn's other edits are its means (helpers, manifests, tests)."""
    written: dict[int, list[tuple[int, str]]] = {}
    for message in view.messages:
        for path in message.written:
            written.setdefault(message.turn, []).append(
                (message.line, resolve_file(path, view.known_files, view.root))
            )
    for candidate in candidates:
        if candidate.intent not in _ATTACH_FILES or candidate.turn not in written:
            continue
        nearest = sorted(written[candidate.turn], key=lambda item: (abs(item[0] - candidate.line), item[0]))
        have = {entity_key(e.name) for e in candidate.entities}
        added = 0
        for _line, name in nearest:
            if added == WRITTEN_FILES_PER_IDEA or len(candidate.entities) >= MAX_ENTITIES_PER_IDEA:
                break
            if entity_key(name) not in have:
                candidate.entities.append(Entity(name, "file"))
                have.add(entity_key(name))
                added += 1


MAX_CONCEPTS_PER_IDEA = 2


def project_name(view: SessionView) -> str | None:
    """The project's own name: its directory's, when the conversation names it outside a path or the
    directory sits right in a home directory (`/home/dev/ledger-api`, `/Users/ana/shop`)."""
    if not view.root:
        return None
    name = view.root.rsplit("/", 1)[-1]
    in_home = re.fullmatch(r"/(?:home|Users)/[^/]+/[^/]+|/root/[^/]+", view.root) is not None
    bare = re.compile(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])")
    named = any(
        bare.search(s.text) for m in view.messages if m.role in ("user", "assistant") for s in m.prose
    )
    return name if len(name) >= 3 and (in_home or named) else None


def _attach_session_entities(view: SessionView, candidates: list[Candidate]) -> None:
    """Link what the conversation works with to the ideas near where it is named: the project (to the
    first idea) and each technology its prose names (to the first idea at or after its first mention,
    else the last before); drop code names the conversation itself never writes. An idea's own text
    rarely repeats "Rust" or "Kubernetes", yet the session is about them; text support is still
    required, so nothing is linked that no message names."""
    if not candidates:
        return
    said = " ".join(s.text for m in view.messages if m.role in ("user", "assistant") for s in m.prose)
    for candidate in candidates:
        # A code name only a tool's output shows (an exception class in a traceback) is not what the
        # conversation is about.
        # A dotted path (`sa.false`, `backends.cudnn.benchmark`) is a place in code, not a thing.
        grounded = [
            e for e in candidate.entities if e.type != "concept" or (e.name in said and "." not in e.name)
        ]
        # An idea that lists code names ("ADMIN_USER / ADMIN_PASSWORD / LEDGER_ADMIN_USER …") is about
        # the first of them or two; the rest are its wording.
        concepts = [e for e in grounded if e.type == "concept"][:MAX_CONCEPTS_PER_IDEA]
        candidate.entities = [e for e in grounded if e.type != "concept" or e in concepts]
    first_named: dict[str, int] = {}
    for message in view.messages:
        if message.role in ("user", "assistant"):
            for tech in find_technologies(" ".join(s.text for s in message.prose)):
                first_named.setdefault(tech, message.line)
    wanted: list[tuple[int, Entity]] = [(line, Entity(t, "technology")) for t, line in first_named.items()]
    wanted += named_in_code(view)
    project = project_name(view)
    if project:
        wanted.insert(0, (candidates[0].line, Entity(project, "project")))
    for line, entity in wanted:
        if any(entity_key(e.name) == entity_key(entity.name) for c in candidates for e in c.entities):
            continue
        after = [c for c in candidates if c.line >= line]
        target = after[0] if after else candidates[-1]
        target.entities.append(entity)
    _one_name_per_thing(candidates)


def _one_name_per_thing(candidates: list[Candidate]) -> None:
    """One entity for one thing across the session's ideas: a class or component and the file named
    after it (`TrailDetailFragment`, `TrailDetailFragment.kt`) are the class, as the prose calls it;
    a technology whose name
    starts a longer one the session also names ("GitHub" beside "GitHub Actions") is the longer one."""
    linked = [e for c in candidates for e in c.entities]
    code_names = {e.name.removesuffix("()"): e for e in linked if e.type == "concept"}
    technologies = {e.name for e in linked if e.type == "technology"}
    longer = {
        name: other
        for name in technologies
        for other in technologies
        if other != name and other.startswith(name + " ")
    }
    for candidate in candidates:
        kept: list[Entity] = []
        for entity in candidate.entities:
            if entity.type == "file":
                entity = code_names.get(entity.name.rsplit("/", 1)[-1].split(".", 1)[0], entity)
            elif entity.type == "technology" and entity.name in longer:
                entity = Entity(longer[entity.name], "technology")
            if entity not in kept:
                kept.append(entity)
        candidate.entities = kept


def is_duplicate(intent: str, a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two ideas of `intent` with these terms say the same thing."""
    least_overlap, least_jaccard = DUPLICATE.get(intent, DUPLICATE_DEFAULT)
    return len(a & b) >= 3 and overlap(a, b) >= least_overlap and jaccard(a, b) >= least_jaccard


_ORIGIN_RANK = {"todo_write": 1, "tool_error": 0}  # any other origin: 2, what someone said


def _rank(candidate: Candidate) -> tuple[int, int]:
    """Which of two duplicates stays: what someone said over tool output, then the fuller statement."""
    return _ORIGIN_RANK.get(candidate.origin, 2), len(candidate.terms)


def _deduplicate(candidates: list[Candidate]) -> list[Candidate]:
    """Drop an idea that says what another idea of the same intent already says (the fuller one stays)."""
    kept: list[Candidate] = []
    for candidate in candidates:
        if candidate.changes_plan or candidate.refutation:  # a change of mind is never a repetition
            kept.append(candidate)
            continue
        terms = candidate.terms
        twin = next(
            (
                k
                for k in kept
                if k.intent == candidate.intent
                and len(terms & k.terms) >= 3
                and is_duplicate(candidate.intent, terms, k.terms)
            ),
            None,
        )
        if twin is None:
            kept.append(candidate)
        elif _rank(candidate) > _rank(twin):
            kept[kept.index(twin)] = candidate
    return sorted(kept, key=lambda c: (c.line, c.origin))


def _offer_replies(view: SessionView, candidates: list[Candidate]) -> list[Candidate]:
    """The person's decision on each offer the assistant closed a message with ("Want me to close
    it?" — "no, keep it open for the release"), when no idea of that message says it already; a
    refusal stands in for any idea read in the reply (`session_candidates` drops those)."""
    said: dict[int, list[str]] = {}
    for candidate in candidates:
        said.setdefault(candidate.line, []).append(candidate.content)
    return [
        Candidate(
            view.session,
            view.source_file,
            answer.message.line,
            answer.intent,
            answer.content,
            0.7,
            # A refusal is a decision about what not to do: it weighs as much as one.
            round(DEFAULT_IMPORTANCE["decision" if answer.declined else answer.intent] - 0.1, 2),
            answer.message.turn,
            extract(answer.content, view.known_files),
            origin="declined" if answer.declined else "answer",
        )
        for answer in offer_replies(view, said)
    ]


def session_candidates(view: SessionView) -> list[Candidate]:
    """Every candidate idea of one session, in line order: what the learned model finds in what was
    said (`cairn.agent.offline.learned`), and what the session's structure shows — failed tool calls
    the conversation takes up, the change that made one pass, open TodoWrite items, the person's
    answer to an offer, a choice the session ends on, work put off or given up."""
    candidates: list[Candidate] = with_labelled(view, learned_candidates(view))
    tool_problem_turns: set[int] = set()
    causes: dict[int, str] = {}
    for message in view.messages:
        if message.role != "tool":
            continue
        if message.failed and (cause := failure_cause(message.tool_output)) is not None:
            causes[message.line] = cause
        problem = tool_error(view, message) if message.turn not in tool_problem_turns else None
        if problem is not None:
            tool_problem_turns.add(message.turn)
            candidates.append(problem)
    replies = _offer_replies(view, candidates)
    refused = {c.line for c in replies if c.origin == "declined"}
    candidates = [c for c in candidates if c.line not in refused] + replies
    candidates.extend(tool_fixes(view, candidates, causes))
    candidates.extend(_todo_write_candidates(view))
    if (choice := _closing_choice(view)) is not None:
        candidates.append(choice)
    said = {m.line: m.timestamp for m in view.messages}
    ordered = anchored(view, put_off(view, given_up(view, sorted(candidates, key=lambda c: c.line), causes)))
    candidates = [replace(c, entities=list(c.entities), at=said.get(c.line)) for c in ordered]
    _attach_written_files(view, candidates)
    kept = _deduplicate(candidates)
    _attach_session_entities(view, kept)
    return kept
