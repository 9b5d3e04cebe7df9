"""Links between the new ideas of one session update: what the batch asks and answers, sets and
finishes, guesses and corrects — all inside the batch, so the result names the ideas by key.

- **Answered, completed.** A failed check the conversation took up is answered where a run of it passed.
  A problem is answered by the first later fix of the batch that shares a word with it, within two
  turns. Otherwise a question, problem or todo is settled by the message of its own turn,
  after it, that the learned model finds most likely to resolve something (its `resolved` kind past
  the model's threshold) among those that share a term with it and are more than an announced step:
  the reply that answers, the report that it is done or fixed. Nothing past
  the threshold in the turn leaves it open; work put off and failures that never passed stay open.
  No `answers` relation is added: the answered line already says where.
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
from collections.abc import Mapping
from dataclasses import dataclass, field

from cairn.agent.offline.candidate import Candidate, idea_terms
from cairn.agent.offline.classifier import carrying_sentence, resolutions, score_session
from cairn.agent.offline.cues import (
    CORRECTION,
    MOVED,
    REAL_CAUSE,
    is_preamble,
)
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import shorten, term_set
from cairn.agent.offline.tool_calls import ToolCall, answered_calls, passing_rerun

# Terms a refused offer shares with the suggestion it refuses ("set `gc.auto 0`" and "Set `gc.auto=0` to
# disable auto-GC").
REFUSED_MIN_SHARED = 2
# What a refusal idea says besides the offer: its label and the person's words.
_OFFERED = re.compile(r"^Declined:\s*|\s*\(the user: .*\)$", re.S)
# A decision that changes an earlier one ("changing the plan", "… instead") names some of what it
# changes: two shared words, so one common word does not make an unrelated decision replaced.
CHANGE_MIN_SHARED = 2
FIX_MIN_SHARED = 2
# A measured result names what it measures ("With bf16: peak memory …" after "Use bf16 autocast").
MEASURED_MIN_SHARED = 1
_BUILT_ON = ("decision", "solution")


@dataclass
class InBatchLinks:
    """The links of one session update between its own new ideas."""

    answered: list[tuple[Candidate, int, str]] = field(default_factory=list)  # question, line, summary
    completed: list[tuple[Candidate, int, str]] = field(default_factory=list)  # todo, line, summary
    supersedes: list[tuple[Candidate, Candidate]] = field(default_factory=list)  # (new, old)
    contradicts: list[tuple[Candidate, Candidate]] = field(default_factory=list)  # (refutation, guess)
    builds_on: list[tuple[Candidate, Candidate]] = field(default_factory=list)  # (new, old)


def _resolution(
    view: SessionView, raised: Candidate, resolving: Mapping[int, float]
) -> tuple[int, str] | None:
    """The message after `raised`, in its turn, that the model finds most likely to resolve something
    (`resolving`: probability by line, for messages past the model's threshold) — the reply that answers
    a question, the report that a todo is done or a problem fixed — and the sentence that says it.

    The message must speak of what was raised (a sentence with a term in common with it, more than an
    announced step), and the sentence sharing most terms with it is the one told: the model scores how
    much a message settles, not what it settles, so without this a "Let me look at the logs." after a
    todo would complete it."""
    best: tuple[float, Message, str] | None = None
    for message in view.messages:
        if message.line <= raised.line or message.turn != raised.turn or message.role != "assistant":
            continue
        chance = resolving.get(message.line)
        if chance is None or not message.prose or (best is not None and chance <= best[0]):
            continue
        shared = {
            s.index: len(raised.terms & term_set(s.text)) for s in message.prose if not is_preamble(s.text)
        }
        most = max(shared.values(), default=0)
        on_subject = [s for s in message.prose if most and shared.get(s.index) == most]
        sentence = carrying_sentence(message, "resolved", among=on_subject)
        if sentence is None:
            continue
        best = (chance, message, sentence.text)
    if best is None:
        return None
    return best[1].line, shorten(best[2])


def answered(
    view: SessionView, candidates: list[Candidate], resolving: Mapping[int, float]
) -> list[tuple[Candidate, int, str]]:
    """Questions and problems of the batch and the later line of their turn that resolves each. Work
    put off and failures that never passed stay open: nothing in the batch settles them."""
    found: list[tuple[Candidate, int, str]] = []
    calls = answered_calls(view)
    for question in candidates:
        if question.intent not in ("question", "problem") or question.origin in ("deferred", "given_up"):
            continue
        passed = _passed(view, calls, question) if question.origin == "tool_error" else None
        fix = _fix_of(question, candidates) if question.intent == "problem" else None
        if hit := passed or fix or _resolution(view, question, resolving):
            found.append((question, *hit))
    return found


def _passed(view: SessionView, calls: dict[int, ToolCall], failure: Candidate) -> tuple[int, str] | None:
    """A failed check is settled where a run of it passed (`tool_calls.passing_rerun`), said so; a
    look (`ls`, `git status`) failing is no check."""
    call = calls.get(failure.line)
    if call is None or call.command is None or call.looks:
        return None
    line = passing_rerun(view, calls, failure.line)
    if line is None:
        return None
    return line, f"{calls[failure.line].name} passed"


# A fix answers a problem it follows within this many turns, when the two share a word.
FIX_REACH_TURNS = 2


def _fix_of(problem: Candidate, candidates: list[Candidate]) -> tuple[int, str] | None:
    """The first later fix of the batch (a solution idea) that takes the problem up: in its turn or
    the next ones, sharing a word with it. The fix's own line, so the problem is answered *by* it."""
    for candidate in candidates:
        if (
            candidate.intent == "solution"
            and candidate is not problem
            and candidate.line >= problem.line  # a recap says the bug and its fix in one message
            and candidate.turn - problem.turn <= FIX_REACH_TURNS
            and problem.terms & candidate.terms
        ):
            return candidate.line, candidate.content
    return None


def completed(
    view: SessionView, candidates: list[Candidate], resolving: Mapping[int, float]
) -> list[tuple[Candidate, int, str]]:
    """Todos of the batch and the later line of their turn that reports each done (one report, one
    todo); a todo put off is not done in the session that put it off."""
    done: list[tuple[Candidate, int, str]] = []
    used: set[int] = set()
    for todo in candidates:
        if todo.intent != "todo" or todo.origin == "deferred":
            continue
        hit = _resolution(view, todo, resolving)
        if hit is not None and hit[0] not in used:
            used.add(hit[0])
            done.append((todo, *hit))
    return done


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
        if old is None and new.changes_plan:
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
    resolving = resolutions(score_session(view))
    return InBatchLinks(
        answered(view, candidates, resolving),
        completed(view, candidates, resolving),
        replacing,
        contradicting,
        list(building.values()),
    )
