"""The text of a result as a person reads it.

Capture stores a message as search and the indexing model need it (`cairn.transcripts.normalise`):
every word, in a rendering that keeps what each word was. A tool call is
`[tool_use Bash] command="cd x\\nnpm test" description="…"` (its input as compact JSON, escapes and
all), a TodoWrite its whole list as JSON, a tool's output `[tool_result Bash error] <output>`, a reply
its markdown. Shown as is, a result read `\\*\\*much more musical\\*\\*`, `cd x\\nnpm test` and
`{"id":"2","status":"completed"`: found, and unreadable. `readable` gives the text the session showed:

- a tool call is the call: `$ npm test` (Bash), `Read src/app.py`, `Tool argument` — its other
  inputs after ` — `, their strings decoded, literal `\\n` and `\\t` in them read as the line breaks
  and tabs they were; a TodoWrite is its items, `TodoWrite: fix the lock (done) · add a test (pending)`;
- a tool result is its output (the call is the result's `head`, built from what capture stored):
  JSON in it read as `key: value` (`cairn.search.plain` never shows `{"`), a one-line output of
  escaped line breaks (a notebook cell) read as lines, `cat -n` line numbers dropped, cairn's own
  `…[N chars elided]…` a plain `…`;
- prose (prompts, replies, subagent reports, ideas) loses its markdown markers: `**x**`, `*x*`,
  `__x y__`, heading `#`s, code fences, quote marks, and the backslashes of escaped characters outside
  code (in backticks or a fenced block a backslash is the text's: `C:\\Users\\me\\.claude`);
  backticks stay (they say "code"), and so do `*` and `_` that do not mark emphasis (`a*b`, `__init__`).

Everything ends on one line, whitespace collapsed: snippets and previews are one line on every face.
It runs on each result of a page (at most 100), a few regular expressions over the text each.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from cairn.transcripts.origin import SUBAGENT_TOOLS, Origin, fields_of, key_field

#: What unmarked text is, when it does not start with a `[tool_use …]` or `[tool_result …]` marker (a
#: passage from the middle of a message): prose, a tool's output, or a tool call's input.
Part = Literal["prose", "output", "input"]

#: Characters of a call's argument shown at the head of its snippet (`$ git -C …`).
HEAD_CHARS = 80
#: Where a tool call or result starts, at a line start (`cairn.transcripts.normalise`).
_MARKER = re.compile(r"^\[(tool_use|tool_result)(?: ([^\]\n]*))?\] ?", re.M)
_ELIDED = re.compile(r"…\[\d+ chars elided\]…")
_EXIT = re.compile(r"\AExit code (-?\d+)\s*")
_GUTTER = re.compile(r"^ *\d+(?:\t|→)", re.M)
_STRING_ESCAPE = re.compile(r"\\([\"\\/nrt])")
_ESCAPED_BREAK = re.compile(r"\\n")
_JSON_START = re.compile(r"[\[{]\s*[\[{\"]")
_JSON_KEY = re.compile(r'"[\w-]+":')
#: A one-line output with this many `"key":` is JSON, even cut so that no bracket opens it.
JSON_KEYS = 3
_JSON_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"?|([{}\[\],:])|([^\s{}\[\],:"]+)', re.S)
_TODO_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"?\s*(:)?|(\{)', re.S)
_TODO_STATUS = {"completed": "done", "in_progress": "in progress", "pending": "pending"}

_FENCE = re.compile(r"^[ \t]*(?:```|~~~).*$", re.M)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
_QUOTE = re.compile(r"^[ \t]{0,3}>[ \t]?", re.M)
_RULE = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.M)
_STRONG = re.compile(r"(?<![\\*])\*\*(?=[^\s*])(.+?)(?<=[^\s\\*])\*\*(?!\*)", re.S)
_UNDERLINED = re.compile(r"(?<![\w\\])__(?=\S)(.+?)(?<=\S)__(?!\w)", re.S)
_EMPHASIS = re.compile(r"(?<![\w\\*])\*(?=[^\s*])(.+?)(?<=[^\s\\*])\*(?![\w*])", re.S)
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~\"'])")
#: Code, where markdown's backslash escapes do not apply: a fenced block, an inline span of backticks.
_CODE = re.compile(
    r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)|(`+)[^`].*?(?<!`)\2(?!`)", re.M | re.S
)
#: A backslash of code while the escapes of the prose around it are read (a private-use character).
_KEPT = "\ue000"


def readable(text: str, unmarked: Part = "prose") -> str:
    """`text` as a person reads it, on one line (see the module docstring); `unmarked` says what text
    before any marker is."""
    pieces: list[tuple[str, bool]] = []  # (text, is a tool call)
    at, part, label = 0, unmarked, ""
    for marker in _MARKER.finditer(text):
        pieces.append(_piece(text[at : marker.start()], part, label))
        at = marker.end()
        part = "input" if marker[1] == "tool_use" else "output"
        label = marker[2] or ""
    pieces.append(_piece(text[at:], part, label))
    out = ""
    previous_call = False
    for piece, is_call in pieces:
        if not piece:
            continue
        if out:
            out += " · " if is_call and previous_call else " "
        out += piece
        previous_call = is_call
    return out


def _piece(text: str, part: Part, label: str) -> tuple[str, bool]:
    """One part of a message, read: prose, a call (`label` its tool) or an output (`label` its tool)."""
    if part == "input":
        if label:
            return call_text(label, text.strip()), True
        return _one_line(_unescape(text)), False
    if part == "output":
        tool = label.removesuffix(" error").strip()
        return (prose(text) if tool in SUBAGENT_TOOLS else output(text)), False
    return prose(text), False


def _one_line(text: str) -> str:
    return " ".join(text.split())


def prose(text: str) -> str:
    """Markdown as read: emphasis markers, heading `#`s, fences, quote marks and escapes removed."""
    if not any(mark in text for mark in "*_#`>\\-~"):
        return _one_line(text)
    if "\\" in text:  # `C:\Users\me\.claude` in backticks is a path, not escapes
        text = _CODE.sub(lambda code: code[0].replace("\\", _KEPT), text)
    text = _FENCE.sub("", text)
    text = _RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _STRONG.sub(r"\1", text)
    text = _UNDERLINED.sub(lambda m: m[1] if re.search(r"\s", m[1]) else m[0], text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _MD_ESCAPE.sub(r"\1", text).replace(_KEPT, "\\")
    return _one_line(text)


def output(text: str) -> str:
    """A tool's output as read: JSON as `key: value`, escaped line breaks as breaks, no `cat -n`
    numbers, cairn's elision marker a plain `…`."""
    text = _ELIDED.sub(" … ", text)
    one_line = "\n" not in text.strip()
    if one_line and len(_JSON_KEY.findall(text)) >= JSON_KEYS and text.lstrip()[:1] not in ("{", "["):
        return unjson(_realigned(text))  # a passage cut from the middle of one line of JSON
    if one_line and len(_ESCAPED_BREAK.findall(text)) >= 2:
        # A string printed escaped (a notebook cell, a description): markdown, one line of `\n`s.
        text = _MD_ESCAPE.sub(r"\1", _unescape(text))
    if "→" in text or "\t" in text:
        text = _GUTTER.sub("", text)
    if _JSON_START.search(text):
        text = _unjson_all(text)
    return _one_line(text)


