"""How the offline indexer reads a session's messages: who really speaks, turns, tool calls, TodoWrite items.

A transcript's "user" is not always the person: Claude Code also files a compacted-conversation
summary and a sub-agent's task prompt under the user role. Those are recognised here (a compaction
by the batch's `context` role or its fixed opening, a task prompt by matching the `prompt=` of a
`Task` call in the same batch) so that neither is mistaken for the person's own question or
problem. Context messages (compact summaries, a compaction subagent's summary) read as "compaction":
they start a turn and are never a source of ideas. Limitation: a task prompt whose
`Task` call was in an earlier batch is not recognised and is read as a user message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from cairn.agent.offline.entities import file_name, paths_in, project_root, tool_files, written_files
from cairn.agent.offline.text import Segment, segments
from cairn.agent.schema import CONTEXT_ROLE, BatchMessage, SessionUpdate

COMPACTION_OPENING = "This session is being continued from a previous conversation"
_TOOL_RESULT = re.compile(r"^\[tool_result(?: (?P<name>[\w.:-]+))?(?P<error> error)?\]\s?", re.IGNORECASE)
_TASK_PROMPT = re.compile(r'\bprompt="((?:[^"\\]|\\.){20,})')
_TODO_ITEM = re.compile(
    r'\{"content":"(?P<content>(?:[^"\\]|\\.)+)","status":"(?P<status>pending|in_progress|completed)"'
)
_ALNUM = re.compile(r"[^a-z0-9]+")
# Claude Code's reply when the person rejects a tool call and says why: their words follow this line.
_REJECTED_WITH_WORDS = re.compile(r"\bTo tell you how to proceed, the user said:\s*\n(?P<said>.+)", re.DOTALL)


@dataclass(frozen=True)
class TodoItem:
    content: str
    status: str
    line: int


@dataclass
class Message:
    """One batch message as the offline indexer sees it."""

    line: int
    role: str  # user, assistant, tool, system, summary; also "compaction" and "delegate" (task prompts)
    text: str
    turn: int  # a turn starts at each prompt: the person's, a sub-agent's task or a compaction
    prose: list[Segment] = field(default_factory=list)
    tool_name: str | None = None
    tool_error: bool = False  # the call failed, by the tool's own account (what the model learned from)
    failed: bool = False  # it failed by its own account or by what its output says (`runner_failed`)
    tool_output: str = ""
    files: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    todo_items: list[TodoItem] = field(default_factory=list)
    timestamp: str | None = None  # when it was said (ISO 8601), when the transcript says


@dataclass
class SessionView:
    session: str
    source_file: str
    messages: list[Message]
    known_files: dict[str, str]  # basename -> fullest name seen in this session
    root: str | None = None  # the project directory its paths sit in, when they say

    @property
    def lines(self) -> list[int]:
        return [m.line for m in self.messages]

    def by_line(self, line: int) -> Message | None:
        return next((m for m in self.messages if m.line == line), None)


def _fingerprint(text: str, chars: int = 48) -> str:
    return _ALNUM.sub("", text.lower())[:chars]


def _unescape(rendered: str) -> str:
    try:
        return str(json.loads(f'"{rendered}"'))
    except ValueError:
        return rendered.replace("\\n", "\n").replace('\\"', '"')


def todo_items(text: str, line: int) -> list[TodoItem]:
    """The items of TodoWrite calls in `text` (the rendering is cut, so only the first few survive)."""
    items: list[TodoItem] = []
    for tool_line in text.splitlines():
        if tool_line.startswith("[tool_use TodoWrite]"):
            for match in _TODO_ITEM.finditer(tool_line):
                items.append(TodoItem(_unescape(match["content"]).strip(), match["status"], line))
    return items


def _task_prompts(update: SessionUpdate) -> set[str]:
    return {
        _fingerprint(_unescape(match.group(1)))
        for message in update.messages
        if message.role == "assistant"
        for match in _TASK_PROMPT.finditer(message.content)
    }


def _role(message: BatchMessage, prompts: set[str]) -> str:
    if message.role == CONTEXT_ROLE:
        return "compaction"
    if message.role == "user":
        if message.content.lstrip().startswith(COMPACTION_OPENING):
            return "compaction"
        if _fingerprint(message.content) in prompts:
            return "delegate"
    if message.role == "user" and _TOOL_RESULT.match(message.content):
        return "tool"
    return message.role


def person_words(message: BatchMessage) -> str | None:
    """What the person said when rejecting a tool call ("… the user said:\nis 241 really still a
    problem?"): their own words, a message of theirs like any other."""
    if message.role not in ("user", "tool") or not _TOOL_RESULT.match(message.content):
        return None
    match = _REJECTED_WITH_WORDS.search(message.content)
    return match["said"].strip() or None if match else None


# What a test runner, compiler or linter prints when it fails, in the tools' own formats: a shell run
# piped through `tail` or `grep` exits 0 however its tests went (`go test ./... | grep FAIL`).
_RUNNER_FAILED = re.compile(
    r"^(?:--- FAIL: |FAIL\s|FAILED |npm ERR!|error(?:\[E\d+\])?: |Traceback \(most recent call last\))"
    r"|\btest result: FAILED\b|\bTests?:\s+\d+ failed\b|^=+ .*\b\d+ failed\b|\berror TS\d+:"
    r"|\bERROR task failed\b|^[\w./-]+\.[a-z]+:\d+:\d+: ",
    re.MULTILINE,
)


def runner_failed(tool: str | None, output: str) -> bool:
    """Whether a shell run's output says that the tests, the build or the linter failed."""
    return tool == "Bash" and _RUNNER_FAILED.search(output) is not None


def read_session(update: SessionUpdate) -> SessionView:
    """Parse one session update into messages with roles, turns, prose segments and tool facts."""
    prompts = _task_prompts(update)
    messages: list[Message] = []
    turn = 0
    for raw in update.messages:
        role = _role(raw, prompts)
        if role == "tool" and (said := person_words(raw)):
            raw = BatchMessage(line=raw.line, role="user", content=said, timestamp=raw.timestamp)
            role = "user"
        if role in ("user", "delegate", "compaction"):
            turn += 1
        message = Message(raw.line, role, raw.content, turn, timestamp=raw.timestamp)
        if role == "tool":
            match = _TOOL_RESULT.match(raw.content)
            message.tool_name = match["name"] if match else None
            message.tool_output = raw.content[match.end() :] if match else raw.content
            message.tool_error = bool(match and match["error"])
            message.failed = message.tool_error or runner_failed(message.tool_name, message.tool_output)
        elif role in ("user", "assistant", "delegate"):
            message.prose = segments(raw.content)
            message.files = tool_files(raw.content)
            message.written = written_files(raw.content)
            message.todo_items = todo_items(raw.content, raw.line)
        messages.append(message)
    talk = [m for m in messages if m.role in ("user", "assistant", "delegate")]
    root = project_root(p for m in talk for p in [*m.files, *paths_in(m.text)])
    known: dict[str, str] = {}
    for message in talk:
        for path in [*message.files, *paths_in(message.text)]:
            name = file_name(path, root)
            base = name.rsplit("/", 1)[-1]
            held = known.get(base)
            if held is None or (len(name) > len(held) and name.endswith("/" + held)):
                known[base] = name
    return SessionView(update.session, update.file_path, messages, known, root)
