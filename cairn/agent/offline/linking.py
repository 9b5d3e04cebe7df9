"""Links from the batch to what the memory holds: answers, completed todos, duplicates, entities, activation.

All matching is by shared content terms (stemmed, stopwords removed), with thresholds set to err on
the side of no link: a wrong answer closes a question that is still open, while a missed one only
leaves it open. Relations between ideas are decided in `relating`. Limitation: two phrasings of one
thing with no words in common ("Postgres" vs "the relational DB") are not linked; a semantic
`search_ideas` result still counts only when its words overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.agent.offline.candidate import Candidate, idea_terms
from cairn.agent.offline.cues import COMPLETION, is_preamble
from cairn.agent.offline.entities import same_entity
from cairn.agent.offline.extract import is_duplicate
from cairn.agent.offline.lookups import Known, KnownEntity, KnownIdea
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import coverage, jaccard, overlap, shorten, term_set
from cairn.agent.schema import AnsweredQuestion, CompletedTodo, EntityLink, Relation

ANSWER_COVERAGE = 0.4
STORED_DUPLICATE_JACCARD = 0.6
# A question of fewer terms ("What should we do, WAL mode?") matches too much to be answered by words alone.
MIN_QUESTION_TERMS = 3
TODO_COVERAGE = 0.5
ACTIVATION_OVERLAP = 0.5
MAX_ACTIVATED = 20
_ANSWERING = {
    "question": ("conclusion", "decision", "solution", "context"),
    "problem": ("solution", "conclusion"),
}


@dataclass(frozen=True)
class Link:
    """One line of the batch that resolves a stored question or todo, and what it says."""

    line: int
    summary: str
    candidate: Candidate | None = None


def _statements(view: SessionView) -> list[tuple[int, str, frozenset[str]]]:
    """(line, sentence, terms) of the session's statements: no questions, no preambles."""
    found: list[tuple[int, str, frozenset[str]]] = []
    for message in view.messages:
        if message.role not in ("assistant", "user"):
            continue
        for segment in message.prose:
            if not segment.text.endswith("?") and not is_preamble(segment.text):
                found.append((message.line, segment.text, term_set(segment.text)))
    return found


def find_answer(question: KnownIdea, candidates: list[Candidate]) -> Link | None:
    """The new idea that best answers a stored question or problem, by shared terms.

    Only ideas of an answering intent count (a conclusion, decision or solution; for a question also
    a report of work done): a bare statement that merely mentions the question's words is no answer.
    """
    wanted = idea_terms(question.content)
    if len(wanted) < MIN_QUESTION_TERMS:
        return None
    intents = _ANSWERING.get(question.intent, _ANSWERING["question"])
    scored = [
        (coverage(wanted, c.terms), c)
        for c in candidates
        if c.intent in intents and len(wanted & c.terms) >= 2 and coverage(wanted, c.terms) >= ANSWER_COVERAGE
    ]
    if not scored:
        return None
    best = max(scored, key=lambda item: (round(item[0], 3), item[1].importance, -item[1].line))[1]
    return Link(best.line, best.content, best)


def find_completion(todo: KnownIdea, view: SessionView) -> Link | None:
    """The first completed TodoWrite item, else statement with a completion cue, that matches the todo."""
    wanted = idea_terms(todo.content)
    if len(wanted) < 2:
        return None
    for message in view.messages:
        for item in message.todo_items:
            terms = term_set(item.content)
            if item.status == "completed" and len(wanted & terms) >= 2 and overlap(wanted, terms) >= 0.6:
                return Link(item.line, shorten(item.content))
    for line, sentence, terms in _statements(view):
        if (
            COMPLETION.search(sentence)
            and len(wanted & terms) >= 2
            and coverage(wanted, terms) >= TODO_COVERAGE
        ):
            return Link(line, shorten(sentence))
    return None


def answered_questions(
    known: Known, view: SessionView, candidates: list[Candidate]
) -> tuple[list[AnsweredQuestion], list[Relation]]:
    """The session's stored open questions (and problems) this batch answers, with `answers` relations."""
    answers: list[AnsweredQuestion] = []
    relations: list[Relation] = []
    for question in known.open_questions.get(view.session, []):
        link = find_answer(question, candidates)
        if link is None:
            continue
        answers.append(
            AnsweredQuestion(
                question_idea_id=question.id, answered_at_line=link.line, answer_summary=link.summary
            )
        )
        if link.candidate is not None and link.candidate.intent != "context":
            relations.append(
                Relation(
                    from_session=view.session,
                    from_line=link.line,
                    to_idea_id=question.id,
                    relation_type="answers",
                )
            )
    return answers, relations


def completed_todos(known: Known, view: SessionView) -> list[CompletedTodo]:
    """The session's stored open todos this batch completes (a finished TodoWrite item or a report)."""
    done: list[CompletedTodo] = []
    for todo in known.open_todos.get(view.session, []):
        link = find_completion(todo, view)
        if link is not None:
            done.append(
                CompletedTodo(
                    todo_idea_id=todo.id, completed_at_line=link.line, completion_summary=link.summary
                )
            )
    return done


def stored_duplicate(candidate: Candidate, known: Known) -> KnownIdea | None:
    """A stored idea that already says what `candidate` says (then the candidate is not added again).

    Stricter than the in-batch check: a stored idea may be from another session that merely shares a
    project's words. A change of mind ("instead of", "that guess was wrong") is never a duplicate.
    """
    if candidate.changes_plan or candidate.refutation:
        return None
    for existing in sorted(known.ideas.values(), key=lambda i: i.id):
        old = idea_terms(existing.content)
        if (
            existing.intent == candidate.intent
            and is_duplicate(candidate.intent, candidate.terms, old)
            and jaccard(candidate.terms, old) >= STORED_DUPLICATE_JACCARD
        ):
            return existing
    return None


def _same(name: str, kind: str, entity: KnownEntity) -> bool:
    return same_entity(name, kind, entity.name, entity.type, entity.aliases)


def entity_links(candidates: list[Candidate], known: Known) -> list[EntityLink]:
    """Links from new ideas to existing entities naming the same thing (case, punctuation, spelling aside)."""
    links: list[EntityLink] = []
    seen: set[tuple[int, int]] = set()
    stored = sorted(known.entities.values(), key=lambda e: e.id)
    for candidate in candidates:
        for entity in candidate.entities:
            match = next((e for e in stored if _same(entity.name, entity.type, e)), None)
            if match is not None and (candidate.line, match.id) not in seen:
                seen.add((candidate.line, match.id))
                links.append(
                    EntityLink(idea_source_line=candidate.line, entity_id=match.id, entity_name=match.name)
                )
    return links


def activated(candidates: list[Candidate], known: Known, referenced: set[int | str]) -> list[int]:
    """Stored ideas the batch is about: the ones it answers, completes or relates to, or clearly restates."""
    chosen = set(referenced)
    for existing in known.ideas.values():
        terms = idea_terms(existing.content)
        if any(
            len(terms & c.terms) >= 3 and overlap(terms, c.terms) >= ACTIVATION_OVERLAP for c in candidates
        ):
            chosen.add(existing.id)
    return sorted(chosen & known.idea_ids())[:MAX_ACTIVATED]
