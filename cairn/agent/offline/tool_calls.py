"""The tool calls an assistant message renders (`[tool_use Bash] command="…" description="…"`), read
once for every offline rule that needs them: which command ran, which file an edit touched, which call
a tool result answers, and whether a shell command changes things or only looks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property

from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import shorten

_CALL = re.compile(r"^\[tool_use (?P<tool>[\w.:-]+)\] (?P<given>.*)$", re.M)
_COMMAND = re.compile(r'^command="(?P<command>(?:[^"\\]|\\.)*)"')
_FILE = re.compile(r'\bfile_path="(?P<file>[^"]+)"')
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
# Commands that change something: git's writing subcommands, package managers' installs, file moves
# and permission changes, in-place edits, infrastructure applies. Anything else — a look, a test run,
# a script run to measure — checks or uses the code, it does not change it.
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
# Commands that only look: where something is, what it holds, what state git is in.
_LOOKS = re.compile(
    r"^(?:cd \S+ && )?(?:ls|cat|head|tail|find|grep|rg|pwd|which|stat|tree|wc|echo|file|"
    r"git(?: -C \S+)? (?:status|log|diff|show|branch|rev-parse))\b"
)
COMMAND_CHARS = 80
# A chain's separators, and the redirections that only route a command's output.
_CHAIN = re.compile(r"&&|\|\||;")
_REDIRECT = re.compile(r"\d?>&\d|\d?>>?\s*\S+")


def unescaped(rendered: str) -> str:
    """A rendered argument value as it was given (the rendering escapes it as a JSON string)."""
    try:
        return str(json.loads(f'"{rendered}"'))
    except ValueError:
        return rendered.replace("\\n", "\n").replace('\\"', '"')


@dataclass(frozen=True)
class ToolCall:
    """One rendered call: the tool, its rendered arguments, and where it starts in its message."""

    tool: str
    given: str
    start: int = 0

    @cached_property
    def command(self) -> str | None:
        """A shell call's command, unescaped; None for any other tool."""
        found = _COMMAND.match(self.given) if self.tool == "Bash" else None
        return unescaped(found["command"]).strip() if found else None

    @cached_property
    def edited(self) -> str | None:
        """The file an edit wrote, as given (a path); "" when the rendering cut it off; else None."""
        if self.tool not in EDIT_TOOLS:
            return None
        found = _FILE.search(self.given)
        return found["file"] if found else ""

    @property
    def key(self) -> str:
        """The call as compared with another: a shell command by its command alone (a new `description`
        or `timeout` runs the same thing), any other tool by all it was given."""
        return f"Bash {self.command}" if self.command is not None else f"{self.tool} {self.given}"

    @property
    def name(self) -> str:
        """How the call reads in an idea: "`npm run build`", or "the Read call"."""
        if self.command is None:
            return f"the {self.tool} call"
        return f"`{shorten(self.command, COMMAND_CHARS)}`"

    @property
    def changes(self) -> str | None:
        """What the call changed, as an idea says it ("ran `pip install …`", "edited hooks.go"), or
        None when it changed nothing (see `_CHANGES`)."""
        if self.edited is not None:
            name = self.edited.rsplit("/", 1)[-1]
            return f"edited {name}" if name else "edited a file"
        if self.command is not None and _CHANGES.match(self.command):
            return f"ran {self.name}"
        return None

    @cached_property
    def runs(self) -> frozenset[str]:
        """What a shell call runs, each command of a chain without what only trims its output
        (`mise run lint 2>&1 | tail -5 && mise run test | tail -12`: `mise run lint`, `mise run test`),
        so a later `mise run test` is a run of the same check. Empty for any other tool."""
        if self.command is None:
            return frozenset()
        parts = (_REDIRECT.sub(" ", part.split("|", 1)[0]) for part in _CHAIN.split(self.command))
        return frozenset(
            " ".join(words) for part in parts if (words := part.split()) and not _LOOKS.match(" ".join(words))
        )

    @property
    def looks(self) -> bool:
        """A shell command that only looks (`ls types/`, `git status`): its failing is no bug."""
        return self.command is not None and bool(_LOOKS.match(self.command))


def tool_calls(text: str) -> list[ToolCall]:
    """The calls a message's text renders, in order."""
    return [ToolCall(m["tool"], m["given"], m.start()) for m in _CALL.finditer(text)]


def passing_rerun(view: SessionView, calls: dict[int, ToolCall], failed: int) -> int | None:
    """The line of the first later result that passed of the call answered at `failed`, run again: the
    same call, or for a shell run one command of its chain (`runs`). None when it never passed."""
    call = calls.get(failed)
    if call is None:
        return None
    for message in view.messages:
        if message.role != "tool" or message.line <= failed or message.failed:
            continue
        again = calls.get(message.line)
        if again is not None and (again.key == call.key or again.runs & call.runs):
            return message.line
    return None


def answered_calls(view: SessionView) -> dict[int, ToolCall]:
    """The call each tool result answers, by the result's line (one pass over the batch). Calls made
    together (parallel calls, in one message or in consecutive ones) are answered in the order they
    were made: the first result answers the first call. A result past the calls of its round answers
    the round's last call."""
    calls: dict[int, ToolCall] = {}
    waiting: list[ToolCall] = []
    last: ToolCall | None = None
    answering = False  # a result came since the last call: the next call starts a new round
    for message in view.messages:
        if message.role == "assistant":
            found = tool_calls(message.text)
            if answering or not found:
                waiting = []
            waiting += found
            last = found[-1] if found else None
            answering = False
        elif message.role == "tool":
            answering = True
            call = waiting.pop(0) if waiting else last
            if call is not None:
                calls[message.line] = call
        elif message.role != "system":
            waiting, last = [], None  # the person spoke (a call rejected with words): its calls are over
    return calls
