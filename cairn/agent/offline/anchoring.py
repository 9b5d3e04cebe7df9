"""A fix reported done is anchored at the command or edit that did it.

"OK, index is fixed and rebase state is intact." says the fix worked but not what it was: that is in
the tool call just before it (`git -C .worktrees/2 read-tree HEAD`). A teammate reading the memory
wants both, and the place to cite is where the change happened. So a solution that reports a fix done
moves to the latest message of its turn that changed something — an edit, or a shell command that is
not only a look (`git status`, `ls`, a test run) — and says the command it ran. A report that someone fixed
it before ("you already fixed it") stays.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import shorten

# "index is fixed", "Fixed —", "works now", "tests pass now": the fix reported as done, just now.
_DONE_NOW = re.compile(
    r"^(?:ok,?\s+)?fixed\b|\b(?:is|are|'s|now) (?:fixed|resolved|working|clean)\b|"
    r"\b(?:works?|pass(?:es)?|passing|succeeds?) now\b",
    re.I,
)
_EARLIER = re.compile(r"\balready\b|\bwas (?:fixed|resolved)\b|\bearlier\b", re.I)
_EDIT = re.compile(
    r'^\[tool_use (?:Edit|MultiEdit|Write|NotebookEdit)\](?:[^\n]*?\bfile_path="(?P<file>[^"]+)")?', re.M
)
_COMMAND = re.compile(r'^\[tool_use Bash\] command="(?P<command>(?:[^"\\]|\\.)*)"', re.M)
# Commands that only look: what they run changes nothing.
_LOOK = re.compile(
    r"^(?:\S*/)?(?:ls|cat|head|tail|grep|rg|find|echo|pwd|which|wc|stat|tree|less|diff|"
    r"git(?: -C \S+)? (?:status|log|diff|show|branch|remote|rev-parse|ls-files|fsck|count-objects)|"
    r"(?:go|cargo|npm|pnpm|yarn|make|mise run|uv run|python -m) (?:run )?test\S*|pytest|jest|vitest)\b"
)
COMMAND_CHARS = 80


def _change(message: Message) -> str | None:
    """What the message's last changing tool call did: "ran `cmd`", "edited file", or None."""
    found: list[tuple[int, str]] = []
    for match in _COMMAND.finditer(message.text):
        command = match["command"].replace('\\"', '"').strip()
        if not _LOOK.match(command):
            found.append((match.start(), f"ran `{shorten(command, COMMAND_CHARS)}`"))
    for match in _EDIT.finditer(message.text):
        name = (match["file"] or "").rsplit("/", 1)[-1]
        found.append((match.start(), f"edited {name}" if name else "edited a file"))
    return max(found)[1] if found else None


def anchored(view: SessionView, candidates: list[Candidate]) -> list[Candidate]:
    """`candidates` with each fix reported done moved to the change that did it (see the module)."""
    out: list[Candidate] = []
    for candidate in candidates:
        if (
            candidate.intent == "solution"
            and candidate.origin == "prose"
            and _DONE_NOW.search(candidate.content)
            and not _EARLIER.search(candidate.content)
        ):
            before = [
                m
                for m in view.messages
                if m.role == "assistant" and m.turn == candidate.turn and m.line < candidate.line
            ]
            for message in reversed(before):
                if (did := _change(message)) is not None:
                    content = shorten(f"{candidate.content.rstrip('.')} ({did}).")
                    candidate = replace(candidate, line=message.line, content=content)
                    break
        out.append(candidate)
    return sorted(out, key=lambda c: c.line)
