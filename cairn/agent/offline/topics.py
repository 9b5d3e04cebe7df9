"""Topic spans for the offline indexer: where a topic opens or shifts, what to call it, what it covered.

A shift is an explicit transition in a prompt ("let's move on to…", "back to…", "next, …") or a
substantial prompt whose terms barely occur in the current topic so far (its name, summary, the
session's recent ideas and the prose since it started). A name is the prompt's most salient words:
those the topic's own messages repeat most, in the prompt's order; Claude Code's session summary
line is used instead when it shares terms with the opening messages (a summary line can describe an
earlier session, so it is not trusted blindly). The executor stores a new span's `reason` as its
first summary, so the reason says why the topic starts and what it covered in this batch.

Limitations: a gradual drift with no single off-topic prompt is not detected; a session whose batch
holds only noise (a sub-agent's warm-up) opens no span, so the next batch names it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.cues import REQUEST, is_ack
from cairn.agent.offline.gazetteer import canonical
from cairn.agent.offline.lookups import KnownSpan
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import STOPWORDS, coverage, shorten, term_set, terms
from cairn.agent.schema import TopicChange, TopicUpdate

MAX_NAME_WORDS = 4
SHIFT_COVERAGE = 0.15
MIN_SHIFT_TERMS = 5
MIN_MESSAGES_PER_SPAN = 3
# A new request is compared with what was said lately, not with everything since the topic opened:
# a long topic's vocabulary covers almost any prompt.
RECENT_MESSAGES = 6
MIN_OPENING_TERMS = 4
SUMMARY_CHARS = 600
TRANSITION = re.compile(
    r"^(?:(?:ok(?:ay)?|so|alright|great|thanks|cool|good)[,.!]?\s+)*"
    r"(?:let'?s (?:now )?(?:move on|switch|turn|go back|get back|look at|talk about|focus on|work on)|"
    r"moving on|next[,:]|now let'?s|now,? (?:on|for) |switching (?:gears|topics?|to)|back to|"
    r"(?:on )?(?:a |another |a different |an unrelated )(?:topic|question|thing|note)|unrelated|"
    r"(?:separate|different|other) (?:thing|topic|question|issue)|random q|btw\b|by the way|"
    r"different topic|changing (?:the )?subject|new topic|separately,)",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^(?:(?:i'?ll|i will|let me|let'?s|we need to|i want to|i'?d like to|help me|we should)\s+)+"
    r"(?:help you\s+)?(?:(?:also|now|first)\s+)?",
    re.IGNORECASE,
)
_NAME_NOISE_TEXT = """
    create make add update implement fix run help want need would like check let lets start begin build write
    show tell give find look figure work working please also new thing stuff way sure remember never always
    following use using used can could should will might time bit quick quickly directory file files analyze
    analyse examine explore understand effectively future instances latest current basic simple proper
    available"""
_NAME_NOISE = frozenset(_NAME_NOISE_TEXT.split())
# Interjections and reactions a prompt opens with ("lol the CI badge is red", "ugh. use these"): how
# the person felt, not what the work is.
_INTERJECTION = re.compile(
    r"^(?:(?:lol|haha|ugh|hmm+|oh|ah|wow|nice|ok(?:ay)?|cool|great|good|so|well|alright|fine|right)\b[\s,.!:;-]*)+",
    re.IGNORECASE,
)
_SUMMARY_HEAD = re.compile(r"^([^:]{8,80}):")
_AFTER_NUMBER = re.compile(r"\d ?$")
_NAME_WORD = re.compile(r"[A-Za-z][\w+#'-]*(?:\.[A-Za-z]\w*)*")
_TALK = ("user", "assistant", "delegate")


@dataclass
class TopicState:
    """The topic a session is in while its messages are read."""

    span_id: int | None
    name: str
    vocabulary: set[str] = field(default_factory=set)
    messages: int = 0
    recent: list[frozenset[str]] = field(default_factory=list)
    seed: frozenset[str] = frozenset()  # what a stored span says about itself: name, summary, recent ideas

    def heard(self, said: frozenset[str]) -> None:
        self.vocabulary |= said
        self.recent = [*self.recent, said][-RECENT_MESSAGES:]

    def lately(self) -> frozenset[str]:
        """The terms of the topic's name, of what a stored span says about itself and of its last few
        messages (all of it before any is read)."""
        if not self.recent:
            return frozenset(self.vocabulary)
        return term_set(self.name).union(self.seed, *self.recent)


@dataclass
class _Segment:
    start: int
    cause: str
    opener: Message | None
    from_span_id: int | None
    messages: list[Message] = field(default_factory=list)


def _prompt_text(message: Message) -> str:
    """The first two sentences of a prompt that are not acknowledgments."""
    return " ".join([s.text for s in message.prose if not is_ack(s.text)][:2])


def _display(word: str) -> str:
    """How a word shows in a name: a technology in its canonical casing, code as written, else Capitalised."""
    tech = canonical(word)
    if tech and tech.lower() == word.lower():
        return tech
    return word if word.isupper() or any(c.isupper() for c in word[1:]) or "." in word else word.capitalize()


def name_from(text: str, salience: Counter[str] | None = None) -> str:
    """A short Title Case name: the words of `text` its topic repeats most, in the order `text` has them."""
    text = _INTERJECTION.sub("", text.strip())
    text = _LEAD.sub("", TRANSITION.sub("", REQUEST.sub("", text)).strip(" ,:"))
    text = _INTERJECTION.sub("", text)
    salience = salience or Counter()
    picked: dict[str, tuple[int, str]] = {}
    for position, match in enumerate(_NAME_WORD.finditer(text)):
        word = match.group(0)
        low = word.lower().strip(".-'")
        if (
            # A unit glued to a number ("300ms", "1.1GB", "500 kB") says how much, not what.
            (len(low) <= 3 and _AFTER_NUMBER.search(text, 0, match.start()) is not None)
            or len(low) < 2
            or low in STOPWORDS
            or low in _NAME_NOISE
            or low.isdigit()
            or "'" in low
            or low in picked
            or low == "redacted"
        ):
            continue
        picked[low] = (position, word.strip(".-'"))
    ranked = sorted(
        picked.items(),
        key=lambda item: (
            -sum(salience[t] for t in terms(item[0])) - (2 if canonical(item[0]) else 0),
            item[1][0],
        ),
    )[:MAX_NAME_WORDS]
    ordered = sorted(ranked, key=lambda item: item[1][0])
    return " ".join(_display(word) for _low, (_pos, word) in ordered) or "Untitled Topic"


def _summary_name(view: SessionView, readable: list[Message]) -> str | None:
    """Claude Code's summary line as a name, when it is about the opening messages of this batch."""
    summary = next((m for m in view.messages if m.role == "summary"), None)
    if summary is None:
        return None
    opening = " ".join(_prompt_text(m) for m in [m for m in readable if m.role in _TALK][:2])
    if len(term_set(summary.text) & term_set(opening)) < 2:
        return None
    head = _SUMMARY_HEAD.match(summary.text.strip())
    text = head.group(1) if head else summary.text
    if head and " " not in text.strip():  # "pricing-svc: wrong currency …" names the project, then the work
        text = summary.text.strip()[head.end() :]
    return " ".join(w if w.isupper() or canonical(w) else w.capitalize() for w in text.split()[:6])


