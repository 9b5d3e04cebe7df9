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
# Commands that change something: git's writing subcommands, package managers' installs, file moves
# and permission changes, in-place edits, infrastructure applies. Anything else — a look (`git status`,
# `ls`), a test run, a script run to measure — is how the fix was checked, not what it was.
_CHANGES = re.compile(
    r"^(?:sudo\s+)?(?:"
    r"git(?: -C \S+)? "
    r"(?!status|log|diff|show|branch\s*$|remote|rev-parse|ls-files|fsck|count-objects|grep|blame)\w|"
    r"(?:pip3?|uv|npm|pnpm|yarn|cargo|go|brew|apt(?:-get)?|poetry|gem|bundle|mix|python3? -m pip) "
    r"(?:install|add|remove|uninstall|get|update|upgrade|sync|lock)\b|"
    r"(?:rm|mv|cp|chmod|chown|ln|mkdir|touch|patch|truncate)\b|sed -i|perl -pi|"
    r"(?:kubectl|oc) (?:apply|delete|patch|rollout|scale|set|edit|create)\b|"
    r"terraform (?:apply|import|state|taint)\b|(?:docker|podman) (?:rm|restart|build|compose|pull|volume)\b|"
    r"systemctl (?:restart|start|stop|enable|disable)\b"
    r")"
)
COMMAND_CHARS = 80


def change(message: Message) -> str | None:
    """What the message's last changing tool call did: "ran `cmd`", "edited file", or None."""
    found: list[tuple[int, str]] = []
    for match in _COMMAND.finditer(message.text):
        command = match["command"].replace('\\"', '"').strip()
        if _CHANGES.match(command):
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
                if (did := change(message)) is not None:
                    content = shorten(f"{candidate.content.rstrip('.')} ({did}).")
                    candidate = replace(candidate, line=message.line, content=content)
                    break
        out.append(candidate)
    return sorted(out, key=lambda c: c.line)