def _realigned(fragment: str) -> str:
    """A JSON fragment that starts inside a string, with that string's opening quote put back."""
    quote = fragment.find('"')
    if quote >= 0 and fragment[quote + 1 : quote + 2] in (",", ":", "}", "]"):
        return '"' + fragment
    return fragment


def _unescape(text: str) -> str:
    """Literal `\\n`, `\\t`, `\\"` and `\\\\` read as what they stand for."""
    return _STRING_ESCAPE.sub(lambda m: _ESCAPES[m[1]], text)


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "r": "", "t": "\t"}


def _unjson_all(text: str) -> str:
    """Every JSON object or list in `text` read as `key: value` pairs (a cut one up to where it ends)."""
    out: list[str] = []
    at = 0
    for start in _JSON_START.finditer(text):
        if start.start() < at:
            continue
        end = _closing(text, start.start())
        out.append(text[at : start.start()])
        out.append(unjson(text[start.start() : end]))
        at = end
    out.append(text[at:])
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """Where the JSON value opening at `start` ends: after its matching bracket, or the end of `text`."""
    depth, quoted, i = 0, False, start
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\":
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def unjson(text: str) -> str:
    """JSON (whole or cut short) as a person reads it: `key: value, key: value`, one item of a list
    after another with ` · `, strings decoded; brackets and quotes gone."""
    out: list[str] = []
    after_close = False
    for match in _JSON_TOKEN.finditer(text):
        string, mark, literal = match.groups()
        if mark is None:
            value = _decoded(string) if string is not None else literal
            out.append(value)
            after_close = False
        elif mark == ":":
            out.append(": ")
        elif mark == ",":
            out.append(" · " if after_close else ", ")
        else:
            after_close = mark in "]}"
            out.append(" ")
    return _one_line("".join(out))


