"""Candidate ideas the learned model picks: one per message it scores past its threshold.

The model (`cairn.agent.offline.classifier`) decides whether a message states a decision, a problem, a
fix, a raised question or todo, or the resolution of one, and which sentence says it; this module turns
that into a `Candidate` with readable content. A message whose statement is a tool call (the edit that
fixes a bug) is told by the assistant's words just before it in its turn, with the call's tool and
file, so the idea reads as what was done and still cites the call's line.
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
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import Segment, shorten
from cairn.agent.schema import DEFAULT_IMPORTANCE, Intent

_TOOL_USE = re.compile(r"^\[tool_use (?P<name>[\w.:-]+)\]", re.MULTILINE)
# How far back (in messages of the same turn) the words that introduce a tool call may be.
_INTRO_REACH = 3
# At most this many ideas per 100 messages of an update, the most likely first: twice the rate the model is
# calibrated to on coding sessions, so a conversation unlike them (a chat with no tool calls, where most
# messages look like statements) is not turned into an idea per message.
MAX_PER_100_MESSAGES = 24
# Fewer words than this ("yeah close it") say nothing on their own.
MIN_WORDS = 4
_INTENT: dict[str, Intent] = {
    "decision": "decision",
    "problem": "problem",
    "fix": "solution",
    "resolved": "conclusion",
}


def _intent(kind: str, sentence: str) -> Intent:
    if kind == "raised":
        return "question" if sentence.rstrip().endswith("?") else "todo"
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


def _content(view: SessionView, scored: Scored, kind: str, weights: Weights) -> str | None:
    message = scored.message
    sentence = carrying_sentence(message, kind, weights)
    if sentence is not None:
        text = sentence.text
        if len(text) < 40 and (rest := [s for s in message.prose if s.index == sentence.index + 1]):
            text = f"{text} {rest[0].text}"  # "Root cause confirmed!" says what only with the next one
        return text
    call = _call(message)
    if call is None:
        return None
    intro = _introduction(view, message)
    return f"{intro.text.rstrip(':')} ({call})" if intro is not None else None


def learned_candidates(view: SessionView, weights: Weights | None = None) -> list[Candidate]:
    """Every idea the model finds in `view`, in line order."""
    weights = weights or load_weights()
    found: list[Candidate] = []
    picked = chosen(score_session(view, weights), weights)
    room = math.ceil(MAX_PER_100_MESSAGES * len(view.messages) / 100)
    kept = {id(s) for s in sorted(picked, key=lambda s: -s.best)[:room]}
    for scored in (s for s in picked if id(s) in kept):
        kind = kind_of(scored, weights)
        content = _content(view, scored, kind, weights)
        if content is None or len(content.split()) < MIN_WORDS:
            continue
        intent = _intent(kind, content)
        text = shorten(content[:1].upper() + content[1:])
        found.append(
            Candidate(
                view.session,
                view.source_file,
                scored.message.line,
                intent,
                text,
                round(max(0.5, min(0.9, scored.best)), 2),
                DEFAULT_IMPORTANCE[intent],
                scored.message.turn,
                extract(text, view.known_files),
            )
        )
    return found
