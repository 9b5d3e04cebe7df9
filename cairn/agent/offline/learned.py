"""Candidate ideas the learned model picks: one per message it scores past its threshold.

The model (`cairn.agent.offline.classifier`) decides whether a message states a decision, a problem, a
fix, a raised question or todo, or the resolution of one, and which sentence says it; this module turns
that into a `Candidate` with readable content: the sentence that states it (never an acknowledgment,
an announced step or a pasted secret), and the marks its words give (a guess, a refutation, a change of
plan). A message whose statement is a tool call (the edit that fixes a bug) is told by the assistant's
words with the call's tool and file, so the idea reads as what was done and still cites the call's line.
"""

from __future__ import annotations

import math
import re

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.classifier import (
    Scored,
    Weights,
    carrying_sentence,
    chosen,
    kind_of,
    load_weights,
    score_session,
)
from cairn.agent.offline.cues import HYPOTHESIS, REFUTATION, is_ack, is_preamble
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import Segment, shorten
from cairn.agent.schema import DEFAULT_IMPORTANCE, Intent

# Emoji and emoticons that close a sentence ("can we drop it? 😅", "does it survive? :)") say nothing
# of it, and hide the question mark that makes it a question.
_TRAILING_EMOJI = re.compile(r"(?:\s*(?:[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]|[:;]-?[()DPp]))+\s*$")
_REDACTED = "[REDACTED:"
_TOOL_USE = re.compile(r"^\[tool_use (?P<name>[\w.:-]+)\]", re.MULTILINE)
# How far back (in messages of the same turn) the words that introduce a tool call may be.
_INTRO_REACH = 3
# At most this many ideas per 100 messages of an update, the most likely first: twice the rate the model is
# calibrated to on coding sessions, so a conversation unlike them (a chat with no tool calls, where most
# messages look like statements) is not turned into an idea per message.
MAX_PER_100_MESSAGES = 24
# An update of a few messages (the daemon's usual one) may still keep this many: the rate above is an
# average over whole sessions, and a short update that settles a guess says both in three lines.
MIN_ROOM = 3
# Fewer words than this ("yeah close it") say nothing on their own.
MIN_WORDS = 4
_INTENT: dict[str, Intent] = {
    "decision": "decision",
    "problem": "problem",
    "fix": "solution",
    "resolved": "conclusion",
}
_ASKS = re.compile(r"\?(?:\s|$)")
# Kinds whose sentence states what was settled, never asks.
_STATED = frozenset({"decision", "fix", "resolved"})


def _intent(kind: str, content: str) -> Intent:
    """A raised item is a question when it asks one ("HS256 or RS256? only our API checks these"), else a
    todo."""
    if kind == "raised":
        return "question" if _ASKS.search(content) else "todo"
    return _INTENT[kind]


def _call(message: Message) -> str | None:
    """A tool call said in words: `Edit cmd/entire/cli/hooks.go`, or the tool alone."""
    names = [m["name"].split("__")[-1] for m in _TOOL_USE.finditer(message.text)]
    if not names:
        return None
    target = (message.written or message.files or [None])[0]
    return f"{names[0]} {target}" if target else names[0]


def _introduction(view: SessionView, message: Message) -> Segment | None:
    """The assistant's last sentence before `message` in its turn, within a few messages."""
    index = view.messages.index(message)
    for other in reversed(view.messages[max(0, index - _INTRO_REACH) : index]):
        if other.turn != message.turn:
            return None
        if other.role == "assistant" and other.prose:
            return other.prose[-1]
    return None


def _says_something(sentence: Segment, kind: str) -> bool:
    """Not an acknowledgment ("Great."), an announced step ("Let me look…") or a pasted secret (a
    redaction marker): the model scores the message, and its sentence must be one that states. A
    decision, fix or resolution is never a question either: "Want me to disable auto-GC?" closing a
    conclusion offers a step the person has not taken."""
    text = sentence.text
    if kind in _STATED and _ASKS.search(text):
        return False
    return not (is_ack(text) or is_preamble(text) or _REDACTED in text)


def _content(view: SessionView, scored: Scored, kind: str, weights: Weights) -> str | None:
    message = scored.message
    said = [s for s in message.prose if _says_something(s, kind)]
    sentence = carrying_sentence(message, kind, weights, among=said)
    if sentence is not None:
        text = sentence.text
        after = [s for s in said if s.index == sentence.index + 1]
        before = [s for s in said if s.index == sentence.index - 1]
        # "Root cause confirmed!" says what only with the next sentence, "Can you find out why?" with the
        # one before; a refutation ("That guess was wrong: …") is followed by its correction.
        if after and (len(text) < 40 or REFUTATION.search(text)):
            text = f"{text} {after[0].text}"
        elif before and len(text) < 40:
            text = f"{before[0].text} {text}"
        return _TRAILING_EMOJI.sub("", text)
    call = _call(message)
    if call is None:
        return None
    # A call told by its own message's words ("Let me fix the lint error."), else by the words before it.
    intro = message.prose[-1] if message.prose else _introduction(view, message)
    return f"{intro.text.rstrip(':')} ({call})" if intro is not None else None


def learned_candidates(view: SessionView, weights: Weights | None = None) -> list[Candidate]:
    """Every idea the model finds in `view`, in line order, at most `MAX_PER_100_MESSAGES` of them."""
    weights = weights or load_weights()
    stated: list[tuple[Scored, str, str]] = []
    for scored in chosen(score_session(view, weights), weights):
        kind = kind_of(scored, weights)
        content = _content(view, scored, kind, weights)
        if content is not None and len(content.split()) >= MIN_WORDS:
            stated.append((scored, kind, content))
    room = max(MIN_ROOM, math.ceil(MAX_PER_100_MESSAGES * len(view.messages) / 100))
    kept = {id(s) for s, _, _ in sorted(stated, key=lambda item: -item[0].best)[:room]}
    return [_candidate(view, s, kind, content) for s, kind, content in stated if id(s) in kept]


def _candidate(view: SessionView, scored: Scored, kind: str, content: str) -> Candidate:
    """The idea `content` states, marked as a guess, a refutation or a change of plan when its words say
    so: those marks, not the model, let a correction replace the guess and a new plan the old one. A claim
    about a cause (a problem, fix or resolution) is marked by any sentence of its message: "So the
    page-number idea is wrong." makes a refutation of the message, whichever sentence tells it."""
    intent = _intent(kind, content)
    said = [content]
    if kind in ("problem", "fix", "resolved"):
        said += [s.text for s in scored.message.prose]
    hypothesis = any(HYPOTHESIS.search(text) for text in said)
    refutation = any(REFUTATION.search(text) for text in said)
    if hypothesis or refutation:
        intent = "conclusion"  # a guess at a cause, or its refutation, is a claim about the cause
    text = shorten(content[:1].upper() + content[1:])
    confidence = 0.5 if hypothesis else round(max(0.5, min(0.9, scored.best)), 2)
    return Candidate(
        view.session,
        view.source_file,
        scored.message.line,
        intent,
        text,
        confidence,
        DEFAULT_IMPORTANCE[intent],
        scored.message.turn,
        extract(text, view.known_files),
        hypothesis=hypothesis,
        refutation=refutation,
    )
