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
  decision about it that held — no guess, nothing superseded in the batch — or the labelled fix of
  a recap that labels it ("**Bug:** … **Fix:** …"). No `answers` relation
  is added: the answered line already says where.
- **Completed.** A new todo is completed by a later report of work done (`COMPLETION` cues) that
  shares `TODO_MIN_SHARED` of its terms or covers `TODO_COVERAGE` of them; a report that says a todo
  is done ("that todo is done", a person's "done, …") needs one word in common and comes first.
  Each report completes one todo, each todo once.
- **Supersedes.** A correction (a refutation or "the real cause") supersedes the latest earlier
  guess of the batch not yet superseded; a change-of-mind decision ("changing the plan", "instead
  of") supersedes the latest earlier decision it shares a word with. Always a later idea over an
  earlier one, each replaced once: no cycle can arise. When a bare refutation ("The page-number
  idea is wrong.") is followed by the real cause ("Found the real cause. …") before any new guess,
  the real cause is what replaces the guess and the refutation only contradicts it.
- **Builds on.** A fix or decision for a problem the assistant found (not a person's report, which is
  answered; not a tool failure) builds on it; a figure that moved ("peak memory 31.4 → 17.9 GiB")
  builds on the latest earlier decision or fix it shares a word with — the change it measures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cairn.agent.offline.answers import BARE_NOD, INVESTIGATE
from cairn.agent.offline.candidate import Candidate, idea_terms
from cairn.agent.offline.cues import (
    ANSWER_CUE,
    CHANGE,
    COMPLETION,
    CORRECTION,
    DEFERRAL,
    DONE_CUE,
    MOVED,
    REAL_CAUSE,
    SAID_DONE,
    TODO,
    TODO_DONE,
    is_preamble,
)
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import coverage, shorten, term_set

ANSWER_COVERAGE = 0.4
# Terms a refused offer shares with the suggestion it refuses ("set `gc.auto 0`" and "Set `gc.auto=0` to
# disable auto-GC").
REFUSED_MIN_SHARED = 2
# What a refusal idea says besides the offer: its label and the person's words.
_OFFERED = re.compile(r"^Declined:\s*|\s*\(the user: .*\)$", re.S)
ANSWER_MIN_SHARED = 2
TODO_MIN_SHARED = 3
TODO_COVERAGE = 0.4
# A decision that changes an earlier one ("changing the plan", "… instead") names some of what it
# changes: two shared words, so one common word does not make an unrelated decision replaced.
CHANGE_MIN_SHARED = 2
FIX_MIN_SHARED = 2
# A measured result names what it measures ("With bf16: peak memory …" after "Use bf16 autocast").
MEASURED_MIN_SHARED = 1
_BUILT_ON = ("decision", "solution")
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
    contradicts: list[tuple[Candidate, Candidate]] = field(default_factory=list)  # (refutation, guess)
    builds_on: list[tuple[Candidate, Candidate]] = field(default_factory=list)  # (new, old)


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


# Saying the search goes on ("Let me check integration tests…", "I'll investigate how IDs are made").
_LOOKING = re.compile(
    r"^(?:let me|let's|i'll|i will|i'm going to|now let me)\s+(?:\w+\s+){0,2}?"
    rf"(?:{INVESTIGATE.pattern}|look|find|run|read|understand)\b",
    re.I,
)


def _reply(question: Candidate, view: SessionView) -> tuple[tuple[int, str] | None, int | None]:
    """The assistant's first words after a person's question, in its turn — or, when they put the
    question off ("I can't answer that yet"), None and the line that did.

    A message that announces more work ("Unit tests pass. Let me check integration tests…", "I'll
    investigate how checkpoint IDs are assigned") is a step of finding the answer, and a nod ("Good
    question.") is none: the reply is the first message of the turn past them that says something."""
    for message in view.messages:
        if message.line <= question.line or message.turn != question.turn:
            continue
        if message.role == "user" and message.prose:
            break  # the person spoke again before any reply
        if message.role != "assistant":
            continue
        texts = [segment.text for segment in message.prose]
        if any(_LOOKING.match(text) for text in texts):
            continue  # still looking: what it says so far is a step
        spoken = [text for text in texts if not (is_preamble(text) or BARE_NOD.match(text))]
        if spoken:
            said = " ".join(spoken)
            if DEFERRAL.search(said):
                return None, message.line
            return (message.line, spoken[0]), None
    return None, None


def _recap(problem: Candidate, fix: Candidate) -> bool:
    """A message that labels a bug and its fix ("**Bug:** … **Fix:** …") reports the bug fixed."""
    return fix.line == problem.line and problem.labelled and fix.labelled and fix.intent == "solution"


def _resolving(problem: Candidate, candidates: list[Candidate], replaced: set[int]) -> tuple[int, str] | None:
    """The first later fix, cause or decision about a problem that held: no guess, nothing replaced."""
    for candidate in candidates:
        if (
            (candidate.line > problem.line or _recap(problem, candidate))
            and candidate.origin != "answer"  # it answers the question it follows, not the problem
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
            if hit is None and question.origin == "deferred":
                continue  # put off on purpose: open until a reply says it answers it
            if hit is None and message is not None and message.role == "user":
                hit, deferred = _reply(question, view)
        elif question.intent == "problem":
            if question.origin == "given_up":
                continue  # it never passed: no statement of the batch settles it
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
        if todo.intent != "todo" or todo.origin == "deferred":
            continue  # work put off is not done in the session that put it off
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


def _names_cause(candidate: Candidate) -> bool:
    return bool(REAL_CAUSE.search(candidate.content))


def _replacements(
    candidates: list[Candidate],
) -> tuple[list[tuple[Candidate, Candidate]], list[tuple[Candidate, Candidate]]]:
    """(new, old) supersedes and (refutation, guess) contradicts pairs: a correction replaces the
    latest open guess, a change of mind the latest decision it shares words with, and the real cause
    named after a bare refutation takes the guess over from it."""
    found: dict[int, int] = {}  # index of the replacing idea -> index of the replaced one
    replaced: set[int] = set()
    contradicting: list[tuple[int, int]] = []
    for index, new in enumerate(candidates):
        earlier = [
            (i, c) for i, c in enumerate(candidates[:index]) if c.line < new.line and i not in replaced
        ]
        old: tuple[int, Candidate] | None = None
        if new.intent == "conclusion" and (new.refutation or CORRECTION.search(new.content)):
            old = next(((i, c) for i, c in reversed(earlier) if c.hypothesis), None)
            taken = _taken_over(candidates, index, found)
            if taken is not None and (old is None or old[0] < taken[1]):
                refutation, guess = taken
                del found[refutation]
                contradicting.append((refutation, guess))
                found[index] = guess
                continue
        if old is None and _changes_mind(new):
            # A plan put off still replaces what it changed its mind about: deferring the change does
            # not bring back the suspicion it replaced.
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
            found[index] = old[0]
    pairs = [(candidates[new], candidates[old]) for new, old in sorted(found.items())]
    return pairs, [(candidates[new], candidates[old]) for new, old in contradicting]


def _changes_mind(candidate: Candidate) -> bool:
    """A decision, or a plan put off, that says it changes an earlier one ("instead of", "changing the
    plan")."""
    return candidate.plans and bool(candidate.supersession or CHANGE.search(candidate.content))


def _taken_over(candidates: list[Candidate], index: int, found: dict[int, int]) -> tuple[int, int] | None:
    """(refutation, guess) when `candidates[index]` names the real cause and the latest correction
    before it is a bare refutation of a guess, with no new guess said in between."""
    if not _names_cause(candidates[index]):
        return None
    for i in range(index - 1, -1, -1):
        earlier = candidates[i]
        if earlier.hypothesis or earlier.line == candidates[index].line:
            return None
        if earlier.intent == "conclusion" and (earlier.refutation or CORRECTION.search(earlier.content)):
            if i in found and not _names_cause(earlier) and candidates[found[i]].hypothesis:
                return i, found[i]
            return None
    return None


def supersedes(candidates: list[Candidate]) -> list[tuple[Candidate, Candidate]]:
    """(new, old) pairs: a correction replaces the latest open guess (or takes it over from a bare
    refutation), a change of mind the latest decision it shares words with."""
    return _replacements(candidates)[0]


def _fixes(
    view: SessionView, candidates: list[Candidate], replaced: set[int]
) -> list[tuple[Candidate, Candidate]]:
    """(fix, problem): the first fix or decision that held, at or after a problem the assistant found
    in prose, sharing `FIX_MIN_SHARED` words with it: one common verb ("create") links unrelated work."""
    found: list[tuple[Candidate, Candidate]] = []
    for problem in candidates:
        message = view.by_line(problem.line)
        if problem.intent != "problem" or problem.origin != "prose" or message is None:
            continue
        if message.role != "assistant":
            continue
        fix = next(
            (
                c
                for c in candidates
                if c.line >= problem.line
                and c is not problem
                and c.intent in ("solution", "decision")
                and id(c) not in replaced
                and len(problem.terms & c.terms) >= FIX_MIN_SHARED
            ),
            None,
        )
        if fix is not None:
            found.append((fix, problem))
    return found


def _measured(view: SessionView, candidates: list[Candidate]) -> list[tuple[Candidate, Candidate]]:
    """(result, change): a figure that moved builds on the latest earlier decision or fix that shares a
    word with it."""
    found: list[tuple[Candidate, Candidate]] = []
    for index, result in enumerate(candidates):
        message = view.by_line(result.line)
        if result.intent != "conclusion" or message is None or message.role != "assistant":
            continue
        if result.hypothesis or result.refutation or not MOVED.search(result.content):
            continue
        change = next(
            (
                c
                for c in reversed(candidates[:index])
                if c.line < result.line
                and c.intent in _BUILT_ON
                and not c.hypothesis
                and len(c.terms & result.terms) >= MEASURED_MIN_SHARED
            ),
            None,
        )
        if change is not None:
            found.append((result, change))
    return found


def _refused(candidates: list[Candidate]) -> list[tuple[Candidate, Candidate]]:
    """(refusal, suggestion) pairs: a declined offer contradicts the assistant's latest earlier
    suggestion of what it offered — the fix, decision or todo sharing `REFUSED_MIN_SHARED` of the
    offer's own terms — so recall never hands the refused suggestion on as what was done."""
    found = []
    for index, refusal in enumerate(candidates):
        if refusal.origin != "declined":
            continue
        offered = idea_terms(_OFFERED.sub("", refusal.content))
        suggestions = [
            earlier
            for earlier in candidates[:index]
            if earlier.intent in ("solution", "decision", "todo")
            and earlier.origin not in ("declined", "tool_error")
            and len(offered & earlier.terms) >= REFUSED_MIN_SHARED
        ]
        if suggestions:
            found.append((refusal, suggestions[-1]))
    return found


def links(view: SessionView, candidates: list[Candidate]) -> InBatchLinks:
    """Every in-batch link of one session update's new ideas (`candidates`, in line order)."""
    replacing, contradicting = _replacements(candidates)
    contradicting = contradicting + [pair for pair in _refused(candidates) if pair not in contradicting]
    replaced = {id(old) for _new, old in replacing}
    building: dict[tuple[int, int], tuple[Candidate, Candidate]] = {}
    linked = {(id(new), id(old)) for new, old in replacing + contradicting}
    for new, old in _fixes(view, candidates, replaced) + _measured(view, candidates):
        if (id(new), id(old)) not in linked and (id(old), id(new)) not in linked:
            building.setdefault((id(new), id(old)), (new, old))
    return InBatchLinks(
        answered(view, candidates, replaced),
        completed(view, candidates),
        replacing,
        contradicting,
        list(building.values()),
    )
