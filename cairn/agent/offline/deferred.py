"""What a session put off on purpose, as open items a teammate would pass on.

Work is put off in two plain ways, and each leaves an item open whatever is said around it:

- **A question whose reply defers it.** "Does this mean we can remove our checkout shims?" — "Worth
  running the regression tests to find out. But that's a separate PR." The question is stored as
  asked, with the state `deferred`, so it stays open (`cairn.store.open_ideas`).
- **A plan the person defers.** The assistant says "I'll replace `getStagedFiles` with `git diff
  --cached`" and the person answers "let's not make this change in this branch, log an issue": the plan
  was not carried out, so it is no decision — it is a todo, the plan in its own words with the state
  `deferred`, which no report of the same session completes (logging the issue is not doing the work).

The state is data (`origin` here, `Idea.state` in the result), not words added to the idea: the
idea reads as what was said, and readers never parse it back.

An item is carried by the first statement that put it off: a later todo restating it ("investigating
the shims removal is a great follow-up") says nothing new and is dropped.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise

from cairn.agent.offline.answers import reply_to
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.cues import PUT_OFF
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import term_set
from cairn.agent.schema import DEFAULT_IMPORTANCE

# A deferring sentence this short refers back ("But that's a separate PR."); a longer one must name
# some of what it defers.
_BARE_WORDS = 8
# A reply that takes the plan up before putting something else off.
_APPROVES = re.compile(r"^(?:ok(?:ay)?|yes|yeah|yep|sure|go ahead|sounds good|do it|lgtm)\b", re.I)
# Terms a later todo shares with a deferred item when it restates it.
RESTATED_MIN_SHARED = 2


def _deferring(message: Message, about: frozenset[str]) -> str | None:
    """The sentence of `message` that puts work off: a short one, or one naming some of `about`."""
    for segment in message.prose:
        text = segment.text
        if PUT_OFF.search(text) and (len(text.split()) <= _BARE_WORDS or about & term_set(text)):
            return text
    return None


def _questions_put_off(view: SessionView, candidates: list[Candidate]) -> list[Candidate]:
    """The person's questions whose reply puts them off, as deferred."""
    out = []
    for candidate in candidates:
        message = view.by_line(candidate.line)
        if candidate.intent == "question" and message is not None and message.role == "user":
            reply = reply_to(view, candidate.line, candidate.turn)
            said = _deferring(reply, candidate.terms) if reply is not None else None
            if said is not None:
                candidate = replace(candidate, origin="deferred")
        out.append(candidate)
    return out


def _plans_put_off(view: SessionView, candidates: list[Candidate]) -> list[Candidate]:
    """The assistant's plan the person's next words defer, as a deferred todo."""
    deferred: dict[int, Candidate] = {}
    plans = {  # the last plan each message states
        c.line: c for c in candidates if c.intent in ("decision", "solution", "todo") and c.origin == "prose"
    }
    spoken = [m for m in view.messages if m.prose and m.role in ("user", "assistant")]
    for before, message in pairwise(spoken):
        plan = plans.get(before.line)
        if before.role != "assistant" or message.role != "user" or plan is None:
            continue
        said = _deferring(message, plan.terms)
        if said is None or _APPROVES.match(said):
            continue  # "ok, do the lint thing now, the fragments go in a separate PR" puts off the rest
        deferred[id(plan)] = replace(
            plan, intent="todo", importance=DEFAULT_IMPORTANCE["todo"], origin="deferred"
        )
    return [deferred.get(id(c), c) for c in candidates]


def _restatements_dropped(candidates: list[Candidate]) -> list[Candidate]:
    """Without the later todos that restate an item already put off."""
    kept: list[Candidate] = []
    for candidate in candidates:
        restates = candidate.intent == "todo" and any(
            k.origin == "deferred"
            and k.line < candidate.line
            and len(k.terms & candidate.terms) >= RESTATED_MIN_SHARED
            for k in kept
        )
        if not restates:
            kept.append(candidate)
    return kept


def put_off(view: SessionView, candidates: list[Candidate]) -> list[Candidate]:
    """`candidates` (in line order) with what the session put off marked so, and the later todos that
    only restate it dropped."""
    return _restatements_dropped(_plans_put_off(view, _questions_put_off(view, candidates)))