def _opener(messages: list[Message]) -> Message | None:
    """The message a topic's name comes from: its first real prompt, else the assistant's first words."""
    talk = [m for m in messages if m.role in _TALK and m.prose and _prompt_text(m)]
    prompts = [m for m in talk if m.role != "assistant"]
    if prompts and (not talk or talk[0].role != "assistant"):
        return prompts[0]
    return talk[0] if talk else None


def _worth_a_span(view: SessionView, ideas: list[Candidate]) -> bool:
    """Whether an update says anything a topic could be about (not only a warm-up or acknowledgments)."""
    return bool(ideas) or any(m.role in ("user", "delegate") and _prompt_text(m) for m in view.messages)


def _shift(message: Message, state: TopicState) -> str | None:
    """Why `message` starts a new topic, or None."""
    if message.role not in ("user", "delegate") or state.messages < MIN_MESSAGES_PER_SPAN:
        return None
    text = _prompt_text(message)
    if not text:
        return None
    prompt = term_set(text)
    if TRANSITION.match(text) and len(prompt) >= 2:
        return "Explicit move to a new topic"
    if len(prompt) >= MIN_SHIFT_TERMS and coverage(prompt, state.lately()) < SHIFT_COVERAGE:
        return "New request"
    return None


def _opening_line(view: SessionView, readable: list[Message], ideas: list[Candidate]) -> int:
    """Where a session's first topic starts: at its first real request or idea, after any greeting and
    small talk ("morning", "hi! how's your day going"), which are no part of the work."""
    asks = [
        m.line
        for m in readable
        if m.role in ("user", "delegate") and len(term_set(_prompt_text(m))) >= MIN_OPENING_TERMS
    ]
    found = [*asks[:1], *(c.line for c in ideas[:1])]
    return min(found) if found else view.messages[0].line


