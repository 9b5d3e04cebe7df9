"""Names a conversation shares with its code: the packages, services and tools of the project itself.

The gazetteer knows common technologies; a project's own are unknown to it (`maplibre-gl`,
`pricing-svc`, `pgloader`). What grounds them is that the prose and the code both write them:

- a hyphenated lower-case name the prose writes in backticks, that a tool call passes (a command
  argument, a path), or that a tool's output writes as code (quoted, in a path or a URL, after `@`,
  `:` or `=`) is a package, service or resource. An English compound ("multi-stage", "one-off") is
  written in code only inside comments and docs, between spaces;
- a program the session's shell commands run (quoted strings and here-documents left out, shell
  keywords and basics such as `cd`, `grep`, `curl` too) that the prose also names is a tool the work
  uses (`pgloader`, `flake8`, `actionlint`);
- a name in capitals with a digit or four letters or more (`GOMAXPROCS`, `A100`, `HS256`) counts
  when both the person and the assistant say it: a shared handle for the thing they work on, where
  one side's acronym alone is often just wording.
"""

from __future__ import annotations

import re

from cairn.agent.offline.entities import Entity, is_file_like
from cairn.agent.offline.gazetteer import canonical
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.tool_calls import tool_calls

_HYPHENATED = re.compile(r"(?<![\w/.@-])(@?[a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?![\w@/-]|\.\w)")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_COMMAND_SPLIT = re.compile(r"&&|\|\||[;|\n()]")
_PROGRAM = re.compile(r"[a-z][a-z0-9_-]{2,}")
_CAPITALS = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9]{2,})(?![\w/-])")
_ENV_ASSIGNMENT = re.compile(r"^\w+=")
_CODE_EDGE = "\"'`/:=@<"
# Programs every shell session runs and the shell's own words: running them says nothing about the
# project.
_SHELL_WORDS = frozenset(
    """
cd ls cat grep rg sed awk head tail echo printf find curl wget mkdir rm cp mv chmod chown ln
export env sudo time xargs sort uniq wc diff tee touch which source bash sh zsh test true false
set exit kill ps sleep tar gzip gunzip zcat less more open pwd tree stat file read eval exec
for while until do done then else elif fi case esac function select return local
""".split()  # noqa: SIM905
)
# Markers people write in capitals that name no thing.
_MARKERS = frozenset({"TODO", "FIXME", "NOTE", "WARNING", "IMPORTANT", "DONE"})


def _programs(view: SessionView) -> set[str]:
    """The programs the session's shell commands run (`kubectl`, `pgloader`), without shell words."""
    found: set[str] = set()
    for message in view.messages:
        if message.role != "assistant":
            continue
        for call in tool_calls(message.text):
            if call.command is None:
                continue
            command = _QUOTED.sub(" ", call.command).split("<<", 1)[0]
            for part in _COMMAND_SPLIT.split(command):
                words = part.split()
                while words and (_ENV_ASSIGNMENT.match(words[0]) or words[0] in ("sudo", "time", "env")):
                    words = words[1:]
                program = words[0].rsplit("/", 1)[-1] if words else ""
                if _PROGRAM.fullmatch(program) and program not in _SHELL_WORDS:
                    found.add(program)
    return found


def _in_code(name: str, calls: str, output: str) -> bool:
    """Whether a tool call passes `name` as a token, or a tool's output writes it as code."""
    token = re.escape(name)
    if re.search(rf"(?<![\w-]){token}(?![\w-])", calls):
        return True
    edge = re.escape(_CODE_EDGE)
    return re.search(rf"[{edge}]{token}(?![\w-])|(?<![\w-]){token}[{edge}]", output) is not None


def named_in_code(view: SessionView) -> list[tuple[int, Entity]]:
    """Names the conversation's prose shares with its code (see the module docstring), each at the
    line its prose first writes it; technologies the gazetteer knows are left to it."""
    said = [m.text for m in view.messages if m.role == "assistant"]
    calls = "\n".join(call.given for text in said for call in tool_calls(text))
    output = "\n".join(m.tool_output for m in view.messages if m.role == "tool")
    programs = _programs(view)
    found: dict[str, tuple[int, Entity]] = {}
    for message in view.messages:
        if message.role not in ("user", "assistant"):
            continue
        for segment in message.prose:
            for match in _HYPHENATED.finditer(segment.text):
                name = match.group(1)
                if name in found or canonical(name) or is_file_like(name):
                    continue
                if f"`{name}`" in segment.text or _in_code(name, calls, output):
                    found[name] = (message.line, Entity(name, "concept"))
            for program in programs:
                said = re.search(rf"(?<![\w/.-]){re.escape(program)}(?![\w-])", segment.text)
                if said and program not in found and not canonical(program):
                    found[program] = (message.line, Entity(program, "technology"))
    for name, line in _said_by_both(view).items():
        found.setdefault(name, (line, Entity(name, "concept")))
    return list(found.values())


def _said_by_both(view: SessionView) -> dict[str, int]:
    """Names in capitals with a digit or of four letters or more that both the person and the
    assistant say, at the line first said."""
    first: dict[str, int] = {}
    roles: dict[str, set[str]] = {}
    for message in view.messages:
        if message.role not in ("user", "assistant"):
            continue
        for segment in message.prose:
            for name in _CAPITALS.findall(segment.text):
                if name in _MARKERS or canonical(name) or (len(name) < 4 and name.isalpha()):
                    continue
                first.setdefault(name, message.line)
                roles.setdefault(name, set()).add(message.role)
    return {name: line for name, line in first.items() if len(roles[name]) == 2}
