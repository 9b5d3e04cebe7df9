"""The person's reply to the assistant's offer, as their decision, and the reply that follows a line.

The person's reply to an offer ("Want me to also set `gc.auto 0` on your repo now?" — "no don't set it,
let's see if it keeps happening") is their decision; it reads only with the offer beside it, so the
idea holds both. This reads structure — an offer that closes the assistant's message, the next words
of the person — with the few words that make an offer and a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from cairn.agent.offline.cues import capitalise, is_preamble
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import shorten, term_set
from cairn.agent.schema import Intent

# A sentence that only nods before the answer: "Most likely, yeah.", "Right, exactly.", "Two reasons."
BARE_NOD = re.compile(
    r"^(?:(?:yes|yeah|yep|right|exactly|correct|indeed|true|most likely|probably|likely|good point|"
    r"fair point|good question|great question|good catch|fair enough|you'?re right|two reasons|"
    r"a few reasons|several reasons|ah|oh)[\s,.!\u2014-]*)+$",
    re.I,
)
_FILLER_START = re.compile(r"^(?:(?:done|ok(?:ay)?|also|so|and)[.,!]?\s+)+", re.I)
# The assistant offering to do something next, and the person turning it down.
_OFFERING = r"^(?:(?:do you )?want me to|would you like me to|should i|shall i|do you want (?:me|us) to)"
OFFER = re.compile(_OFFERING + r"\b", re.I)
# An offer's words up to what it offers to do ("Want me to also …"), to tell finding out from changing.
_OFFER_VERB = re.compile(_OFFERING + r"\s+(?:also\s+)?", re.I)
INVESTIGATE = re.compile(
    r"(?:look (?:into|at|for)|check|investigate|dig|find out|see|explore|debug|trace|figure out|verify)\b",
    re.I,
)
# A reply that turns the offer down.
NO = re.compile(r"^(?:no|nope|nah|don'?t|do not|not (?:now|yet)|leave it|skip)\b", re.I)
# A reply that takes the offer up or turns it down, and says how in a few words of its own.
VERDICT = re.compile(
    r"^(?:yes|yeah|yep|sure|ok(?:ay)?|no|nope|nah|don'?t|do not|not (?:now|yet)|leave it|skip|go ahead)\b"
    r"[\s,.!-]*(?P<rest>.*)",
    re.I,
)


@dataclass(frozen=True)
class Answer:
    """The reply that answers a question: its message and what it says; `declined` when it turns an
    offer down."""

    message: Message
    intent: Intent
    content: str
    declined: bool = False


def reply_to(view: SessionView, line: int, turn: int) -> Message | None:
    """The assistant's first message with words after a person's question, in its turn."""
    after = False
    for message in view.messages:
        if message.line == line:
            after = True
            continue
        if not after or message.role in ("tool", "system", "summary"):
            continue
        if message.turn != turn or message.role != "assistant":
            return None
        if any(not is_preamble(s.text) for s in message.prose):
            return message
    return None


def _previous_words(view: SessionView, message: Message) -> Message | None:
    """The last message with words before `message` (tool calls and results have none)."""
    before = [m for m in view.messages if m.line < message.line and m.prose and m.role != "tool"]
    return before[-1] if before else None


def offer_replies(view: SessionView, said: Mapping[int, list[str]]) -> list[Answer]:
    """The person's decision on each offer the assistant closed a message with, when their reply says
    more than "yes" — at least two words of its own ("yeah close it" is a nod anyone can infer) — and
    gave no idea of its own, or turned the offer down (a refusal is what the reply says, whatever else
    was read in it)."""
    out: list[Answer] = []
    for message in view.messages:
        if message.role != "user" or not message.prose:
            continue
        offer = _previous_words(view, message)
        if offer is None or offer.role != "assistant" or not offer.prose[-1].text.endswith("?"):
            continue
        asked = _FILLER_START.sub("", offer.prose[-1].text)
        if not OFFER.match(asked):
            continue
        reply = " ".join(s.text for s in message.prose)
        if said.get(message.line) and not NO.match(reply):
            continue  # a reply that took the offer up already has its idea; a refusal replaces it
        verdict = VERDICT.match(reply)
        if verdict is None or len(term_set(verdict["rest"])) < 2:
            continue
        if INVESTIGATE.match(_OFFER_VERB.sub("", asked)) and not NO.match(reply):
            # "Want me to look into what triggers gc?" — "yeah check it": the next step of the work,
            # which the work itself reports; no choice a teammate needs to know.
            continue
        if NO.match(reply):
            # Turned down: what was offered is *not* what was done, so it is no decision — an idea
            # with the offer and the refusal, which `inbatch` sets against the suggestion it refuses.
            content = shorten(f"Declined: {asked} (the user: {reply.rstrip('.')})")
            out.append(Answer(message, "context", content, declined=True))
            continue
        content = shorten(f"{capitalise(reply.rstrip('.'))} (on: {asked})")
        out.append(Answer(message, "decision", content))
    return out
