"""Links between the new ideas of one session update: what the batch asks and answers, sets and
finishes, guesses and corrects — all inside the batch, so the result names the ideas by key.

Before prompt v2 the result could only name stored ideas, so a question answered ten lines later in
the same batch stayed open forever. Almost every question in a conversation is answered somewhere,
so the rules look for *where*, in order of how plainly the transcript says it:

- **Answered.** A person's question: a later reply that says which question it answers ("To your
  DeepSpeed question: …", sharing a word with it); else the assistant's first words after it in its
  turn — not a preamble ("Let me read the exporter.") and not a deferral ("I can't answer that
  yet", which sends the search on); else the earliest later line covering `ANSWER_COVERAGE` of
  its terms with at least `ANSWER_MIN_SHARED` in common. A problem: the first later fix, cause or
  decision about it that held — no guess, nothing superseded in the batch. No `answers` relation
  is added: the answered line already says where.
- **Completed.** A new todo is completed by a later report of work done (`COMPLETION` cues) that
  shares `TODO_MIN_SHARED` of its terms or covers `TODO_COVERAGE` of them; a report that says a todo
  is done ("that todo is done", a person's "done, …") needs one word in common and comes first.
  Each report completes one todo, each todo once.
- **Supersedes.** A correction (a refutation or "the real cause") supersedes the latest earlier
  guess of the batch not yet superseded; a change-of-mind decision ("changing the plan", "instead
  of") supersedes the latest earlier decision it shares a word with. Always a later idea over an
  earlier one, each replaced once: no cycle can arise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.agent.offline.cues import (
    ANSWER_CUE,
    CHANGE,
    COMPLETION,
    CORRECTION,
    DEFERRAL,
    DONE_CUE,
    SAID_DONE,
    TODO,
    TODO_DONE,
    is_preamble,
)
from cairn.agent.offline.extract import Candidate, idea_terms
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import coverage, shorten, term_set

ANSWER_COVERAGE = 0.4
ANSWER_MIN_SHARED = 2
TODO_MIN_SHARED = 3
TODO_COVERAGE = 0.4
# A decision that changes an earlier one names some of what it changes.
CHANGE_MIN_SHARED = 1
_ANSWERING = {
    "question": ("conclusion", "decision", "solution", "context"),
    "problem": ("solution", "conclusion", "decision"),
}


@dataclass
class InBatchLinks:
    """The links of one session update between its own new ideas."""

    answered: list[tuple[Candidate, int, str]] = field(default_factory=list)  # question, line, summary
    completed: list[tuple[Candidate, int, str]] = field(default_factory=list)  # todo, line, summary
    supersedes: list[tuple[Candidate, Candidate]] = field(default_factory=list)  # (new, old)


@dataclass(frozen=True)
class _Statement:
    line: int
    text: str
    terms: frozenset[str]


def _statements(view: SessionView) -> list[_Statement]:
    """Sentences said in the session that may answer something: no questions, preambles, deferrals
    or todos."""
    found: list[_Statement] = []
    for message in view.messages:
        if message.role not in ("assistant", "user"):
            continue
        for segment in message.prose:
            text = segment.text
            if text.endswith("?") or is_preamble(text) or DEFERRAL.search(text) or TODO.search(text):
                continue
            found.append(_Statement(message.line, text, term_set(text)))
    return found


def _cued(question: Candidate, view: SessionView) -> tuple[int, str] | None:
    """A later reply that says it answers a question ("To your question: …") and shares a word with it."""
    for message in view.messages:
        if message.line > question.line and message.role == "assistant":
            for segment in message.prose:
                if ANSWER_CUE.search(segment.text) and question.terms & term_set(message.text):
                    return message.line, segment.text
    return None


def _reply(question: Candidate, view: SessionView) -> tuple[tuple[int, str] | None, int | None]:
    """The assistant's first words after a person's question, in its turn — or, when they put the
    question off ("I can't answer that yet"), None and the line that did."""
    for message in view.messages:
        if message.line <= question.line or message.turn != question.turn:
            continue
        if message.role == "user" and message.prose:
            break  # the person spoke again before any reply
        spoken = [segment.text for segment in message.prose if not is_preamble(segment.text)]
        if message.role == "assistant" and spoken:  # "Let me read the exporter." is work, not a reply
            said = " ".join(spoken)
            if DEFERRAL.search(said):
                return None, message.line
            return (message.line, spoken[0]), None
    return None, None


def _resolving(problem: Candidate, candidates: list[Candidate], replaced: set[int]) -> tuple[int, str] | None:
    """The first later fix, cause or decision about a problem that held: no guess, nothing replaced."""
    for candidate in candidates:
        if (
            candidate.line > problem.line
            and candidate.intent in _ANSWERING["problem"]
            and not candidate.hypothesis
            and id(candidate) not in replaced
            and problem.terms & candidate.terms
        ):
            return candidate.line, candidate.content
    return None


def _covering(
    question: Candidate, candidates: list[Candidate], statements: list[_Statement], deferred: int | None
) -> tuple[int, str] | None:
    """The earliest later line (not the one that put the question off) that covers the question's
    words about as well as any."""
    wanted = question.terms
    options: list[tuple[int, str, frozenset[str]]] = [
        (c.line, c.content, c.terms)
        for c in candidates
        if c.line > question.line and c.intent in _ANSWERING.get(question.intent, ())
    ]
    options += [(s.line, s.text, s.terms) for s in statements if s.line > question.line]
    options = [option for option in options if option[0] != deferred]
    scored = [
        (coverage(wanted, terms), line, text)
        for line, text, terms in options
        if len(wanted & terms) >= ANSWER_MIN_SHARED and coverage(wanted, terms) >= ANSWER_COVERAGE
    ]
    if not scored:
        return None
    best = max(score for score, _line, _text in scored)
    return min((line, text) for score, line, text in scored if score >= best - 0.1)


def answered(
    view: SessionView, candidates: list[Candidate], replaced: set[int]
) -> list[tuple[Candidate, int, str]]:
    """Questions and problems of the batch and the later line that answers each."""
    statements = _statements(view)
    found: list[tuple[Candidate, int, str]] = []
    for question in candidates:
        deferred: int | None = None
        if question.intent == "question":
            message = view.by_line(question.line)
            hit = _cued(question, view)
            if hit is None and message is not None and message.role == "user":
                hit, deferred = _reply(question, view)
        elif question.intent == "problem":
            hit = _resolving(question, candidates, replaced)
        else:
            continue
        if hit or (hit := _covering(question, candidates, statements, deferred)):
            found.append((question, *hit))
    return found


def completed(view: SessionView, candidates: list[Candidate]) -> list[tuple[Candidate, int, str]]:
    """Todos of the batch and the later report that completes each (one report, one todo).

    A report that says a todo is done ("that todo is done", a person's "done, …") needs only one
    word in common with it, and beats a report that merely covers the todo's words.
    """
    reports: list[tuple[int, str, frozenset[str], bool]] = []
    for m in view.messages:
        if m.role not in ("assistant", "user"):
            continue
        says_done = bool(TODO_DONE.search(m.text)) or (m.role == "user" and bool(SAID_DONE.match(m.text)))
        if says_done or COMPLETION.search(m.text) or DONE_CUE.search(m.text):
            reports.append((m.line, m.text, term_set(m.text), says_done))
    pairs: list[tuple[float, int, int, Candidate, str]] = []
    for order, todo in enumerate(candidates):
        if todo.intent != "todo":
            continue
        wanted = todo.terms
        for line, text, terms, says_done in reports:
            shared, covered = len(wanted & terms), coverage(wanted, terms)
            if line > todo.line and (
                shared >= TODO_MIN_SHARED or covered >= TODO_COVERAGE or (says_done and shared >= 1)
            ):
                pairs.append((-(covered + says_done), line, order, todo, text))
    done: list[tuple[Candidate, int, str]] = []
    used_lines: set[int] = set()
    used_todos: set[int] = set()
    for _score, line, order, todo, text in sorted(pairs, key=lambda p: p[:3]):
        if line not in used_lines and order not in used_todos:
            used_lines.add(line)
            used_todos.add(order)
            done.append((todo, line, shorten(text)))
    return sorted(done, key=lambda item: item[0].line)


def supersedes(candidates: list[Candidate]) -> list[tuple[Candidate, Candidate]]:
    """(new, old) pairs: a correction replaces the latest open guess, a change of mind the latest
    decision it shares words with."""
    found: list[tuple[Candidate, Candidate]] = []
    replaced: set[int] = set()
    for index, new in enumerate(candidates):
        earlier = [
            (i, c) for i, c in enumerate(candidates[:index]) if c.line < new.line and i not in replaced
        ]
        old: tuple[int, Candidate] | None = None
        if new.intent == "conclusion" and (new.refutation or CORRECTION.search(new.content)):
            old = next(((i, c) for i, c in reversed(earlier) if c.hypothesis), None)
        elif new.intent == "decision" and (new.supersession or CHANGE.search(new.content)):
            old = next(
                (
                    (i, c)
                    for i, c in reversed(earlier)
                    if c.intent == "decision" and len(idea_terms(c.content) & new.terms) >= CHANGE_MIN_SHARED
                ),
                None,
            )
        if old is not None:
            replaced.add(old[0])
            found.append((new, old[1]))
    return found


def links(view: SessionView, candidates: list[Candidate]) -> InBatchLinks:
    """Every in-batch link of one session update's new ideas (`candidates`, in line order)."""
    replacing = supersedes(candidates)
    replaced = {id(old) for _new, old in replacing}
    return InBatchLinks(answered(view, candidates, replaced), completed(view, candidates), replacing)
