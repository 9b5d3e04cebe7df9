"""Printing stored text to a terminal without letting it drive the terminal.

What cairn shows comes from transcripts: tool output, pasted logs, files an agent read — anyone's bytes.
A terminal obeys some of them: `ESC[2J` clears the screen, an OSC sequence retitles the window or
(in some terminals) writes the clipboard or a hyperlink, a carriage return or backspace overwrites what
was printed, and a bidi override (U+202E) reorders the characters a person reads so `exe.txt` shows
as `txt.exe`. A person reading `cairn show` must see those bytes, not have them act.

`visible` keeps newlines and tabs and turns every other control character into something printable:
C0 controls and DEL into their Unicode "control pictures" (ESC shows as ␛, so `␛[2J` is still
recognisable), C1 controls and the bidi and other invisible direction marks into `\\x9b`/`\\u202e`
escapes. `terminal_data` applies it to every string in an op's JSON before a command renders it, so
tables are laid out with the text as shown. `SafeConsole` is the backstop: every segment of plain text
it writes goes through `visible`, whatever path produced it, while rich's own styling and cursor control
(which never comes from stored text) pass untouched. `--json` bypasses all of this and prints the
stored text exactly (json escapes control characters itself, so even that never reaches a terminal raw).

Rich markup is the other injection: a string passed to `console.print` or a table cell is parsed for
`[bold red]`-style tags. Stored text therefore goes into `Text` objects (`plain_text`), never into
markup strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

#: Bidirectional embeddings, overrides, isolates and marks: invisible, and they reorder what is read.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
#: Everything `visible` replaces: C0 but tab and newline, DEL, C1, and the bidi controls.
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC is ␛)
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character but newline and tab made visible and harmless."""
    return _UNSAFE.sub(_shown, text) if _UNSAFE.search(text) else text


def terminal_data(value: Any) -> Any:
    """A copy of JSON-like `value` (an op's answer) with every string, keys too, passed through `visible`."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(k) if isinstance(k, str) else k: terminal_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [terminal_data(v) for v in value]
    return value


def plain_text(value: Any, style: str = "") -> Text:
    """Stored text as a rich `Text`: shown literally (no markup) and with its controls made visible."""
    return Text(visible("" if value is None else str(value)), style=style)


class SafeConsole(Console):
    """A rich `Console` that cannot write a control character taken from the text it prints.

    Rich renders every renderable (a `Text`, a table, a panel, a markup string) into segments of plain
    text plus a style, and adds the escape sequences for the styles only afterwards; segments that
    carry cursor or screen control (progress bars, `Live`) are marked as such and come from rich, not
    from stored text. So filtering the text segments here catches whatever a command forgot to clean,
    at the cost of layout only: rich measured the text before `visible` lengthened it.
    """

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _UNSAFE.search(segment.text):
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)
