"""Failed tool calls as problems: the line of a tool's output that says what went wrong, and whether
the conversation takes the failure up (a failure the assistant routes around without a word is the
tool's noise, not a problem anyone had).
"""

from __future__ import annotations

import re

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import shorten, term_set
from cairn.agent.schema import DEFAULT_IMPORTANCE

_TOOL_NOISE = re.compile(
    r"<tool_use_error>|haven't granted|requested permissions|has not been read yet|No files found|"
    r"doesn't want to proceed|was rejected|Interrupted by user|user denied",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"\b(?:\w*Error|\w*Exception|FAIL(?:ED)?|fatal|not found|No such file|denied|cannot|can't|unable)\b",
    re.IGNORECASE,
)
_EXIT_CODE = re.compile(r"^\s*Exit code \d+\s*$")
# Escapes left in tool output that quotes JSON (a hook's `{"reason": "…\\n…"}`, a serialised error).
_ESCAPE = re.compile(r"\\([nrt\"\\])")
_ESCAPED = {"n": "\n", "r": "\n", "t": " ", '"': '"', "\\": "\\"}
# A hook's wrapper around the message that matters: `PreToolUse:Bash hook error: [cmd]: …`.
_HOOK_WRAPPER = re.compile(
    r"^\w+(?::\w+)? hook (?:blocking )?error(?: from command)?:\s*(?:\[[^\]]*\]:?\s*)?", re.IGNORECASE
)
_JSON_REASON = re.compile(r'"(?:reason|message|error|stopReason)"\s*:\s*"((?:[^"\\]|\\.)+)"')
# Words every failure shares: a later command about "files" or "errors" does not act on this one.
_GENERIC_FAILURE_TERMS = term_set(
    "error errors failed failure fatal found not such file files directory command code exit line "
    "cannot unable denied exception module named no"
)
# What a reply says when it turns to a failure: the failure is then part of the conversation.
_TAKEN_UP = re.compile(
    r"\b(?:error|errors|fail\w*|issue|problem|wrong|broken|fix\w*|missing|not found|doesn'?t exist|"
    r"does not exist|install\w*|cannot|can'?t|unable|because|caus\w*|instead)\b",
    re.IGNORECASE,
)


def decode_escapes(text: str) -> str:
    """`text` with the escape sequences of quoted JSON (`\\n`, `\\t`, `\\"`) turned into what they
    stand for: a tool error that quotes a hook's JSON reply must not become an idea reading
    "failed:\\n\\n[CREDO]"."""
    return _ESCAPE.sub(lambda m: _ESCAPED[m.group(1)], text) if "\\" in text else text


# A failure line this short says only that something failed ("Build error occurred").
_BARE_FAILURE_WORDS = 4


def failure_cause(output: str) -> str | None:
    """The line of a failed tool call's output that says what went wrong, or None.

    Escapes are decoded first and a hook's wrapper (`PreToolUse:Bash hook error: [cmd]:`) and JSON
    envelope (`{"reason": "…"}`) are peeled off, so the cause is the hook's own words. In a Python
    traceback the last error line is the cause; elsewhere the first. A line that only introduces
    what follows ("Pre-commit validation failed:") takes the next line with it.
    """
    text = decode_escapes(output.strip())
    text = _HOOK_WRAPPER.sub("", text)
    if text.startswith("{") and (reason := _JSON_REASON.search(text)):
        text = decode_escapes(reason.group(1))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _EXIT_CODE.match(ln)]
    hits = [i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln)]
    if not hits:
        return None
    at = hits[-1] if any(ln.startswith("Traceback") for ln in lines) else hits[0]
    detail = lines[at].lstrip("> -*#|").strip()
    bare = len(detail.split()) <= _BARE_FAILURE_WORDS
    if at + 1 < len(lines) and (detail.endswith(":") or (bare and _ERROR_LINE.search(lines[at + 1]))):
        # "Pre-commit validation failed:" or "Build error occurred" then "[TypeError: generate is not a
        # function]": the next line says what.
        detail = f"{detail} {lines[at + 1].lstrip('> -*#|').strip()}"
    return detail.replace("\\n", " ")


def _taken_up(view: SessionView, message: Message, detail: str) -> bool:
    """Whether the conversation turns to a failed tool call. The next message of its turn that is not
    a tool result decides: it takes the failure up when its words name the failure or a fix ("the
    hook blocked the commit", "Adding it") or share a word of the cause, or when its tool call acts on
    a word of the cause (`pip install … torch` after "No module named 'torch'").

    A failure the assistant routes around without a word (a different command about something else)
    is the tool's noise, not a problem anyone had: it stays in the message store for search but
    makes no idea.
    """
    cause = term_set(detail) - _GENERIC_FAILURE_TERMS
    after = False
    for other in view.messages:
        if other is message:
            after = True
            continue
        if not after or other.role == "tool":
            continue
        if other.turn != message.turn or other.role not in ("user", "assistant"):
            return False
        prose = " ".join(s.text for s in other.prose)
        if prose and (_TAKEN_UP.search(prose) or cause & term_set(prose)):
            return True
        return bool(cause & term_set(other.text))
    return False


def tool_error(view: SessionView, message: Message) -> Candidate | None:
    """A problem from a failed tool call the conversation takes up, unless the failure is the
    harness's own (permissions, misuse); its content is the decoded line that says the cause."""
    output = message.tool_output.strip()
    if not message.failed or not output or _TOOL_NOISE.search(output):
        return None
    detail = failure_cause(output)
    if detail is None or len(term_set(detail)) < 2 or not _taken_up(view, message, detail):
        return None
    content = shorten(f"{message.tool_name or 'A tool'} call failed: {detail}", 240)
    return Candidate(
        view.session,
        view.source_file,
        message.line,
        "problem",
        content,
        0.6,
        round(DEFAULT_IMPORTANCE["problem"] - 0.2, 2),
        message.turn,
        extract(detail, view.known_files),
        origin="tool_error",
    )
