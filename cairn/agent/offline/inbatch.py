"""Links between the new ideas of one session update: what the batch asks and answers, sets and
finishes, guesses and corrects — all inside the batch, so the result names the ideas by key.

- **Answered, completed.** A failed check the conversation took up is settled by the change that made
  it pass — the last change before a run of it passed, or that run when nothing changed — and by
  nothing else: words near a failure answer no failure. A problem said in words is answered by the
  first later fix of the batch that shares a word with it, within two turns. Otherwise a question,
  problem or todo is settled at the end of the work of its own turn (the assistant's last message with
  words in it), when the learned model finds a later message of the turn resolving (its `resolved` kind
  past the model's threshold) that shares a term with it and is more than an announced step; a question
  the assistant answers right away — its very next message speaks before doing anything, and the model
  finds it at least as resolving as the end — is answered by that reply. A turn the person cut into
  while its work was in flight settles nothing; nothing past the threshold leaves it open; work put off
  and failures that never passed stay open. No `answers` relation is added: the answered line already
  says where.
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
from cairn.agent.offline.text import Segment, shorten, term_set
from cairn.agent.offline.tool_calls import ToolCall, answered_calls, tool_calls
from cairn.agent.offline.tool_fixes import made_pass

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
    """Where the work of `raised`'s turn settles it, and the sentence that says it: the end of the work
    (the assistant's last message with words in the turn) — the report that a todo is done or a
    problem fixed, the answer found — or, for a question the assistant answers right away, that reply
    (`_direct_reply`) when the model finds it at least as resolving as the end. Not the first proposal,
    nor a step on the way that the model happens to score higher.

    Whether anything settles it is the model's call: some message of the turn after it must be one it
    finds resolving (`resolving`: probability by line, for messages past its threshold) and speak of
    what was raised (a sentence with a term in common with it, more than an announced step) — the
    model scores how much a message settles, not what it settles, so without this a "Let me look at
    the logs." after a todo would complete it. A turn the person cut into (`_cut_off`) settles nothing."""
    replies = [
        m
        for m in view.messages
        if m.line > raised.line and m.turn == raised.turn and m.role == "assistant" and _said(m)
    ]
    if _cut_off(view, raised.turn) or not any(
        m.line in resolving and _on_subject(m, raised) for m in replies
    ):
        return None
    end = replies[-1]
    direct = _direct_reply(view, raised)
    if direct is not None and resolving.get(direct.line, 0.0) >= resolving.get(end.line, 0.0):
        end = direct
    sentence = carrying_sentence(end, "resolved", among=_on_subject(end, raised) or _said(end))
    if sentence is None:
        return None
    return end.line, shorten(sentence.text)


def _direct_reply(view: SessionView, raised: Candidate) -> Message | None:
    """The assistant's reply right after a question, when it speaks before doing anything else."""
    if raised.intent != "question":
        return None
    after = next((m for m in view.messages if m.line > raised.line and m.role != "system"), None)
    if after is None or after.turn != raised.turn or after.role != "assistant" or not _said(after):
        return None
    return after


def _cut_off(view: SessionView, turn: int) -> bool:
    """Whether the person cut into the work of `turn`: they spoke next while a tool call of it was in
    flight or its outcome was the last thing said (rejected, interrupted, or redirected), with no
    report after it. Such a turn did not finish what it was for. The last turn of a batch is never
    judged so: the batch may end where the work goes on."""
    work = [m for m in view.messages if m.turn == turn and m.role in ("assistant", "tool")]
    after = next((m for m in view.messages if m.turn > turn), None)
    if not work or after is None or after.role != "user":
        return False
    return work[-1].role == "tool" or bool(tool_calls(work[-1].text))


def _said(message: Message) -> list[Segment]:
    """The sentences of a message that say something (no announced step)."""
    return [s for s in message.prose if not is_preamble(s.text)]


def _on_subject(message: Message, raised: Candidate) -> list[Segment]:
    """The sentences of `message` sharing the most terms with `raised` (none when none shares one)."""
    shared = {s.index: len(raised.terms & term_set(s.text)) for s in _said(message)}
    most = max(shared.values(), default=0)
    return [s for s in message.prose if most and shared.get(s.index) == most]


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
        if question.origin == "tool_error":
            hit = _passed(view, calls, question)
        else:
            fix = _fix_of(question, candidates) if question.intent == "problem" else None
            hit = fix or _resolution(view, question, resolving)
        if hit:
            found.append((question, *hit))
    return found


def _passed(view: SessionView, calls: dict[int, ToolCall], failure: Candidate) -> tuple[int, str] | None:
    """A failed check is settled by the change that made it pass — the last one before a run of it
    passed (`tool_fixes.made_pass`) — or, when nothing changed, by that run; said so."""
    fixed = made_pass(view, calls, failure.line)
    if fixed is None:
        return None
    if fixed.did is None:
        return fixed.line, f"{fixed.call.name} passed"
    return fixed.line, shorten(f"{fixed.did}, then {fixed.call.name} passed")


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
