"""What a stored message is, as a person reading the session would tell: the person's prompt, the
assistant's reply, a tool call, a tool result, a subagent's report, a compaction summary, or hook and
system output.

Claude Code keeps a tool's output in a `user` record, so role alone shows a traceback as something
the person said; and an assistant record that only calls tools is not a reply anyone reads. Capture
stores the origin of every message (`messages.origin`, with the tool, its key argument and whether
it failed), search ranks and filters by it and every face labels results with it. The rules read
only what capture stored, so a migration gives old stores the same answer a fresh capture would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

Origin = Literal["prompt", "reply", "tool_call", "tool_result", "subagent", "summary", "system"]
ORIGINS: tuple[Origin, ...] = get_args(Origin)

#: Tools whose result is another agent's report of its work.
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
#: Message kinds (`messages.kind`) that are the harness talking, not the conversation.
_SYSTEM_KINDS = frozenset({"meta", "system", "command"})
#: The input field that says what a call does, per tool; other tools use `_ARGUMENT_FIELDS`.
_KEY_FIELD: dict[str, str] = {
    "Bash": "command",
    "BashOutput": "bash_id",
    "Read": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Grep": "pattern",
    "Glob": "pattern",
    "LS": "path",
    "Task": "description",
    "Agent": "description",
    "WebFetch": "url",
    "WebSearch": "query",
    "Skill": "skill",
    "SlashCommand": "command",
}
_ARGUMENT_FIELDS = (
    "command",
    "file_path",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "name",
)
#: A rendered tool input is `key=<compact JSON> key2=<compact JSON>` (`render_tool_input`).
_FIELD = re.compile(r"(?:^| )([A-Za-z_][\w-]*)=")
_TOOL_USE_LINE = re.compile(r"^\[tool_use [^\]]*\]")
_JSON = json.JSONDecoder()
#: What Claude Code writes as the person's message when they stop a turn: it asks nothing.
INTERRUPTION = "[Request interrupted"
ARGUMENT_CHARS = 200
COMPACTION_AGENT_PREFIX = "acompact"


def fields_of(rendered: str) -> dict[str, str]:
    """The fields of a rendered tool input (`command="ls -la" timeout=5`), string values decoded.

    The rendering is capped (a long value ends in `…` mid-string), so a value that is not whole JSON
    is read up to its closing quote or the end, its escapes decoded where they are whole.
    """
    starts = [(m.group(1), m.start(1), m.end()) for m in _FIELD.finditer(rendered)]
    fields: dict[str, str] = {}
    at = 0
    for name, name_start, value_start in starts:
        if name_start < at:
            continue  # `key=` inside an earlier value
        value, at = _value_at(rendered, value_start)
        fields.setdefault(name, value)
    return fields


def _value_at(text: str, start: int) -> tuple[str, int]:
    """The value starting at `start` — a string decoded, other JSON as written — and where it ends.

    A whole value is read by the JSON decoder itself. Only the last value can be cut short by the
    rendering's cap: a string is decoded as far as it goes, a list or object kept as written."""
    try:
        value, end = _JSON.raw_decode(text, start)
    except ValueError:
        rest = text[start:]
        if rest.startswith('"'):
            return _decode(rest.rstrip("…") + '"'), len(text)
        if rest.startswith(("[", "{")):
            return rest, len(text)
        space = text.find(" ", start)
        end = len(text) if space < 0 else space
        return text[start:end], end
    return (value if isinstance(value, str) else text[start:end]), end


def _decode(quoted: str) -> str:
    try:
        value = json.loads(quoted)
    except ValueError:
        # A cap cut an escape in two (`\u00`, a lone `\`): keep the text, drop the broken escape.
        trimmed = re.sub(r"\\(u[0-9a-fA-F]{0,3})?\"$", '"', quoted)
        try:
            value = json.loads(trimmed)
        except ValueError:
            value = quoted.strip('"')
    return value if isinstance(value, str) else str(value)


def key_argument(tool: str | None, rendered_input: str) -> str:
    """What a call of `tool` acts on, from its rendered input: a command, a file, a pattern, a URL —
    one line, at most `ARGUMENT_CHARS` characters; empty when the call names none (`TodoWrite`)."""
    if not rendered_input:
        return ""
    fields = fields_of(rendered_input)
    name = key_field(tool, fields)
    return _one_line(fields[name]) if name else ""


def key_field(tool: str | None, fields: Mapping[str, str]) -> str | None:
    """The name of the input field that holds a call's key argument (`key_argument`), if any."""
    wanted = _KEY_FIELD.get(tool or "")
    if wanted:
        return wanted if fields.get(wanted) else None
    name = next((name for name in _ARGUMENT_FIELDS if fields.get(name)), None)
    if name is None and tool and tool.startswith("mcp__"):
        name = next((n for n, v in fields.items() if v and not v.startswith(("[", "{"))), None)
    return name


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ARGUMENT_CHARS else flat[: ARGUMENT_CHARS - 1].rstrip() + "…"


def call_label(tool: str | None, argument: str | None) -> str:
    """A call as a person reads it: `Bash: npm run build`, `Edit: src/app.py`, `TodoWrite`."""
    name = tool or "a tool"
    return f"{name}: {argument}" if argument else name


def has_prose(text: str) -> bool:
    """Whether an assistant message says anything besides its tool calls (their `[tool_use …]` lines)."""
    return any(line.strip() and not _TOOL_USE_LINE.match(line) for line in text.splitlines())


def origin_of(
    *,
    role: str,
    kind: str,
    text: str,
    tool_results: Iterable[Mapping[str, Any]] = (),
    tool_calls: Iterable[Mapping[str, Any]] = (),
    is_sidechain: bool = False,
    agent_id: str | None = None,
) -> Origin:
    """The origin of one stored message, from its columns (see the module docstring)."""
    if role == "summary" or kind in ("compact_summary", "summary") or is_compaction_agent(agent_id):
        return "summary"
    if role == "system" or kind in _SYSTEM_KINDS:
        return "system"
    if kind == "tool_result":
        if any(result.get("tool_name") in SUBAGENT_TOOLS for result in tool_results):
            return "subagent"
        return "tool_result"
    subagent = is_sidechain or bool(agent_id)
    if role == "user":
        if text.startswith(INTERRUPTION):
            return "system"
        # In a subagent's transcript the "user" is the agent that handed it the task.
        return "subagent" if subagent else "prompt"
    if has_prose(text):
        return "subagent" if subagent else "reply"
    return "tool_call" if any(True for _ in tool_calls) else "reply"


def is_compaction_agent(agent_id: str | None) -> bool:
    """Whether ``agent_id`` is the subagent Claude Code runs to write a compact summary.

    Its transcript (``subagents/agent-acompact-*.jsonl``) is the compaction instructions and the
    summary: a retelling of the parent session, not new conversation.
    """
    return bool(agent_id) and str(agent_id).startswith(COMPACTION_AGENT_PREFIX)


def tool_of(
    origin: Origin, tool_calls: list[Mapping[str, Any]], tool_results: list[Mapping[str, Any]]
) -> tuple[str | None, str, bool]:
    """(tool, key argument, failed) of a message: its first call's, or its first result's call's."""
    if origin == "tool_call" and tool_calls:
        first = tool_calls[0]
        name = str(first.get("name") or "") or None
        return name, key_argument(name, str(first.get("input") or "")), False
    if origin in ("tool_result", "subagent") and tool_results:
        first = tool_results[0]
        name = first.get("tool_name")
        failed = any(bool(result.get("is_error")) for result in tool_results)
        return (str(name) if name else None), str(first.get("tool_arg") or ""), failed
    return None, "", False