def _points(ideas: list[Candidate]) -> list[str]:
    chosen = sorted(
        (c for c in ideas if c.intent in ("decision", "conclusion", "solution", "problem", "question")),
        key=lambda c: (-c.importance, c.line),
    )[:3]
    return [c.content for c in sorted(chosen, key=lambda c: c.line)]


def _reason(segment: _Segment, ideas: list[Candidate]) -> str:
    """Why the span opens and what it covered: the executor keeps this as the span's first summary."""
    said = _prompt_text(segment.opener) if segment.opener else ""
    opening = f'{segment.cause}: "{shorten(said, 160)}"' if said else segment.cause
    points = [point for point in _points(ideas) if point.rstrip(".") not in said]
    return shorten(" ".join([opening, *points]), SUMMARY_CHARS)


def topics(
    view: SessionView,
    span: KnownSpan | None,
    span_known: bool,
    ideas: list[Candidate],
    carried: TopicState | None = None,
    recent: list[str] | None = None,
) -> tuple[list[TopicChange], list[TopicUpdate], TopicState | None]:
    """Topic changes and updates for one session update, and the topic state it ends in.

    `span_known` says `get_current_span` was asked: without it no span is opened and no shift is
    claimed, since the session may well have a span. `carried` is the state an earlier update of the
    same session in this batch ended in; `recent` holds the session's recent stored ideas, which
    widen an existing span's vocabulary beyond its name and summary.
    """
    readable = [m for m in view.messages if m.role not in ("tool", "system")]
    if not readable or not (span_known or carried is not None):
        return [], [], carried
    segments: list[_Segment] = []
    if carried is not None:
        state = carried
    elif span is not None:
        vocabulary = term_set(" ".join([span.name, span.summary, *(recent or [])]))
        state = TopicState(span.id, span.name, set(vocabulary), MIN_MESSAGES_PER_SPAN, seed=vocabulary)
    elif _worth_a_span(view, ideas):
        start = _opening_line(view, readable, ideas)
        readable = [m for m in readable if m.line >= start]
        opener = _opener(readable)
        segments.append(_Segment(start, "Session opens", opener, None))
        state = TopicState(
            None, _summary_name(view, readable) or name_from(_prompt_text(opener) if opener else "")
        )
    else:
        return [], [], None
    for message in readable:
        reason = _shift(message, state)
        if reason is not None:
            segments.append(_Segment(message.line, reason, message, state.span_id))
            state = TopicState(None, name_from(_prompt_text(message)))
        if segments:
            segments[-1].messages.append(message)
        state.messages += 1
        if message.role in _TALK:
            state.heard(term_set(" ".join(s.text for s in message.prose)))
    changes: list[TopicChange] = []
    for index, segment in enumerate(segments):
        end = segments[index + 1].start if index + 1 < len(segments) else None
        inside = [c for c in ideas if c.line >= segment.start and (end is None or c.line < end)]
        salience = Counter(
            t for m in segment.messages if m.role in _TALK for s in m.prose for t in terms(s.text)
        )
        name = _summary_name(view, segment.messages) if segment.cause == "Session opens" else None
        if not name and segment.opener is not None:
            both = _prompt_text(segment.opener)
            first = next(s.text for s in segment.opener.prose if not is_ack(s.text))
            name = (
                name_from(first, salience)
                if len(name_from(first).split()) >= 2
                else name_from(both, salience)
            )
        name = name or "Untitled Topic"
        changes.append(
            TopicChange(
                session=view.session,
                from_span_id=segment.from_span_id,
                new_topic_name=name,
                reason=_reason(segment, inside),
                start_line=segment.start,
            )
        )
    if changes:
        state.name = changes[-1].new_topic_name
    updates: list[TopicUpdate] = []
    if span is not None and carried is None:
        before = [c for c in ideas if not segments or c.line < segments[0].start]
        points = [point for point in _points(before) if point not in span.summary]
        if points:
            summary = shorten(" ".join([span.summary.strip(), *points]).strip(), SUMMARY_CHARS)
            if summary != span.summary:
                updates.append(TopicUpdate(session=view.session, span_id=span.id, summary=summary))
    return changes, updates, state
