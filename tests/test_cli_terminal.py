"""Stored text printed to a real terminal (issue 14, item 3): no control sequence from a transcript acts.

A transcript's message holds `ESC[2J` (clear screen), an OSC title sequence, a C1 CSI, a carriage
return, DEL, a bidi override and rich markup. Each command that prints stored text runs as a real
`cairn` process on a pseudo-terminal; the only escape sequences that may reach it are rich's own colour
codes (SGR, `ESC[...m`), and `--json` still carries the stored text exactly.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from cairn.cli.safe import SafeConsole, terminal_data, visible
from tests.helpers.cli import cairn_json

pytestmark = pytest.mark.process

CAIRN = Path(sys.executable).with_name("cairn")
CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned title\x07"
USER_TEXT = (
    "zebracorn marker [bold red]styled[/] and [/] \u202eexe.txt \r over \x9b31m del\x7f tab\there\nnext"
)
ASSISTANT_TEXT = f"We decided to keep zebracorn {CLEAR}{TITLE}\x1b[31mred\x1b[0m output."
# Rich's colours are the one kind of escape sequence allowed on the terminal.
_NOT_SGR = re.compile(rb"\x1b(?!\[[0-9;]*m)")


def _entry(kind: str, uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["model"] = "claude-sonnet-4-5"
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "sess-escapes",
        "cwd": "/tmp/escapes-project",
        "timestamp": "2026-11-20T09:12:07Z",
        "message": message,
    }


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store holding the hostile session, synced and indexed offline by a real `cairn sync`."""
    root = tmp_path_factory.mktemp("terminal")
    transcript = root / "sess-escapes.jsonl"
    entries = [
        _entry("user", "u1", None, USER_TEXT),
        _entry("assistant", "a1", "u1", [{"type": "text", "text": ASSISTANT_TEXT}]),
    ]
    transcript.write_text("".join(json.dumps(e) + "\n" for e in entries))
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "cairn-home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        report = cairn_json("sync", str(transcript), "--model", "offline")
        assert report["sync"]["messages_added"] == 2
        yield root / "cairn-home"


@pytest.fixture(scope="module")
def ids(home: Path) -> dict[str, str]:
    """The stored assistant message (with the escapes), the user message, an idea and a topic span."""
    env = {**os.environ, "CAIRN_HOME": str(home)}
    found: dict[str, str] = {}
    for kind in ("messages", "ideas", "spans"):
        page = cairn_json("search", "zebracorn", "--kind", kind, "--mode", "keyword", env=env)
        for result in page["results"]:
            if result["kind"] == "message":
                found["assistant" if CLEAR in (result.get("content") or "") else "user"] = result["id"]
            else:
                found.setdefault(result["kind"], result["id"])
    assert set(found) == {"assistant", "user", "idea", "span"}, found
    return found


def on_a_terminal(home: Path, *args: str) -> bytes:
    """What `cairn ARGS` writes to a 120x40 pseudo-terminal (stdout and stderr, as a person sees them)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "CAIRN_HOME": str(home), "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([str(CAIRN), *args], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    try:
        while chunk := _read(master):
            out += chunk
    finally:
        os.close(master)
        assert proc.wait(timeout=120) == 0, out.decode(errors="replace")
    return out


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the child closed the terminal
        return b""


def assert_inert(out: bytes) -> None:
    text = out.decode()
    assert not _NOT_SGR.search(out), f"a control sequence reached the terminal: {out!r}"
    assert "\x07" not in text and "\x9b" not in text and "\x7f" not in text and "\u202e" not in text
    assert "\r" not in text.replace("\r\n", ""), "a carriage return could overwrite what was printed"


def test_json_keeps_the_stored_text_exactly(home: Path, ids: dict[str, str]) -> None:
    env = {**os.environ, "CAIRN_HOME": str(home)}
    proc = subprocess.run(
        [str(CAIRN), "show", ids["assistant"], "--json"], capture_output=True, env=env, check=True
    )
    assert b"\x1b" not in proc.stdout, "JSON escapes control characters itself"
    assert json.loads(proc.stdout)["content"] == ASSISTANT_TEXT
    user = json.loads(
        subprocess.run([str(CAIRN), "show", ids["user"], "--json"], capture_output=True, env=env).stdout
    )
    assert "[bold red]styled[/]" in user["content"] and "\u202e" in user["content"]


@pytest.mark.parametrize(
    "command",
    [
        ["show", "{assistant}"],
        ["show", "{user}"],
        ["search", "zebracorn"],
        ["search", "zebracorn", "--kind", "messages", "--mode", "keyword"],
        ["content", "--term", "zebracorn"],
        ["timeline", "{idea}"],
        ["ideas"],
        ["questions"],
        ["topics"],
        ["show", "{span}"],
    ],
    ids=" ".join,
)
def test_no_stored_control_sequence_reaches_the_terminal(
    home: Path, ids: dict[str, str], command: list[str]
) -> None:
    out = on_a_terminal(home, *(part.format(**ids) for part in command))
    assert_inert(out)


def test_show_and_search_make_the_escapes_visible_and_markup_literal(home: Path, ids: dict[str, str]) -> None:
    shown = on_a_terminal(home, "show", ids["assistant"]).decode()
    assert "␛[2J" in shown and "␛]0;pwned title␇" in shown
    user = on_a_terminal(home, "show", ids["user"]).decode()
    assert "[bold red]styled[/] and [/]" in user and "\\u202eexe.txt" in user and "␍ over" in user
    assert "\\x9b31m" in user and "del␡" in user
    found = on_a_terminal(home, "search", "zebracorn", "--kind", "messages", "--mode", "keyword").decode()
    assert "␛[2J" in found


# The helpers themselves


def test_visible_keeps_text_and_shows_controls() -> None:
    assert visible("plain, ünïcödé, emoji 👩\u200d💻, tab\tand\nnewline") == (
        "plain, ünïcödé, emoji 👩\u200d💻, tab\tand\nnewline"
    )
    assert visible("\x00\x1b[2J\x07\x08\r\x7f\x85\x9b\u202e\u2066\u200f") == (
        "␀␛[2J␇␈␍␡\\x85\\x9b\\u202e\\u2066\\u200f"
    )
    assert visible(visible("\x1b]0;t\x07")) == visible("\x1b]0;t\x07"), "idempotent"
    assert terminal_data({"a\x1b": ["\x1b", 1, None, {"b": "\r"}]}) == {"a␛": ["␛", 1, None, {"b": "␍"}]}


def test_the_console_backstop_filters_what_a_command_forgot() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, color_system="truecolor", width=60)
    console.print(Text("raw " + CLEAR + TITLE, style="bold"))
    console.print("markup [red]red[/] then " + CLEAR)
    out = buffer.getvalue().encode()
    assert not _NOT_SGR.search(out) and b"\x07" not in out
    assert "␛[2J" in buffer.getvalue() and "\x1b[31m" in buffer.getvalue(), "rich's own colours still work"
