"""Assemble the offline indexer's `IndexResult` from a batch and what the tools returned.

Every line in the result is a line of a message of that session's update, and every id is one a tool
returned in this run, or a key this result gives one of its own new ideas (prompt v2): a question
asked and answered within the batch, a todo set and done in it, a guess its correction replaces
(`inbatch`) name those ideas by key, and only the ideas another item names get one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.agent.entities import refused
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.extract import session_candidates
from cairn.agent.offline.inbatch import links as in_batch_links
from cairn.agent.offline.linking import (
    activated,
    answered_questions,
    completed_todos,
    entity_links,
    stored_duplicate,
)
from cairn.agent.offline.lookups import Known
from cairn.agent.offline.reading import SessionView, read_session
from cairn.agent.offline.relating import relations
from cairn.agent.offline.text import query_words
from cairn.agent.offline.topics import TopicState, topics
from cairn.agent.schema import (
    AnsweredQuestion,
    CompletedTodo,
    EntityRef,
    Idea,
    IdeaState,
    IndexBatch,
    IndexResult,
    Relation,
    SearchAssociation,
)
from cairn.store.vocab import OPENABLE_INTENTS

MAX_SEARCH_ASSOCIATIONS = 5


@dataclass
class SessionDraft:
    """One session update read and its candidate ideas (before stored duplicates are dropped)."""

    view: SessionView
    candidates: list[Candidate] = field(default_factory=list)


def read_batch(batch: IndexBatch) -> list[SessionDraft]:
    """Every update of the batch, read, with its candidate ideas."""
    drafts: list[SessionDraft] = []
    for update in batch.updates:
        view = read_session(update)
        drafts.append(SessionDraft(view, session_candidates(view)))
    return drafts


# The origins that are a state of the idea, not only where it came from.
_STATES: dict[str, IdeaState] = {"deferred": "deferred", "given_up": "given_up"}


def _idea(candidate: Candidate, key: str | None = None) -> Idea:
    return Idea(
        key=key,
        session=candidate.session,
        source_file=candidate.source_file,
        source_line=candidate.line,
        content=candidate.content,
        intent=candidate.intent,
        confidence=candidate.confidence,
        importance=candidate.importance,
        entities=[
            EntityRef(name=e.name[:200], type=e.type)
            for e in candidate.entities
            if not refused(e.name, e.type)  # a label or a piece of a path, whichever step found it
        ],
        state=_STATES.get(candidate.origin) if candidate.intent in OPENABLE_INTENTS else None,
    )


class _Keys:
    """Keys for the new ideas other items of the result name: `k1`, `k2`, … in the order first named."""

    def __init__(self) -> None:
        self._by_candidate: dict[int, str] = {}

    def of(self, candidate: Candidate) -> str:
        return self._by_candidate.setdefault(id(candidate), f"k{len(self._by_candidate) + 1}")

    def get(self, candidate: Candidate) -> str | None:
        return self._by_candidate.get(id(candidate))


@dataclass
class _Linked:
    """One update's in-batch links as result items."""

    answered: list[AnsweredQuestion] = field(default_factory=list)
    completed: list[CompletedTodo] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


def _in_batch(view: SessionView, kept: list[Candidate], keys: _Keys) -> _Linked:
    """Answers, completions and supersedes between `kept` ideas, naming them by key."""
    found = in_batch_links(view, kept)
    return _Linked(
        [
            AnsweredQuestion(question_idea_id=keys.of(q), answered_at_line=line, answer_summary=summary)
            for q, line, summary in found.answered
        ],
        [
            CompletedTodo(todo_idea_id=keys.of(t), completed_at_line=line, completion_summary=summary)
            for t, line, summary in found.completed
        ],
        [
            Relation(from_key=keys.of(new), to_idea_id=keys.of(old), relation_type=kind)
            for kind, pairs in (
                ("supersedes", found.supersedes),
                ("contradicts", found.contradicts),
                ("builds_on", found.builds_on),
            )
            for new, old in pairs
        ],
    )


def _associations(view: SessionView, ideas: list[Candidate]) -> list[SearchAssociation]:
    """A person's question or problem should find the files written while it was worked on."""
    found: list[SearchAssociation] = []
    for candidate in ideas:
        message = view.by_line(candidate.line)
        if message is None or message.role != "user" or candidate.intent not in ("question", "problem"):
            continue
        query = query_words(candidate.content)
        written = [path for m in view.messages if m.turn == candidate.turn for path in m.written]
        for path in dict.fromkeys(written):
            if query and len([a for a in found if a.query == query]) < 2:
                found.append(
                    SearchAssociation(
                        query=query[:500],
                        file_path=path,
                        reason=f"written while working on the {candidate.intent} at line {candidate.line}",
                    )
                )
    return found


