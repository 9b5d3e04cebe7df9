"""Cue phrases that give a sentence its intent, and the hedges and labels that adjust how sure it is.

The rules run in a fixed order, first match wins: an acknowledgment is noise; an explicit label
("Decision:", "TODO:") decides; a user's real question stays a question even when it mentions a
decision ("Should we switch to Postgres?"); decisions and conclusions are recognised before the
tool-use preambles that would otherwise swallow "Let's use…"; weak solution cues ("passed", "no
errors") count only after a problem was seen. Limitation: cue phrases are English and surface-level,
so a decision stated without any of them ("Postgres it is") is missed, and sarcasm or quoted text
is taken at face value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.agent.schema import DEFAULT_IMPORTANCE, Intent

_I = re.IGNORECASE


def _any(*patterns: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


ACK = _any(
    r"^(?:ok(?:ay)?|k|thanks?(?: you)?(?: so much)?|thx|ty|great|perfect|cool|nice|awesome|excellent|got it|"
    r"sounds good|makes sense|sure|yes|yep|yeah|no|nope|done|good|right|alright|hello|hi|hey|lgtm|"
    r"continue|go ahead|go on|proceed|warmup|noted|understood|thank you)"
    r"(?:[\s,]+(?:thanks|thank you))?[.!,:)]*$"
)
_LABELS: dict[str, Intent] = {
    "open question": "question",
    "question": "question",
    "decision": "decision",
    "decided": "decision",
    "rule": "decision",
    "conclusion": "conclusion",
    "root cause": "conclusion",
    "finding": "conclusion",
    "todo": "todo",
    "to-do": "todo",
    "fixme": "todo",
    "next step": "todo",
    "next steps": "todo",
    "follow-up": "todo",
    "problem": "problem",
    "bug": "problem",
    "solution": "solution",
    "fix": "solution",
    "proposal": "decision",
    "plan": "decision",
    "recommendation": "decision",
    "limitation": "problem",
    "known limitation": "problem",
    "caveat": "problem",
}
_LABEL_NAMES = "|".join(sorted((re.escape(k) for k in _LABELS), key=len, reverse=True))
LABEL = re.compile(
    # A short lead-in may come first: "On gzip — decision: …", "so my proposal: …", "Fix for 0043: …".
    r"^(?:(?:[\w`'./-]+\s+){1,4}[\u2014\u2013-]\s+|(?:so\s+)?(?:my|our|the)\s+)?"
    r"(?P<label>" + _LABEL_NAMES + r")"
    r"(?:\s+(?:though|then|here|for now|for [\w`'./-]+))?\s*(?::|\u2014|\u2013)\s*",
    _I,
)
# A heading that is only a label ("Decision:" above a numbered list) gives the list its intent.
HEADING_LABEL = re.compile(r"^(?P<label>" + _LABEL_NAMES + r")$", _I)


# A summary's heading that says what its list holds: the design decisions of work just done, the chain
# of causes found, the changes that fixed something ("Key design decisions:", "Here's the root cause
# chain:", "Key changes:"). Checked after the exact labels, on headings only: a list under them is one idea.
SUMMARY_HEADING: tuple[tuple[re.Pattern[str], Intent], ...] = (
    (re.compile(r"\bdesign (?:decisions?|choices)\b|^(?:key |main )?decisions(?: made)?$", _I), "decision"),
    (re.compile(r"\broot[- ]cause\b|^(?:the )?(?:cause|diagnosis)$", _I), "conclusion"),
    (re.compile(r"^(?:key |main )?changes(?: made)?$|^what (?:i |was )?changed$", _I), "solution"),
    (re.compile(r"(?:^|[.!]\s+)(?:here'?s )?(?:the flow|how (?:it|this) works)$", _I), "conclusion"),
)


# "Fix (2 files changed)": an aside after a heading's label.
_ASIDE = re.compile(r"\s*\([^()]*\)$")


def heading_intent(heading: str) -> Intent | None:
    """The intent a list's heading names ("Decision", "Fix", "Plan"), or None."""
    match = HEADING_LABEL.match(_ASIDE.sub("", heading.strip().rstrip(":").strip()))
    return _LABELS[match.group("label").lower()] if match else None


