"""The few phrases the offline indexer still reads words for, where a sentence's words and not a learned
model decide: an acknowledgment or an announced step is no statement; a todo marker, a report of work
done, a deferral, putting work off, a guess, a refutation, a correction or a change of plan links ideas
already found.

Which messages state a decision, a problem, a fix, a question or its resolution is not decided here:
the learned model does that (`cairn.agent.offline.classifier`). Limitation: these phrases are English.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE


def _any(*patterns: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


ACK = _any(
    r"^(?:ok(?:ay)?|k|thanks?(?: you)?(?: so much)?|thx|ty|great|perfect|cool|nice|awesome|excellent|got it|"
    r"sounds good|makes sense|sure|yes|yep|yeah|no|nope|done|good|right|alright|hello|hi|hey|lgtm|"
    r"continue|go ahead|go on|proceed|warmup|noted|understood|thank you)"
    r"(?:[\s,]+(?:thanks|thank you))?[.!,:)]*$"
)

PREAMBLE = _any(
    r"^(?:(?:ok(?:ay)?|great|perfect|good|now|next|first|then|alright|excellent|sure)[,!.]?\s+)*"
    r"(?:let me|let's (?:check|see|look|start|try|run|read|first|examine|explore|verify|create|update|fix|"
    r"begin|continue|test|get|find|also|now|search|analy[sz]e|review|make|write|add|implement|measure)|"
    r"i'll (?:\w+ )?(?:start|check|look|read|run|create|update|help|analy[sz]e|examine|explore|now|first|"
    r"begin|also|fix|try|make|write|add|implement|search|continue|verify|test|complete|kill|stop|"
    r"execute|provide|do|set|go|need|take)|i will (?:now|first|check|start|create|update)|"
    r"now (?:i'll|i will|let me|let's|i need to|i can)|i need to (?:read|check|look|first|fix|create|"
    r"update|see|find|make|verify)|(?:now )?we need to (?:confirm|check|verify|see|find out|figure out|"
    r"look|investigate|trace|understand)|i'm going to|i am going to|here's|here is|"
    r"based on (?:my|the) analysis)\b",
)

# "TODO" as a marker ("TODO: …", "# TODO", "TODO(ana)"), not the product in "a TODO app".
TODO = _any(r"(?:^|[#/]\s*)TODO\b(?!\s+app)|\bTODO\s*[:(]|\bFIXME\b", flags=0)

COMPLETION = _any(
    r"\b(?:done|completed?|finished|implemented|added|created|fixed|resolved|merged|shipped|deployed|"
    r"passing|passes|passed|in place|works)\b",
    r"[✓✅✔]",
)

# Putting work off on purpose ("that's a separate PR", "let's not make this change in this branch",
# "log an issue"): what was raised stays open, whatever was said about it.
PUT_OFF = _any(
    r"\bseparate (?:pr|issue|ticket|change|branch|task)\b|\bfollow[- ]?up\b|\bout of scope\b",
    r"\bin (?:a|another) (?:later |separate )?(?:pr|branch)\b",
    r"\b(?:log|file|open|create) (?:an? |the )?(?:\w+ )?(?:issue|ticket|bug)\b|\bnext session\b",
    r"\bnot\b[^.?!]{0,40}\b(?:in|for|on) this (?:branch|pr|change|session)\b",
    r"\bleave (?:it|that|this) for later\b",
)

# A guess at a cause, said as one ("My first guess is…", "I suspect…"): kept tentative, and replaced by the
# correction that follows it.
HYPOTHESIS = _any(
    r"\bmy (?:first |initial )?(?:guess|hypothesis|theory|suspicion|read) is\b",
    r"^(?:my |first |initial )*(?:guess|hypothesis|theory|suspicion)\s*:",
    r"\bi suspect\b",
    r"\bprobably (?:because|caused by|due to)\b",
    r"\b(?:likely|possible|probable) (?:cause|culprit|explanation)\b",
    r"\b(?:might|may|could) be (?:related to|caused by|due to|because)\b",
)

# A statement that an earlier guess or claim was wrong.
REFUTATION = _any(
    r"\b(?:guess|hypothesis|theory|assumption|idea) (?:was|is) (?:wrong|incorrect|mistaken)\b",
    r"\b(?:i|we) (?:was|were) wrong\b",
    r"\bnot (?:actually )?the (?:cause|culprit|problem|issue)\b",
    r"\bruled out\b|\bdisproved?\b|\bturns out (?:that )?(?:it'?s|it was|this is|that'?s) not\b",
    r"\bcontrary to what\b",
)

# A decision that replaces an earlier one ("instead of", "switch to", "actually, let's").
SUPERSESSION = _any(
    r"\binstead of\b|\brather than\b|\bno longer\b",
    r"\bswitch(?:ing|ed)? (?:over )?(?:to|from)\b",
    r"\breplac(?:e|es|ing|ed)\b.*\bwith\b",
    r"\bactually,? let'?s\b|\bchang(?:e|ed|ing) (?:it )?(?:from|to)\b|\bmov(?:e|ed|ing) (?:away )?from\b",
)

# What a correction says besides the refutation cues of `REFUTATION`.
CORRECTION = _any(
    r"\b(?:real|actual|true) (?:cause|problem|culprit|issue)\b",
    r"\b(?:theory|guess|hypothesis|suspicion|read) (?:was|is) wrong\b|\bi was wrong\b",
    r"\bafter all\b|\boverturns\b|^correction\b|\bsays otherwise\b",
)

# A decision that says it changes an earlier one, besides the cues of `SUPERSESSION`.
CHANGE = _any(
    r"\bchang(?:e|es|ing) (?:the |my |that |our )?(?:earlier |\w+ )?"
    r"(?:plan|decision|recommendation|part|approach)\b",
    r"\bswitching (?:approach|to)\b|\binstead\b",
)

# A correction that names the cause itself, not only that a guess was wrong.
REAL_CAUSE = _any(r"\b(?:real|actual|true|root) (?:cause|problem|culprit|issue)\b")

# A figure that moved: "31.4 → 17.9 GiB", "from 1.12 GB to 187 MB".
MOVED = _any(r"\d\S*\s?\S*\s*(?:→|->)\s*\d", r"\bfrom \d[\d.,]*\s?\S* to \d")

REQUEST = _any(
    r"^(?:(?:ok(?:ay)?|so|and|also|now|then|great|cool|hey|alright)[,!.]?\s+)*"
    r"(?:can|could|would|will) you\b",
    r"^(?:(?:ok(?:ay)?|so|and|also|now|then)[,!.]?\s+)*please\b",
    r"^(?:do you (?:want|mind)|would you (?:like|mind)|shall i|should i|want me to)\b",
    r"^how can i (?:help|assist)\b",
)


def is_ack(sentence: str) -> bool:
    return bool(ACK.match(sentence.strip()))


def is_preamble(sentence: str) -> bool:
    return bool(PREAMBLE.match(sentence.strip()))


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text
