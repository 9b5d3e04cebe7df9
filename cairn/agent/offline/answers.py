"""The assistant's answer to a person's question, as an idea of its own.

A question someone asks ("is 241 really still a problem?", "what are the settings I need to enable
auto-summarization?") is answered in the assistant's next words, and that answer is what anyone asks
about weeks later. The cue phrases of `cues` rarely fire on it: an answer is a plain statement
("Disabling auto-GC won't lose any data, but it will cause disk bloat", "In `.entire/settings.json`:
…"). So the reply's first statement becomes a finding when its message gave no idea that already
says it. A reply that puts the question off ("Let me check", "I'm not sure") gives none: the answer
comes later and `inbatch` finds it.

The other way round, the person's reply to the assistant's offer ("Want me to also set `gc.auto 0`
on your repo now?" — "no don't set it, let's see if it keeps happening") is their decision; it reads
only with the offer beside it, so the idea holds both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cairn.agent.offline.cues import DEFERRAL, capitalise, classify, is_ack, is_preamble
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import overlap, shorten, term_set
from cairn.agent.schema import Intent

_FENCE = re.compile(r"```[\w+-]*\n(?P<code>.*?)(?:```|\Z)", re.DOTALL)
# "Good point.", "Good question!", "Fair enough —": a nod before the answer, not the answer.
_NOD = re.compile(
    r"^(?:(?:good|great|fair|interesting)\s+(?:point|question|catch|call|enough)|fair enough)\b", re.I
)
# A sentence that only nods before the answer: "Most likely, yeah.", "Right, exactly.", "Two reasons."
BARE_NOD = re.compile(
    r"^(?:(?:yes|yeah|yep|right|exactly|correct|indeed|true|most likely|probably|likely|good point|"
    r"fair point|good question|great question|good catch|fair enough|you'?re right|two reasons|"
    r"a few reasons|several reasons|ah|oh)[\s,.!\u2014-]*)+$",
    re.I,
)
# "I'll investigate how …": the work that will find the answer, not the answer.
_FUTURE = re.compile(r"^(?:i'll|i will|i'm going to|i am going to|let me|let's)\b", re.I)
_ANSWER_INTENTS = ("decision", "solution", "conclusion")
# Fewer content terms than this is a status ("All tests pass."), not an answer worth remembering.
MIN_TERMS = 4
MAX_IDEAS_PER_REPLY = 3
# An idea of the reply sharing this share of the answer's terms already says it.
SAYS_IT = 0.5
# A question that asks for a choice ("Should we key by region or by currency?", "Fix the glob or dedupe
# on event_id?"): its answer is what was decided.
CHOICE = re.compile(
    r"^(?:so |and |ok,? )?(?:should|shall) (?:we|i)\b|\bwhich (?:one|of)\b|\w \bor\b [^?]+\?", re.I
)
CODE_CHARS = 160
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
    gave no idea of its own."""
    out: list[Answer] = []
    for message in view.messages:
        if message.role != "user" or not message.prose or said.get(message.line):
            continue
        offer = _previous_words(view, message)
        if offer is None or offer.role != "assistant" or not offer.prose[-1].text.endswith("?"):
            continue
        asked = _FILLER_START.sub("", offer.prose[-1].text)
        if not OFFER.match(asked):
            continue
        reply = " ".join(s.text for s in message.prose)
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


def _statement(message: Message) -> str | None:
    """The reply's first statement: nods skipped, a short one or one that opens a list or a code
    block ("In `.entire/settings.json`:") taken with what follows. None when the reply goes on to
    announce work ("Fair point — staleness alone can't change the currency. Let me look at what is
    actually stored."): it has conceded, not answered, and the answer comes after the work."""
    if any(is_preamble(s.text) or _FUTURE.match(s.text) for s in message.prose):
        return None
    spoken = [s for s in message.prose if not s.text.endswith("?")]
    while len(spoken) > 1 and (is_ack(spoken[0].text) or BARE_NOD.match(spoken[0].text)):
        spoken = spoken[1:]
    if not spoken or DEFERRAL.search(spoken[0].text):
        return None
    first = spoken[0]
    text = _NOD.sub("", first.text).lstrip(" ,-\u2013\u2014") or first.text
    if text.endswith(":") and (code := _FENCE.search(message.text)):
        text = f"{text} {' '.join(code['code'].split())[:CODE_CHARS]}"
    elif len(text) < 60 and len(spoken) > 1 and not spoken[1].text.endswith("?"):
        text = f"{text} {spoken[1].text}"
    return text


def answers(
    view: SessionView, asked: Sequence[tuple[int, int, str]], said: Mapping[int, list[str]]
) -> list[Answer]:
    """The answer to each person's question (`asked`: its line, turn and words) whose reply gave no
    idea (`said`: the ideas' contents by line) that already says it. The answer to a question asking
    for a choice is a decision; any other a finding, unless its own words say it is a fix."""
    out: list[Answer] = []
    for line, turn, asking in asked:
        question = view.by_line(line)
        if question is None or question.role != "user":
            continue
        reply = reply_to(view, line, turn)
        if reply is None or any(a.message is reply for a in out):
            continue
        statement = _statement(reply)
        held = said.get(reply.line, [])
        if statement is None or len(held) >= MAX_IDEAS_PER_REPLY:
            continue
        terms = term_set(statement)
        if len(terms) < MIN_TERMS or any(overlap(terms, term_set(c)) >= SAYS_IT for c in held):
            continue
        found = classify(statement, "assistant")
        intent: Intent = "decision" if CHOICE.search(asking) else "conclusion"
        if found is not None and found.intent in _ANSWER_INTENTS:
            intent = found.intent
        out.append(Answer(reply, intent, shorten(capitalise(statement))))
    return out
