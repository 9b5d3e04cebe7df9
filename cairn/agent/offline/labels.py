"""Sentences their writer labelled: "Decision: …", "Root cause: …", "TODO: …", "Open question: …".

The learned model picks at most one statement per message, by how the message reads as a whole; a
recap that says "**Root cause:** …" and "**Fix:** …", or a reply that ends with "TODO: …", states
several things and names each. A label is the writer's own word for what a sentence is, the same in
any project, so it is read here rather than learned. A heading that is only a label ("**Fix:**" over a
list) labels the first item under it.
"""

from __future__ import annotations

import re

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.cues import REFUTATION, capitalise
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import shorten
from cairn.agent.schema import DEFAULT_IMPORTANCE, Intent

_NAMES: dict[str, Intent] = {
    "decision": "decision",
    "decided": "decision",
    "conclusion": "conclusion",
    "root cause": "conclusion",
    "cause": "conclusion",
    "diagnosis": "conclusion",
    "fix": "solution",
    "solution": "solution",
    "bug": "problem",
    "problem": "problem",
    "open question": "question",
    "question": "question",
    "todo": "todo",
    "fixme": "todo",
    "next step": "todo",
}
_NAME = "|".join(sorted(_NAMES, key=len, reverse=True))
_LABEL = re.compile(
    # A short lead-in may come first: "On gzip — decision: …", "so my proposal: …".
    r"^(?:(?:[\w`'./-]+\s+){1,4}[\u2014\u2013-]\s+)?(?:(?:so|and|also|ok(?:ay)?|my|our|the)[,]?\s+)?"
    r"(?P<label>" + _NAME + r")"
    r"(?:\s+(?:though|then|here|for now))?\s*(?:\([^)]{0,40}\))?\s*[:\u2014]\s*(?P<rest>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
# A heading that is a label ("**Fix (2 files changed):**" over a list): its first item says it.
_HEADING = re.compile(
    r"^(?P<label>" + _NAME + r")\s*(?:\([^)]{0,40}\))?$",
    re.IGNORECASE,
)
# A label says more than a model score: as sure as the model's surest picks.
_CONFIDENCE = 0.8
_MIN_WORDS = 4


def _labelled(text: str, heading: str, seen: set[str]) -> tuple[str | None, str]:
    """(label, what it labels) of a sentence, or of the first item under a label heading."""
    if (match := _LABEL.match(text)) is not None:
        return match["label"], match["rest"]
    if heading and heading not in seen and (match := _HEADING.match(heading.strip())) is not None:
        seen.add(heading)
        return match["label"], text
    return None, ""


def labelled_candidates(view: SessionView) -> list[Candidate]:
    """One idea per labelled sentence said by the person or the assistant, its label left out."""
    found: list[Candidate] = []
    for message in view.messages:
        if message.role not in ("user", "assistant"):
            continue
        headings: set[str] = set()
        for sentence in message.prose:
            label, rest = _labelled(sentence.text, sentence.heading, headings)
            if label is None or len(rest.split()) < _MIN_WORDS:
                continue
            intent = _NAMES[label.lower()]
            content = shorten(capitalise(rest.strip()))
            if intent == "question" and not content.endswith("?"):
                intent = "todo"
            found.append(
                Candidate(
                    view.session,
                    view.source_file,
                    message.line,
                    intent,
                    content,
                    _CONFIDENCE,
                    DEFAULT_IMPORTANCE[intent],
                    message.turn,
                    extract(content, view.known_files),
                    refutation=intent == "conclusion" and bool(REFUTATION.search(content)),
                    labelled=True,
                )
            )
    return found


def with_labelled(view: SessionView, learned: list[Candidate]) -> list[Candidate]:
    """`learned` and the labelled sentences of `view`; where the model picked a labelled sentence, the
    label's kind and wording stand in for its pick."""
    labelled = labelled_candidates(view)
    said = {(c.line, c.content[:30].lower()) for c in labelled}
    kept = [
        c for c in learned if not any(line == c.line and start in c.content.lower() for line, start in said)
    ]
    return sorted(kept + labelled, key=lambda c: c.line)