def _decoded(inner: str) -> str:
    """A JSON string's text: decoded, and the escapes of markdown inside it read (`\\~502MB`)."""
    try:
        value = str(json.loads(f'"{inner}"'))
    except ValueError:
        value = _unescape(inner)
    return _MD_ESCAPE.sub(r"\1", _unescape(value)) if "\\" in value else value


def call_text(tool: str, rendered_input: str) -> str:
    """One tool call as a person reads it: the call (`call_head`) and its other inputs after ` — `;
    a TodoWrite as its items."""
    fields = fields_of(rendered_input)
    if tool == "TodoWrite" and "todos" in fields:
        items = todos(fields["todos"])
        return f"TodoWrite: {items}" if items else "TodoWrite"
    key = key_field(tool, fields)
    head = call_head(tool, _input_value(fields[key]) if key else "", limit=None)
    rest = [
        _input_value(value) for name, value in fields.items() if name != key and not _is_plain_number(value)
    ]
    rest = [value for value in rest if value]
    return f"{head} — {' · '.join(rest)}" if rest else head


def _input_value(value: str) -> str:
    """A tool input's value, read: a list or object as `key: value`, a string with its escapes read."""
    if value[:1] in "[{":
        return unjson(value)
    return _one_line(_unescape(value) if "\\" in value else value)


def _is_plain_number(value: str) -> bool:
    """Numbers and flags (`timeout=600000`, `replace_all=false`) say nothing to a reader."""
    return value in ("true", "false", "null") or re.fullmatch(r"-?\d+(?:\.\d+)?", value) is not None


def call_head(tool: str | None, argument: str | None, *, limit: int | None = HEAD_CHARS) -> str:
    """A call as a person writes it: `$ npm test` for a shell command, else `Read src/app.py`; the
    argument cut to `limit` characters (a call that leads a snippet is not what was found)."""
    argument = _one_line(argument or "")
    if limit is not None:
        argument = _cap(argument, limit)
    if tool == "Bash" and argument:
        return f"$ {argument}"
    name = _tool_name(tool)
    return f"{name} {argument}" if argument else name


def _tool_name(tool: str | None) -> str:
    """A tool's name as read: an MCP tool's `mcp__linear__create_issue` as `linear.create_issue`."""
    if not tool:
        return "tool"
    if tool.startswith("mcp__"):
        return tool.removeprefix("mcp__").replace("__", ".")
    return tool


def todos(value: str) -> str:
    """A TodoWrite list (JSON, maybe cut short) as `item (status) · item (status)`."""
    items: list[list[str]] = []
    key: str | None = None
    for match in _TODO_TOKEN.finditer(value):
        string, colon, brace = match.groups()
        if brace:
            items.append(["", ""])
            key = None
        elif colon:
            key = _decoded(string)
        else:
            if items and key in ("content", "status"):
                items[-1][0 if key == "content" else 1] = _one_line(_decoded(string))
            key = None
    shown = []
    for content, status in items:
        if content:
            state = _TODO_STATUS.get(status, status)
            shown.append(f"{content} ({state})" if state else content)
    return " · ".join(shown)


def result_head(
    origin: Origin | None, tool: str | None, argument: str | None, failed: bool, body: str
) -> tuple[str, str]:
    """What a result's snippet starts with, and its body without what that head says.

    A tool result is shown as the output of its call, `$ npm run build → exit 1: <output>` (the exit
    code when the output names it, `failed` when only capture's flag says so), `Read src/app.py →
    <output>`; a tool call as the call; a subagent's report as the task it was given. Anything else
    has no head."""
    if origin not in ("tool_call", "tool_result", "subagent") or not tool:
        return "", body
    head = call_head(tool, argument)
    if origin == "tool_call":
        return head, body
    if origin == "subagent" and tool not in SUBAGENT_TOOLS:
        return "", body  # a subagent's own transcript: its words, no call of ours
    exit_code = _EXIT.match(body)
    if exit_code is not None:
        body = body[exit_code.end() :]
        code = exit_code[1]
        return f"{head} → {'exit ' + code if code != '0' else 'ok'}:", body
    return (f"{head} → failed:" if failed else f"{head} →"), body


def _cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, at a space when one is in its second half."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def within(argument: str | None, root: str | None) -> str | None:
    """`argument` with the project's directory `root` left out: `src/app.py`, `git -C . log`, not the
    absolute paths a call names (which fill a head before its output starts)."""
    root = (root or "").rstrip("/")
    if not argument or len(root) < 2 or root not in argument:
        return argument
    return re.sub(re.escape(root) + r"(?:/|(?![\w.-]))", lambda m: "." if m[0] == root else "", argument)
