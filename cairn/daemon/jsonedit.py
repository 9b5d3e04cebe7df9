"""Set or delete one top-level member of a JSON object's text, leaving every other byte as it was.

Claude Code's `settings.json` and `~/.claude.json` belong to the user (and to Claude Code), and cairn
owns a single member of each (`hooks`, `mcpServers`). Loading the whole file and dumping it again
would re-indent a one-line file, reflow a hand-formatted array, turn `1e3` into `1000.0` and change
how non-ASCII text is escaped: all in parts cairn has no business touching. So only the member's
value is spliced into the original text (or the member inserted after the last one, or cut out with
its separator), and everything around it, the final newline included, stays byte for byte.

The spliced value is written in the file's own style, read from its bytes by `Style.detect`: the
indent of its first member (none for a one-line file; tabs or any number of spaces), the text around
`:` and between members, CRLF or LF line ends, and whether non-ASCII text is escaped. An object with
no members shows no style, so it (like a file cairn creates) gets Claude Code's own: two spaces.
Inserting a member and then deleting it gives back the exact text it started from.

Only the standard library's decoder is used, to find where each member's key and value start and end;
the caller has already checked that the text is a JSON object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Style:
    """How a JSON file is laid out; the defaults are Claude Code's (`JSON.stringify(data, null, 2)`)."""

    indent: str | None = "  "  # one level of indentation; None: everything on one line
    item_separator: str = ", "  # between members of a one-line file (indented ones end lines in ",")
    key_separator: str = ": "
    newline: str = "\n"
    ensure_ascii: bool = False

    @classmethod
    def detect(cls, text: str) -> Style:
        """The style of `text`, a JSON object; what it does not show is left at the default."""
        newline = "\r\n" if "\r\n" in text else "\n"
        ensure_ascii = text.isascii() and "\\u" in text
        members, open_at, _ = _members(text)
        if not members:
            return cls(newline=newline, ensure_ascii=ensure_ascii)
        first = members[0]
        lead = text[open_at + 1 : first.start]
        indent = lead.rsplit("\n", 1)[1] if "\n" in lead else None
        key_separator = text[first.key_end : first.value_start]
        if "\n" in key_separator:
            key_separator = ": "
        item_separator = ", " if key_separator.endswith(" ") else ","
        if indent is None and len(members) > 1:
            between = text[first.end : members[1].start]
            item_separator = between if "\n" not in between else item_separator
        return cls(indent, item_separator, key_separator, newline, ensure_ascii)

    def dumps(self, value: Any, depth: int = 0) -> str:
        """`value` in this style, as it reads when it starts `depth` levels deep (0: a whole document)."""
        if self.indent is None:
            separators = (self.item_separator, self.key_separator)
            return json.dumps(value, ensure_ascii=self.ensure_ascii, separators=separators)
        text = json.dumps(
            value, ensure_ascii=self.ensure_ascii, indent=self.indent, separators=(",", self.key_separator)
        )
        # A string's own line breaks are escaped, so every "\n" here is one the layout put in.
        return text.replace("\n", self.newline + self.indent * depth)


@dataclass(frozen=True)
class _Member:
    key: str
    start: int  # the key's opening quote
    key_end: int  # just past the key's closing quote
    value_start: int
    end: int  # just past the value


def _skip(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _members(text: str) -> tuple[list[_Member], int, int]:
    """The top-level object's members in order, and the positions of its `{` and `}`."""
    pos = _skip(text, 0)
    if text[pos : pos + 1] != "{":
        raise ValueError("not a JSON object")
    open_at = pos
    members: list[_Member] = []
    pos = _skip(text, pos + 1)
    if text[pos : pos + 1] == "}":
        return members, open_at, pos
    while True:
        if text[pos : pos + 1] != '"':
            raise ValueError(f"expected a key at character {pos}")
        key, key_end = json.decoder.scanstring(text, pos + 1)
        colon = _skip(text, key_end)
        if text[colon : colon + 1] != ":":
            raise ValueError(f"expected ':' at character {colon}")
        value_start = _skip(text, colon + 1)
        _, end = _DECODER.raw_decode(text, value_start)
        members.append(_Member(key, pos, key_end, value_start, end))
        pos = _skip(text, end)
        if text[pos : pos + 1] == "}":
            return members, open_at, pos
        if text[pos : pos + 1] != ",":
            raise ValueError(f"expected ',' or '}}' at character {pos}")
        pos = _skip(text, pos + 1)


def _find(members: list[_Member], key: str) -> int | None:
    """The index of the member named `key`; if repeated, of the last one, which is what JSON readers keep."""
    found = [i for i, member in enumerate(members) if member.key == key]
    return found[-1] if found else None


def new_document(data: dict[str, Any], style: Style | None = None) -> str:
    """The text of a new file holding `data`: the default style, ending in a newline."""
    style = style or Style()
    return style.dumps(data) + style.newline


def set_member(text: str | None, key: str, value: Any) -> str:
    """`text` with its member `key` set to `value`: replaced in place, or added after the last member.

    No text (no file, or only whitespace) gives a new document holding just that member.
    """
    if text is None or not text.strip():
        return new_document({key: value})
    style = Style.detect(text)
    members, open_at, close_at = _members(text)
    if not members:
        # `{}` shows no style: write the object out whole, keeping whatever surrounds it.
        return text[:open_at] + style.dumps({key: value}) + text[close_at + 1 :]
    index = _find(members, key)
    if index is not None:
        member = members[index]
        return text[: member.value_start] + style.dumps(value, 1) + text[member.end :]
    last = members[-1]
    separator = style.item_separator if style.indent is None else "," + style.newline + style.indent
    entry = json.dumps(key, ensure_ascii=style.ensure_ascii) + style.key_separator + style.dumps(value, 1)
    return text[: last.end] + separator + entry + text[last.end :]


def delete_member(text: str, key: str) -> str:
    """`text` without its member `key` (and the separator that joined it); unchanged if there is none."""
    members, open_at, close_at = _members(text)
    index = _find(members, key)
    if index is None:
        return text
    if len(members) == 1:
        return text[: open_at + 1] + text[close_at:]
    if index > 0:
        return text[: members[index - 1].end] + text[members[index].end :]
    return text[: members[0].start] + text[members[1].start :]
