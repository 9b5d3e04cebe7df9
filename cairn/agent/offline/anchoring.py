"""A fix reported done is anchored at the command or edit that did it.

"OK, index is fixed and rebase state is intact." says the fix worked but not what it was: that is in
the tool call just before it (`git -C .worktrees/2 read-tree HEAD`). A teammate reading the memory
wants both, and the place to cite is where the change happened. So a solution that reports a fix done
moves to the latest message of its turn that changed something — an edit, or a shell command that
changes things (`git read-tree`, `pip install`, `chmod`, `kubectl apply`; not a look, a test run or a
script run to measure) — and says the command it ran or the file it edited. A report that someone fixed
it before ("you already fixed it") stays.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import shorten
from cairn.agent.offline.tool_calls import tool_calls

# "index is fixed", "Fixed —", "works now", "tests pass now": the fix reported as done, just now.
_DONE_NOW = re.compile(
    r"^(?:ok,?\s+)?fixed\b|\b(?:is|are|'s|now) (?:fixed|resolved|working|clean)\b|"
    r"\b(?:works?|pass(?:es)?|passing|succeeds?) now\b",
    re.I,
)
_EARLIER = re.compile(r"\balready\b|\bwas (?:fixed|resolved)\b|\bearlier\b", re.I)


def change(message: Message) -> str | None:
    """What the message's last changing tool call did: "ran `cmd`", "edited file", or None."""
    did = [call.changes for call in tool_calls(message.text) if call.changes is not None]
    return did[-1] if did else None


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
                if (did := change(message)) is not None:
                    content = shorten(f"{candidate.content.rstrip('.')} ({did}).")
                    candidate = replace(candidate, line=message.line, content=content)
                    break
        out.append(candidate)
    return sorted(out, key=lambda c: c.line)