def build_result(batch: IndexBatch, known: Known, *, conservative: bool = False) -> IndexResult:
    """The result for `batch` given the tools' answers in `known`.

    `conservative` leaves out everything that points at stored ids except the span a topic change
    closes: it is the answer to a rejected result, when the model gets one more try.
    """
    result = IndexResult()
    states: dict[str, TopicState | None] = {}
    referenced_ids: set[int | str] = set()
    everything: list[Candidate] = []
    seen_ideas: set[tuple[str, str, int, str]] = set()
    used_anywhere: set[int] = set()
    resolved_before: set[int | str] = set()  # a stored question or todo is resolved once, by the first update
    keys = _Keys()
    for draft in read_batch(batch):
        view = draft.view
        kept: list[Candidate] = []
        for candidate in draft.candidates:
            twin = stored_duplicate(candidate, known)
            key = (candidate.session, candidate.source_file, candidate.line, candidate.content)
            if twin is not None:
                referenced_ids.add(twin.id)
            elif key not in seen_ideas:
                seen_ideas.add(key)
                kept.append(candidate)
        answers, answer_relations = answered_questions(known, view, kept)
        answers = [a for a in answers if a.question_idea_id not in resolved_before]
        answer_relations = [r for r in answer_relations if r.to_idea_id not in resolved_before]
        done = [t for t in completed_todos(known, view) if t.todo_idea_id not in resolved_before]
        resolved_before |= {a.question_idea_id for a in answers} | {t.todo_idea_id for t in done}
        related = relations(kept, known, resolved_before)
        more = [a for a in related.answers if _resolvable(a, view.session, known, batch)]
        answers += more
        resolved_before |= {a.question_idea_id for a in more}
        inner = _in_batch(view, kept, keys)  # keys too when conservative: the same ideas, fewer links
        # A change of mind replaces what it names, and the nearest earlier decision or guess of the
        # same conversation is that: a stored one it also resembles is not replaced too.
        starts = {r.from_key for r in inner.relations if r.relation_type in ("supersedes", "contradicts")}
        changed_lines = {c.line for c in kept if keys.get(c) in starts}
        links = answer_relations + [
            r
            for r in related.relations
            if not (r.relation_type in ("supersedes", "contradicts") and r.from_line in changed_lines)
        ]
        span = known.spans.get(view.session)
        recent = [idea.content for idea in known.recent.get(view.session, [])]
        changes, updates, states[view.session] = topics(
            view, span, view.session in known.spans, kept, states.get(view.session), recent
        )
        result.ideas += [_idea(c, keys.get(c)) for c in kept]
        result.topic_changes += changes
        result.search_associations += _associations(view, kept)
        if not conservative:
            result.answered_questions += answers + inner.answered
            result.completed_todos += done + inner.completed
            result.relations += links + inner.relations
            result.entity_links += entity_links(kept, known)
            result.topic_updates += updates
            referenced_ids |= {a.question_idea_id for a in answers} | {t.todo_idea_id for t in done}
            referenced_ids |= {r.to_idea_id for r in links}
        used = (
            {c.line for c in kept}
            | {a.answered_at_line for a in answers + inner.answered}
            | {t.completed_at_line for t in done + inner.completed}
            | {c.start_line for c in changes}
        )
        result.skip_lines += [line for line in view.lines if line not in used]
        used_anywhere |= used
        everything += kept
    result.search_associations = result.search_associations[:MAX_SEARCH_ASSOCIATIONS]
    # `skip_lines` carries no session: a line number used by any update is never offered as skippable.
    result.skip_lines = sorted(set(result.skip_lines) - used_anywhere)
    if not conservative:
        result.activated_ideas = activated(everything, known, referenced_ids)
    return _only_known_ids(result, known)


def _resolvable(answer: AnsweredQuestion, session: str, known: Known, batch: IndexBatch) -> bool:
    """Whether the executor will find `answer`'s line in `session`, the session of the answering idea.

    It looks the line up in the question's own session when that session is in the batch, else in
    the one batch session that has the line. (The `answers` relation names its session and needs
    no such care; it marks the question answered as well.)
    """
    question = known.ideas.get(answer.question_idea_id)
    sessions = {u.session for u in batch.updates}
    if question is None or question.session == session:
        return question is not None
    if question.session in sessions:
        return False
    having = {u.session for u in batch.updates for m in u.messages if m.line == answer.answered_at_line}
    return having == {session}


def _only_known_ids(result: IndexResult, known: Known) -> IndexResult:
    """`result` without any id no tool returned: the heuristics only use such ids, and this makes it so.
    Keys (strings) name this result's own ideas and pass."""
    ideas: set[int | str] = {*known.idea_ids(), *(i.key for i in result.ideas if i.key is not None)}
    entities = set(known.entities)
    spans = {span.id for span in known.spans.values() if span is not None}
    result.answered_questions = [a for a in result.answered_questions if a.question_idea_id in ideas]
    result.completed_todos = [t for t in result.completed_todos if t.todo_idea_id in ideas]
    result.relations = [r for r in result.relations if r.to_idea_id in ideas]
    result.activated_ideas = [i for i in result.activated_ideas if i in ideas]
    result.entity_links = [link for link in result.entity_links if link.entity_id in entities]
    result.topic_updates = [u for u in result.topic_updates if u.span_id in spans]
    for change in result.topic_changes:
        if change.from_span_id is not None and change.from_span_id not in spans:
            change.from_span_id = None
    return result