def list_intent(heading: str) -> Intent | None:
    """The intent of the list under a heading: a label's, or a summary heading's ("Key design
    decisions", "Here's the root cause chain"). Only for a segment's heading, never its own text:
    "the root cause is …" in a sentence is a statement, not a heading."""
    text = heading.strip().rstrip(":").strip()
    return heading_intent(text) or next((i for pattern, i in SUMMARY_HEADING if pattern.search(text)), None)


HEDGE = _any(
    r"\b(?:maybe|might|perhaps|possibly|probably|presumably|likely|could be|may be|not sure|unsure)\b",
    r"\bi (?:think|guess|suspect|believe)\b",
    r"\b(?:seems?|appears?)\b",
    r"\bmy (?:first |initial )?(?:guess|hypothesis|theory)\b",
)
FIRM = _any(r"\b(?:definitely|confirmed|verified|always|never|must)\b", r"^decision\b")
REQUEST = _any(
    r"^(?:(?:ok(?:ay)?|so|and|also|now|then|great|cool|hey|alright)[,!.]?\s+)*"
    r"(?:can|could|would|will) you\b",
    r"^(?:(?:ok(?:ay)?|so|and|also|now|then)[,!.]?\s+)*please\b",
    r"^(?:do you (?:want|mind)|would you (?:like|mind)|shall i|should i|want me to)\b",
    r"^how can i (?:help|assist)\b",
)
# Without a question mark only these openings make a question ("do X" and "is Y" are too often not).
INTERROGATIVE = _any(r"^(?:why|how|what|which|where|when|who|whose|should we|shall we|is there|are there)\b")
HYPOTHESIS = _any(
    r"\bmy (?:first |initial )?(?:guess|hypothesis|theory|suspicion|read) is\b",
    r"^(?:my |first |initial )*(?:guess|hypothesis|theory|suspicion)\s*:",
    r"\bi suspect\b",
    r"\bprobably (?:because|caused by|due to)\b",
    r"\b(?:likely|possible|probable) (?:cause|culprit|explanation)\b",
    r"\b(?:might|may|could) be (?:related to|caused by|due to|because)\b",
)
REFUTATION = _any(
    r"\b(?:guess|hypothesis|theory|assumption|idea) (?:was|is) (?:wrong|incorrect|mistaken)\b",
    r"\b(?:i|we) was wrong\b|\b(?:i|we) were wrong\b",
    r"\b(?:is|was|isn't|wasn't) (?:not )?(?:the|a) (?:cause|culprit|problem)\b.*\bnot\b",
    r"\bnot (?:actually )?the (?:cause|culprit|problem|issue)\b",
    r"\bruled out\b|\bdisproved?\b|\bturns out (?:that )?(?:it'?s|it was|this is|that'?s) not\b",
    r"\bcontrary to what\b",
)
_DECISION_VERBS = (
    r"use|go with|switch|adopt|stick with|keep|stay (?:on|with)|move to|migrate to|replace|prefer|"
    r"standardi[sz]e on|drop|avoid|not use|pin|require|only (?:use|allow|run)"
)
DECISION = _any(
    r"\b(?:we|i)(?:'ll| will| are going to|'re going to| shall)\s+(?:" + _DECISION_VERBS + r")\b",
    r"\blet'?s\s+(?:also\s+)?(?:" + _DECISION_VERBS + r"|not)\b(?!\s+on\b)",
    r"\b(?:we|i)\s+(?:have\s+|had\s+)?(?:decided|chose|chosen|opted|settled on|agreed)\b",
    r"\bgoing with\b|\bwe(?:'ll| will)? go with\b|\bsettled on\b",
    r"\bswitch(?:ing|ed)? (?:over )?(?:to|from)\b",
    r"\b(?:use|go with|prefer|pick|choose)\b.*\b(?:instead of|rather than)\b",
    r"\bfrom now on\b|\bas a rule\b|\b(?:team|house|project|hard) rule\b",
    r"^(?:always|never)\s+\w+",
    r"\b(?:remember|note)\s*:\s*(?:always|never)\b",
    r"\bwe should (?:use|switch|adopt|move to|migrate to|stick with|stay on|prefer)\b",
)
TOOL_TALK = _any(r"\b(?:the |a )?\w+ tool\b", r"\btools?\b\s+to\b", r"\bTodoWrite\b")
SUPERSESSION = _any(
    r"\binstead of\b|\brather than\b|\bno longer\b|\bany ?more\b",
    r"\bswitch(?:ing|ed)? (?:over )?(?:to|from)\b",
    r"\breplac(?:e|es|ing|ed)\b.*\bwith\b",
    r"\bactually,? let'?s\b|\bchang(?:e|ed|ing) (?:it )?(?:from|to)\b|\bmov(?:e|ed|ing) (?:away )?from\b",
)
CONCLUSION = _any(
    r"\b(?:real |root |actual |underlying )?cause (?:is|was|of (?:the|this) \w+ (?:is|was))\b",
    r"\b(?:real|actual|true) (?:cause|problem|culprit)\b",
    r"\broot cause\b|\bturns out\b|\bturned out\b",
    r"\bthe (?:problem|issue|bug|reason|culprit|catch) (?:is|was)\b",
    r"\b(?:that|this|which) (?:means|explains|confirms)\b",
    r"\bconclusion\b|\bthe answer is\b|\bso the answer\b",
    r"\b(?:is|was|are|were) caused by\b|\bbecause of this\b",
    r"\b(?:i|we) (?:found|figured out|realized|realised|learned|confirmed) (?:that|why|the)\b",
    r"\bthe (?:lesson|takeaway) is\b",
    r"\b(?:is|are|was|were) actually\b",
)
PREAMBLE = _any(
    r"^(?:(?:ok(?:ay)?|great|perfect|good|now|next|first|then|alright|excellent|sure)[,!.]?\s+)*"
    r"(?:let me|let's (?:check|see|look|start|try|run|read|first|examine|explore|verify|create|update|fix|"
    r"begin|continue|test|get|find|also|now|search|analy[sz]e|review|make|write|add|implement|measure)|"
    r"i'll (?:\w+ )?(?:start|check|look|read|run|create|update|help|analy[sz]e|examine|explore|now|first|"
    r"begin|also|fix|try|make|write|add|implement|search|continue|verify|test|complete|kill|stop|"
    r"execute|provide|do|set|go|need|take)|i will (?:now|first|check|start|create|update)|"
    r"now (?:i'll|i will|let me|let's|i need to|i can)|i need to (?:read|check|look|first|fix|create|"
    r"update|see|find|make|verify)|i'm going to|i am going to|here's|here is|"
    r"based on (?:my|the) analysis)\b",
)
# "TODO" as a marker ("TODO: …", "# TODO", "TODO(ana)"), not the product in "a TODO app".
TODO = _any(r"(?:^|[#/]\s*)TODO\b(?!\s+app)|\bTODO\s*[:(]|\bFIXME\b", flags=0)
TODO_PHRASES = _any(
    r"\b(?:we|you) (?:still |will |'ll )?(?:need|have) to\b",
    r"\bwe(?:'ll| will) (?:also )?need to\b",
    r"\bremember to\b|\bdon'?t forget to\b|\bmake sure (?:we|to)\b",
    r"\bnext steps?\b(?: (?:is|are|would be|will be))?",
    r"\blater,? (?:we|i|you) (?:should|could|can|will)\b|\bat some point\b",
    r"\bwe should (?:also )?(?:add|write|update|fix|check|implement|handle|migrate|test|document|revisit|"
    r"clean|refactor|investigate|measure|remove|rename)\b",
    r"\bstill (?:needs?|has) to be\b|\bleft to do\b|\bfollow[- ]up\b",
    # What the person is to do later: "Next time you do a commit/push, check `/tmp/…log`."
    r"^(?:the )?next time (?:you|we|it)\b[^.]{0,80}\b(?:check|look at|run|watch|see|compare|open|send)\b",
)
SOLUTION_STRONG = _any(
    r"\bfixed by\b|\bresolved by\b",
    r"\bthe (?:real |actual |proper |right |correct |simplest |minimal |only )?"
    r"(?:fix|solution|workaround) (?:is|was)\b",
    # "The fix adds detection for …": a report of what the fix does.
    r"^(?:the|this|my) fix (?:now )?(?:adds|uses|makes|changes|moves|replaces|removes|checks|detects|skips|"
    r"keeps|sets|stops|guards|wraps)\b",
    r"\b(?:is|are|was|were|has been|have been) (?:now )?(?:fixed|resolved|solved)\b",
    r"\bnow (?:passes|pass|works|work|succeeds|compiles|builds|runs)\b",
    r"\b(?:works|passes|pass|compiles|builds) now\b|\b(?:this|that|which) fixe[sd]\b|\bsolved\b",
)
SOLUTION_WEAK = _any(
    r"\b(?:passed|passes|succeeded|succeeds|compiled successfully|is passing|are passing)\b",
    r"\bno (?:more )?(?:\w+ )?errors\b|\bwithout (?:any )?errors\b|\b(?:0|zero) errors\b",
    r"\b(?:fixed|resolved)\b",
    r"\b(?:running|works|worked|runs) (?:successfully|fine|correctly)\b",
)
PROBLEM_USER = _any(
    r"\b(?:fails|failed|failing|crash(?:es|ed|ing)?|broken|doesn'?t work|does not work|not working|"
    r"won'?t (?:start|work|build|compile|run)|hangs?|hanging|timed out|flaky|regression|panic|segfault|"
    r"stack trace|is locked|throws|raises)\b",
    r"\bfailure\b(?! (?:handling|mode))",
    r"\b(?:get|getting|got|see|seeing|hit|hitting|returns?|shows?) (?:an? |this |the |some )?(?:\w+ )?"
    r"(?:error|exception|bug)s?\b",
    r"\b(?:error|exception|fatal)\s*:|\bthere(?:'s| is) a bug\b|\bbug in\b",
    # Symptoms as people report them: slowness, wrong or doubled output, an HTTP error status, a jump
    # in a measured figure ("p99 went from 40ms to 350ms").
    r"\b(?:slow|laggy|stuck|crashloop\w*|wrong|doubled|duplicated?|leak(?:s|ing|ed)?)\b",
    r"\b(?:returns?|returning|gives?|giving|gets?|getting|throws?)\s+(?:an?\s+|a\s+)?[45]\d\d\b",
    r"\bwent (?:up )?from \S*\d\S* to \S*\d",
    r"\btakes? \d[\d.]*\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?)\b",
    r"\b(?:are|is|am|we're|i'm|they're|keep|keeps) (?:still )?seeing\b",
    r"\bsometimes (?:returns|fails|shows|gives|crashes|hangs|drops|loses)\b",
)
# A measured result: a figure that moved ("40.3 s → 2.9 s", "from 1.12 GB to 187 MB") or two measured
# figures in one sentence ("4.2k req/s with p99 38 ms"). What a run showed is a finding.
_FIGURE = r"\d[\d.,]*k?\s?(?:%|[kKMG]i?B|ms|s|sec|min|req/s|it/s|ms/op|allocs/op)(?![\w/])"
MEASURED = _any(
    r"\d[\d.,]*k?\s?(?:%|[kKMG]i?B|ms|s|it/s|req/s)?\s*(?:→|->)\s*\d",
    r"\bfrom \d[\d.,]*\s?\S* to \d",
    rf"{_FIGURE}.*{_FIGURE}",
)
_LET_ME = re.compile(r"^(?:(?:ok(?:ay)?|so|now|first|then|alright)[,!.]?\s+)*let me\b", re.IGNORECASE)
# Exception class names and tracebacks are problems whatever words surround them.
PROBLEM_SIGNATURE = _any(r"\b[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b", flags=0)
PROBLEM_ASSISTANT = _any(
    r"\bthere (?:is|are|seems to be|appears to be|was) (?:a |an |some )?(?:\w+ )?"
    r"(?:bug|issue|problem|error|discrepancy|mismatch|conflict)s?\b",
    r"\b(?:is|are|keeps|kept) failing\b|\bfail(?:s|ed) with\b|\bthrows\b|\bcrash(?:es|ed)\b",
    r"\bdoesn'?t work\b|\bdoes not work\b|\bnot working\b",
    r"\b(?:wasn'?t|weren'?t|was not|were not) (?:\w+ )?(?:created|found|saved|applied|written) "
    r"(?:properly|correctly)\b",
    r"\b(?:is|are) (?:still )?missing\b|\bgot lost\b",
)
NEGATED_PROBLEM = _any(
    r"\bno (?:\w+ )?(?:errors?|issues?|problems?|failures?)\b",
    r"\bwithout (?:any )?(?:errors?|issues?|problems?)\b",
    r"\b(?:0|zero) (?:errors?|failures?)\b",
    r"\bas expected\b",
)
ACCOMPLISHMENT = _any(
    r"^(?:done[.!]?\s+|great[.!]?\s+|perfect[.!]?\s+)?(?:i|we)(?:'ve|\s+have)?\s+(?:now\s+)?"
    r"(?:also\s+)?(?:successfully\s+)?(?:created|implemented|added|updated|built|set up|configured|written|"
    r"wrote|refactored|migrated|fixed|removed|replaced|integrated|documented|moved|renamed|upgraded|"
    r"installed|completed|finished)\b",
    r"^(?:successfully )?(?:created|implemented|added|updated|integrated|migrated|upgraded|installed)\s+\S",
    r"^\S+(?: \S+){0,3} (?:has|have) been (?:successfully |completely |fully )?(?:created|implemented|added|"
    r"updated|integrated|migrated|upgraded|installed|configured|documented|fixed|transformed|rewritten)\b",
)
COMPLETION = _any(
    r"\b(?:done|completed?|finished|implemented|added|created|fixed|resolved|merged|shipped|deployed|"
    r"passing|passes|passed|in place|works)\b",
    r"[✓✅✔]",
)
# Cues of links inside a batch (`inbatch`).
# Saying an answer will come later is no answer.
DEFERRAL = _any(
    r"\bi don'?t know\b|\bnot sure\b|\blater in the session\b",
    r"\bi'?ll (?:check|look|find out)\b|\blet me (?:check|look|try)\b|\bhard to say\b",
    r"\b(?:can'?t|cannot) (?:answer|say|tell)\b|\btoo early to (?:say|tell)\b",
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
# A reply that says which earlier question it answers ("To your DeepSpeed question: …").
ANSWER_CUE = _any(
    r"\bto (?:answer )?your (?:earlier |[\w/.-]+ )?question\b|\bas for your (?:\w+ )?question\b",
    r"\b(?:that|this) answers the (?:open |earlier )?question\b|^on whether\b",
)
# What a correction says besides the refutation cues of `REFUTATION`.
CORRECTION = _any(
    r"\b(?:real|actual|true) (?:cause|problem|culprit|issue)\b",
    r"\b(?:theory|guess|hypothesis|suspicion|read) (?:was|is) wrong\b|\bi was wrong\b",
    r"\bafter all\b|\boverturns\b|^correction\b|\bsays otherwise\b",
)
# The moment the cause is seen: "I see the problem!", "Now I understand the issue.", "Found it." — the
# sentence after it says what was seen, as a correction's does. "I notice from the output that …" and
# "That's the commit that added …" state the finding themselves.
REALISED = _any(
    r"^(?:(?:ok(?:ay)?|ah|aha|oh|now|good|great)[,!.]?\s+)*(?:now\s+)?"
    r"(?:i (?:see|understand|get|found|spotted|know) (?:the |what(?:'s| is) |what was )?"
    r"(?:problem|issue|bug|cause|culprit|happening|going on|wrong)|"
    r"found (?:it|the (?:problem|issue|bug|cause|culprit))|"
    r"there it is|that'?s the (?:problem|issue|bug|culprit))[.!:]*$"
)
NOTICED = _any(
    # "I notice from the output that …" after a run; "I can see that there's an empty hooks directory"
    # describes a listing, and is left out.
    r"^(?:(?:ok(?:ay)?|ah|oh|now)[,!.]?\s+)*i (?:notice|noticed) (?:from [^,]{1,60} )?that\b",
    r"^that'?s (?:the|where the|why the) (?:commit|change|code|call|line|hook|function|step|one|place|reason)"
    r" (?:that|which|where|who|corrupting|causing|breaking|writing|touching)\b",
    # "That's the condensation code — somewhere in PostCommit() go-git is writing to the index."
    r"^that'?s the [\w`.()-]+ (?:code|commit|change|call|hook|path|function)\s*(?:\u2014|\u2013|-|:)\s+\w",
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
# A report that names a todo as done, and a person's "done" in reply to one.
TODO_DONE = _any(r"\btodos? (?:is |are )?(?:now )?(?:done|finished|complete[d]?)\b")
SAID_DONE = _any(r"^\s*(?:done|did it|finished|all set)\b")
# Reports of finished work that `COMPLETION` misses ("the linter todo is done", "Removed the flag").
DONE_CUE = _any(
    r"\btodo is done\b|\b(?:is|are) (?:now )?in(?: place)?\b",
    r"\bnow (?:uses|keeps|reports|runs)\b|\b(?:removed|deleted|added)\b",
)


_FILLER = re.compile(
    r"^(?:(?:so|ok(?:ay)?|well|also|and|but|great|perfect|alright|right|now|then|good|yes|yeah|hmm|sure)"
    r"[,!.]?\s+)+",
    _I,
)


@dataclass(frozen=True)
class Classified:
    """A sentence's intent and how sure the sentence is of it."""

    intent: Intent
    confidence: float
    importance: float
    content: str
    labelled: bool = False
    hedged: bool = False
    hypothesis: bool = False
    refutation: bool = False
    supersession: bool = False


def is_ack(sentence: str) -> bool:
    return bool(ACK.match(sentence.strip()))


def is_preamble(sentence: str) -> bool:
    return bool(PREAMBLE.match(sentence.strip()))


# An emoji or emoticon closing a sentence sets its tone, not its kind: "can we remove the shims? 😅" is
# still a question.
_TRAILING_TONE = re.compile(
    r"(?:\s*(?:[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200D]|[:;]-?[()DPp|/\\]))+\s*$"
)


def is_question(sentence: str) -> bool:
    """A real, information-seeking question: not a request ("can you…") and not a one-word "why?"."""
    text = _FILLER.sub("", sentence.strip())
    if REQUEST.search(text) or len(text.split()) < 3:
        return False
    return text.endswith("?") or (bool(INTERROGATIVE.match(text)) and len(text.split()) >= 6)


def strip_label(sentence: str) -> tuple[str, Intent | None]:
    """`sentence` without a leading "Decision:"/"TODO:"-style label, and the intent the label names."""
    text = _FILLER.sub("", sentence.strip())
    if match := LABEL.match(text):
        rest = text[match.end() :].strip()
        if rest:
            return capitalise(rest), _LABELS[match.group("label").lower()]
    return capitalise(text), None


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _score(intent: Intent, base: float, text: str, *, importance_delta: float = 0.0) -> tuple[float, float]:
    confidence, importance = base, DEFAULT_IMPORTANCE[intent] + importance_delta
    if HEDGE.search(text):
        confidence, importance = min(confidence, 0.6), importance - 0.1
    elif FIRM.search(text):
        confidence = min(0.9, confidence + 0.05)
    return round(max(0.5, min(0.9, confidence)), 2), round(max(0.0, min(1.0, importance)), 2)


def classify(sentence: str, role: str, *, after_problem: bool = False) -> Classified | None:
    """The intent of one sentence said by `role` ("user", "assistant"), or None when it is not worth an idea.

    `after_problem` says a problem was seen earlier in the session, which lets weak solution cues count.
    """
    raw = _TRAILING_TONE.sub("", sentence).strip()
    if not raw or is_ack(raw):
        return None
    content, label = strip_label(raw)
    hedged = bool(HEDGE.search(raw))

    def make(intent: Intent, base: float, **flags: bool) -> Classified:
        delta = -0.1 if flags.get("weak") else 0.0
        confidence, importance = _score(intent, base, raw, importance_delta=delta)
        flags.pop("weak", None)
        return Classified(
            intent,
            confidence,
            importance,
            content,
            labelled=label is not None,
            hedged=hedged,
            supersession=bool(SUPERSESSION.search(raw) or CHANGE.search(raw)),
            **flags,
        )

    if label is not None:
        if label == "question" and not content.endswith("?") and role != "user":
            return None
        return make(label, 0.85)
    if raw.endswith("?"):
        return make("question", 0.8) if role == "user" and is_question(raw) else None
    if HYPOTHESIS.search(raw):
        return make("conclusion", 0.5, hypothesis=True)
    if REFUTATION.search(raw):
        return make("conclusion", 0.7, refutation=True)
    if role == "assistant" and (REALISED.match(raw) or NOTICED.match(raw)):
        return make("conclusion", 0.75)
    if role == "assistant" and _LET_ME.match(_FILLER.sub("", raw)):
        return None  # "Let me look at what is actually stored … instead": an action announced, no finding
    # "a keystroke now commits in ~8 ms instead of ~300 ms" compares two measurements: a finding, no
    # change of plan, unless a decision cue says otherwise.
    compared = role == "assistant" and bool(MEASURED.search(raw)) and not DECISION.search(raw)
    if (DECISION.search(raw) or (CHANGE.search(raw) and not compared)) and not (
        TOOL_TALK.search(raw) and role != "user"
    ):
        return make("decision", 0.8)
    if CONCLUSION.search(raw):
        return make("conclusion", 0.8)
    if is_preamble(raw):
        return None
    if TODO.search(raw) or TODO_PHRASES.search(raw):
        return make("todo", 0.75)
    if role == "user" and is_question(raw):
        return make("question", 0.75)
    negated = bool(NEGATED_PROBLEM.search(raw))
    if SOLUTION_STRONG.search(raw):
        return make("solution", 0.8)
    if after_problem and SOLUTION_WEAK.search(raw):
        return make("solution", 0.65, weak=True)
    problem = PROBLEM_USER if role == "user" else PROBLEM_ASSISTANT
    if not negated and (problem.search(raw) or (role == "user" and PROBLEM_SIGNATURE.search(raw))):
        return make("problem", 0.8 if role == "user" else 0.65)
    if role == "assistant" and ACCOMPLISHMENT.search(_FILLER.sub("", raw)):
        return make("context", 0.7)
    if role == "assistant" and MEASURED.search(raw):
        return make("conclusion", 0.7)
    return None
