"""Names a conversation shares with its code: the packages, services and tools of the project itself.

The gazetteer knows common technologies; a project's own are unknown to it (`maplibre-gl`,
`pricing-svc`, `pgloader`). What grounds them is that the prose and the code both write them: a
hyphenated lower-case name the prose writes in backticks, or that a command, a file or a tool's output
also contains, is a package, service or resource — an English compound ("multi-stage") is rarely
written in code; a program the session's shell commands run that the prose also names is a tool the
work uses. Shell basics (`cd`, `grep`, `curl`) run in every session and say nothing about it. A
name in capitals and digits (`GOMAXPROCS`, `A100`) counts when both the person and the assistant say it.
"""

from __future__ import annotations

import re

from cairn.agent.offline.entities import Entity, is_file_like
from cairn.agent.offline.gazetteer import canonical
from cairn.agent.offline.reading import SessionView

_HYPHENATED = re.compile(r"(?<![\w/.@-])(@?[a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?![\w@/-]|\.\w)")
_COMMAND = re.compile(r'^\[tool_use Bash\] command="((?:[^"\\]|\\.)*)', re.MULTILINE)
_COMMAND_SPLIT = re.compile(r"&&|\|\||[;|]|\\n")
_CAPITALS = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9]{2,})(?![\w/-])")
_ENV_ASSIGNMENT = re.compile(r"^\w+=")
# Programs every shell session runs: running them says nothing about the project.
_SHELL_BASICS = frozenset(
    [
        "cd",
        "ls",
        "cat",
        "grep",
        "rg",
        "sed",
        "awk",
        "head",
        "tail",
        "echo",
        "printf",
        "find",
        "curl",
        "wget",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "chmod",
        "chown",
        "ln",
        "export",
        "env",
        "sudo",
        "time",
        "xargs",
        "sort",
        "uniq",
        "wc",
        "diff",
        "tee",
        "touch",
        "which",
        "source",
        "bash",
        "sh",
        "zsh",
        "test",
        "true",
        "false",
        "set",
        "exit",
        "kill",
        "ps",
        "sleep",
        "tar",
        "gzip",
        "gunzip",
        "zcat",
        "less",
        "more",
        "open",
    ]
)


def _programs(view: SessionView) -> set[str]:
    """The programs the session's shell commands run (`kubectl`, `pgloader`), without shell basics."""
    found: set[str] = set()
    for message in view.messages:
        if message.role != "assistant":
            continue
        for command in _COMMAND.findall(message.text):
            for part in _COMMAND_SPLIT.split(command):
                words = part.split()
                while words and (_ENV_ASSIGNMENT.match(words[0]) or words[0] in ("sudo", "time", "env")):
                    words = words[1:]
                program = words[0].rsplit("/", 1)[-1] if words else ""
                if re.fullmatch(r"[a-z][\w.-]{2,}", program) and program not in _SHELL_BASICS:
                    found.add(program)
    return found


def named_in_code(view: SessionView) -> list[tuple[int, Entity]]:
    """Names the conversation's prose shares with its code (see the module docstring), each at the
    line its prose first writes it; technologies the gazetteer knows are left to it."""
    code = "\n".join(
        m.tool_output
        if m.role == "tool"
        else "\n".join(x for x in m.text.splitlines() if x.startswith("[tool_use"))
        for m in view.messages
    )
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
                written = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
                if f"`{name}`" in segment.text or written.search(code):
                    found[name] = (message.line, Entity(name, "concept"))
            for program in programs:
                said = re.search(rf"(?<![\w/.-]){re.escape(program)}(?![\w-])", segment.text)
                if said and program not in found and not canonical(program):
                    found[program] = (message.line, Entity(program, "technology"))
    for name, line in _said_by_both(view).items():
        found.setdefault(name, (line, Entity(name, "concept")))
    return list(found.values())


def _said_by_both(view: SessionView) -> dict[str, int]:
    """Names in capitals and digits (`GOMAXPROCS`, `A100`, `HS256`, `RDS`) that both the person and the
    assistant say, at the line first said: a shared handle for the thing they work on, where one
    side's acronym alone is often just wording ("USD", "CPU")."""
    first: dict[str, int] = {}
    roles: dict[str, set[str]] = {}
    for message in view.messages:
        if message.role not in ("user", "assistant"):
            continue
        for segment in message.prose:
            for name in _CAPITALS.findall(segment.text):
                if not canonical(name):
                    first.setdefault(name, message.line)
                    roles.setdefault(name, set()).add(message.role)
    return {name: line for name, line in first.items() if len(roles[name]) == 2}
