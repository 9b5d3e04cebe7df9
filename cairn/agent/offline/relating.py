"""Relations from the batch's new ideas to stored ideas the tools returned, decided from what each idea is.

The rules, first match wins (`relation_type`), err on the side of no relation: a wrong `supersedes`
hides a valid decision and a wrong `answers` closes an open problem, while a missed relation only
leaves two ideas side by side. Evidence is shared words and shared specific entities (`evidence`);
a technology alone never relates two ideas, and words are counted without technology names except
for a change of mind (whose subject is often the technology).

1. **supersedes** — a new decision with a change-of-mind cue ("instead of", "switch to") and a
   stored decision sharing at least `CHANGE_MIN_SHARED` terms and `CHANGE_OVERLAP` of them.
2. **contradicts** — a new refutation ("that guess was wrong") of a stored conclusion or decision,
   by the same measure.
3. **answers** — a new solution or conclusion (for a question also a decision) about a stored open
   problem or question that shares a specific entity (at least a bare file name) and
   `ANSWER_MIN_SHARED` more terms. Term-only answers stay with `linking.find_answer`, which looks
   at the session's own open questions only.
4. **builds_on** — two constructive ideas (decision, solution, conclusion, report of work done) about
   the same file or identifier with one more word in common (the same file touched again), or
   two ideas of one intent (not reports) saying much the same (`TERMS_ONLY_MIN_SHARED`,
   `BUILDS_ON_OVERLAP`).
5. **relates_to** — a shared file or identifier and one more word, a shared bare file name and
   `BARE_MIN_SHARED` words at `BARE_OVERLAP`, or (not for reports, whose project vocabulary
   overlaps without meaning anything) `TERMS_ONLY_MIN_SHARED` words at `RELATES_OVERLAP`.

Rules 1-4 have a direction: they need the stored idea said no later than the new one; otherwise
only relates_to can hold. New questions and todos start no relation (a todo is completed, a question
answered, elsewhere) — except a plan put off (`deferred`), which still supersedes what it changed —
and a new problem relates to a stored non-problem only through a specific entity. Each new idea gets
at most `MAX_RELATIONS_PER_IDEA`, strongest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.agent.offline.candidate import Candidate, idea_terms
from cairn.agent.offline.evidence import (
    BARE_FILE_ANCHOR,
    FULL_ANCHOR,
    Evidence,
    StoredEntities,
    evidence,
    said_before,
)
from cairn.agent.offline.lookups import Known, KnownIdea
from cairn.agent.offline.text import overlap, term_set
from cairn.agent.schema import AnsweredQuestion, Relation, RelationType

# A change of mind names what it changes ("switch the orders database to PostgreSQL instead of
# SQLite"); with the cue carrying the intent, two shared terms and a quarter of the smaller idea do.
CHANGE_MIN_SHARED = 2
CHANGE_OVERLAP = 0.25
# An answer closes an open problem, so besides the shared file or identifier it must share two more
# words with it (what went wrong: "files missing", "database locked").
ANSWER_MIN_SHARED = 2
# The same file or identifier is strong evidence; one more word says the two ideas are about the same
# side of it, not merely from turns that touched it.
ANCHORED_MIN_SHARED = 1
# A bare file name is half the evidence ("README.md" is in every project): it needs two more words
# and a quarter of the smaller idea.
BARE_MIN_SHARED = 2
BARE_OVERLAP = 0.25
# Words alone: three in common and half (builds_on, same intent) or 0.4 (relates_to) of the smaller
# idea, the overlap at which two ideas of a project stop merely sharing its vocabulary.
TERMS_ONLY_MIN_SHARED = 3
BUILDS_ON_OVERLAP = 0.5
RELATES_OVERLAP = 0.4
# Two: the strongest relative and one more; more would mostly add weaker relates_to links.
MAX_RELATIONS_PER_IDEA = 2
_CHANGE_WORDS = term_set("changing change earlier decision plan part approach recommendation switching")
_STRENGTH: dict[str, int] = {"supersedes": 0, "contradicts": 1, "answers": 2, "builds_on": 3, "relates_to": 4}
_CONSTRUCTIVE = frozenset({"decision", "solution", "conclusion", "context"})
_ANSWERING = {"question": ("conclusion", "decision", "solution"), "problem": ("solution", "conclusion")}


def _changes_mind(candidate: Candidate, existing: KnownIdea) -> bool:
    """Whether the new idea is a change of mind of the kind that would replace or refute `existing`."""
    if existing.intent == "decision" and candidate.changes_plan:
        return True
    return candidate.refutation and existing.intent in ("conclusion", "decision")


def _directed(candidate: Candidate, existing: KnownIdea, found: Evidence) -> RelationType | None:
    """Rules 1-4: the relations that say the new idea came after the stored one."""
    if _changes_mind(candidate, existing):
        # All words count here, technologies included: what changes is often the technology. The
        # words that say a mind changes ("changing the plan") are no shared subject.
        new, old = candidate.terms - _CHANGE_WORDS, idea_terms(existing.content) - _CHANGE_WORDS
        if len(new & old) < CHANGE_MIN_SHARED or overlap(new, old) < CHANGE_OVERLAP:
            return None
        return "supersedes" if existing.intent == "decision" and candidate.changes_plan else "contradicts"
    if (
        candidate.intent in _ANSWERING.get(existing.intent, ())
        and not existing.answered
        and found.anchor >= BARE_FILE_ANCHOR
        and len(found.shared) >= ANSWER_MIN_SHARED
    ):
        return "answers"
    if candidate.intent in _CONSTRUCTIVE and existing.intent in _CONSTRUCTIVE:
        if found.anchor >= FULL_ANCHOR and len(found.shared) >= ANCHORED_MIN_SHARED:
            return "builds_on"
        if (
            candidate.intent == existing.intent != "context"
            and found.common >= TERMS_ONLY_MIN_SHARED
            and found.similarity >= BUILDS_ON_OVERLAP
        ):
            return "builds_on"
    return None


def _related(candidate: Candidate, existing: KnownIdea, found: Evidence) -> bool:
    """Rule 5: about the same specific thing, or (not for reports) clearly the same words."""
    if found.anchor >= FULL_ANCHOR and len(found.shared) >= ANCHORED_MIN_SHARED:
        return True
    if (
        found.anchor >= BARE_FILE_ANCHOR
        and len(found.shared) >= BARE_MIN_SHARED
        and found.similarity >= BARE_OVERLAP
    ):
        return True
    if candidate.intent == "context" or (candidate.intent == "problem" and existing.intent != "problem"):
        return False
    return found.common >= TERMS_ONLY_MIN_SHARED and found.similarity >= RELATES_OVERLAP


def relation_type(candidate: Candidate, existing: KnownIdea, found: Evidence) -> RelationType | None:
    """How a new idea relates to a stored one, or None when they are not clearly about the same thing."""
    if existing.superseded:
        return None
    earlier = said_before(existing, candidate)
    if candidate.intent in ("question", "todo"):
        # Only a plan put off may replace: it was still the change of mind, just not carried out yet.
        changed = candidate.origin == "deferred" and _changes_mind(candidate, existing)
        return _directed(candidate, existing, found) if changed and earlier else None
    if _changes_mind(candidate, existing):
        # It supersedes or contradicts, or nothing: a change of mind is no weaker relation.
        return _directed(candidate, existing, found) if earlier else None
    if earlier and (directed := _directed(candidate, existing, found)):
        return directed
    return "relates_to" if _related(candidate, existing, found) else None


_Rank = tuple[int, float, int, float, int]


def _rank(kind: RelationType, facts: Evidence, existing: KnownIdea) -> _Rank:
    """Strongest type first, then the most specific anchor and most shared words, then the latest idea."""
    return (_STRENGTH[kind], -facts.anchor, -len(facts.shared), -facts.similarity, -existing.id)


@dataclass
class Relating:
    """The relations of one session update, and the stored open problems and questions they answer."""

    relations: list[Relation] = field(default_factory=list)
    answers: list[AnsweredQuestion] = field(default_factory=list)


def relations(candidates: list[Candidate], known: Known, resolved: set[int]) -> Relating:
    """Relations from new ideas to stored ideas the tools returned: strongest first, two per idea at most.

    Ideas in `resolved` (answered or completed by this result) get no further relation. Several new
    ideas on one line share the line's relations (the executor links every idea at the line), so
    each (line, stored idea) pair is related once, by its strongest relation. An `answers` relation
    to a still-open problem or question also reports it answered, once, at the first answering line.
    """
    entities = StoredEntities(known)
    stored = sorted(known.ideas.values(), key=lambda i: i.id)
    found: dict[tuple[int, int], tuple[_Rank, RelationType, Candidate]] = {}
    for candidate in candidates:
        options: list[tuple[_Rank, int, RelationType]] = []
        for existing in stored:
            same_line = existing.session == candidate.session and existing.line == candidate.line
            if existing.id in resolved or same_line:
                continue
            facts = evidence(candidate, existing, entities)
            kind = relation_type(candidate, existing, facts)
            if kind is not None:
                options.append((_rank(kind, facts, existing), existing.id, kind))
        for rank, ident, kind in sorted(options)[:MAX_RELATIONS_PER_IDEA]:
            key = (candidate.line, ident)
            if key not in found or rank < found[key][0]:
                found[key] = (rank, kind, candidate)
    out = Relating()
    for (line, ident), (_strength, kind, candidate) in sorted(found.items()):
        out.relations.append(
            Relation(from_session=candidate.session, from_line=line, to_idea_id=ident, relation_type=kind)
        )
        if kind == "answers" and all(a.question_idea_id != ident for a in out.answers):
            out.answers.append(
                AnsweredQuestion(
                    question_idea_id=ident, answered_at_line=line, answer_summary=candidate.content
                )
            )
    return out
