"""Set or delete one top-level member of a JSON object's text, leaving every other byte as it was.

Claude Code's `settings.json` and `~/.claude.json` belong to the user (and to Claude Code), and cairn
writes into a single member of each (`hooks`, `mcpServers`). Loading the whole file and dumping it
again would re-indent a one-line file, reflow a hand-formatted array, turn `1e3` into `1000.0` and
change how non-ASCII text is escaped: all in parts cairn has no business touching. Even that member
is mostly the user's: their own hooks and MCP servers sit beside cairn's. So a member's new value is
spliced into the old text as the smallest edit between the two values: an object's members and an
array's items that did not change keep their bytes, one that changed is edited the same way inside,
one that went is cut out with its separator, and one that is new is inserted after the last one.
Everything else, the final newline included, stays byte for byte.

New text is written in the file's own style, read from its bytes by `Style.detect`: the
indent of its first member (none for a one-line file; tabs or any number of spaces), the text around
`:` and between members, CRLF or LF line ends, and whether non-ASCII text is escaped. An object with
no members shows no style, so it (like a file cairn creates) gets Claude Code's own: two spaces.
Inside an object or array that already has members, new ones follow their neighbours' layout: on
their own lines at the first one's indent, or on the same line when the container is on one line.
Inserting a member or an item and then deleting it gives back the exact text it started from.

Only the standard library's decoder is used, to find where each member's key and value start and end;
the caller has already checked that the text is a JSON object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_INDENT = re.compile(r"[ \t]*")
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
        return self.dumps_at(value, (self.indent or "") * depth)

    def dumps_at(self, value: Any, prefix: str) -> str:
        """`value` in this style, starting on a line indented by `prefix`."""
        if self.indent is None:
            separators = (self.item_separator, self.key_separator)
            return json.dumps(value, ensure_ascii=self.ensure_ascii, separators=separators)
        text = json.dumps(
            value, ensure_ascii=self.ensure_ascii, indent=self.indent, separators=(",", self.key_separator)
        )
        # A string's own line breaks are escaped, so every "\n" here is one the layout put in.
        return text.replace("\n", self.newline + prefix)

    def on_one_line(self) -> Style:
        """This style with everything on one line, for what goes into a one-line object or array."""
        separator = self.item_separator if self.indent is None else ", "
        return Style(None, separator, self.key_separator, self.newline, self.ensure_ascii)


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


def _members(text: str, start: int = 0) -> tuple[list[_Member], int, int]:
    """The members, in order, of the object at `start` (default: the document's), and the positions of
    its `{` and `}`."""
    pos = _skip(text, start)
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
        end = _value_end(text, value_start)
        members.append(_Member(key, pos, key_end, value_start, end))
        pos = _skip(text, end)
        if text[pos : pos + 1] == "}":
            return members, open_at, pos
        if text[pos : pos + 1] != ",":
            raise ValueError(f"expected ',' or '}}' at character {pos}")
        pos = _skip(text, pos + 1)


def _value_end(text: str, start: int) -> int:
    """Just past the JSON value that starts at `start`."""
    _, end = _DECODER.raw_decode(text, start)
    return end


def _items(text: str, start: int) -> tuple[list[tuple[int, int]], int, int]:
    """The `(start, end)` of each item of the array at `start`, and the positions of its `[` and `]`."""
    open_at = start
    items: list[tuple[int, int]] = []
    pos = _skip(text, start + 1)
    if text[pos : pos + 1] == "]":
        return items, open_at, pos
    while True:
        end = _value_end(text, pos)
        items.append((pos, end))
        pos = _skip(text, end)
        if text[pos : pos + 1] == "]":
            return items, open_at, pos
        if text[pos : pos + 1] != ",":
            raise ValueError(f"expected ',' or ']' at character {pos}")
        pos = _skip(text, pos + 1)


def _line_prefix(text: str, pos: int) -> str:
    """The indentation (spaces and tabs) of the line `pos` is on."""
    line_start = text.rfind("\n", 0, pos) + 1
    match = _INDENT.match(text, line_start, pos)
    return match.group() if match else ""


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values, keys in the same order (so a reordering is a change)."""
    return json.dumps(a) == json.dumps(b)


# One item of a container being rebuilt: the index of an old item and its (maybe edited) text, or a new
# item (index None) and its text.
_Piece = tuple[int | None, str]


def _splice(text: str, start: int, new: Any, style: Style) -> str:
    """The text for `new` in place of the JSON value at `start`: the old text where values are equal, else
    the smallest edit of it (see the module docstring)."""
    end = _value_end(text, start)
    old = json.loads(text[start:end])
    if _same(old, new):
        return text[start:end]
    # An object or array laid out on one line keeps to one line; an empty one shows no layout.
    one_line = bool(old) and isinstance(old, dict | list) and "\n" not in text[start:end]
    local = style.on_one_line() if one_line else style
    if isinstance(old, dict) and isinstance(new, dict) and old:
        return _splice_object(text, start, end, old, new, local)
    if isinstance(old, list) and isinstance(new, list) and old:
        return _splice_array(text, start, end, old, new, local)
    return local.dumps_at(new, _line_prefix(text, start))


def _splice_object(
    text: str, start: int, end: int, old: dict[str, Any], new: dict[str, Any], style: Style
) -> str:
    members, _, _ = _members(text, start)
    kept = [m.key for m in members if m.key in new]
    added = [k for k in new if k not in old]
    if len({m.key for m in members}) != len(members) or [*kept, *added] != list(new):
        # A repeated key or a new order is no small edit: the value is written out whole.
        return style.dumps_at(new, _line_prefix(text, start))
    first = members[0]
    key_separator = text[first.key_end : first.value_start]
    if "\n" in key_separator:
        key_separator = style.key_separator
    prefix = _line_prefix(text, first.start)
    pieces: list[_Piece] = []
    for index, member in enumerate(members):
        if member.key in new:
            value = _splice(text, member.value_start, new[member.key], style)
            pieces.append((index, text[member.start : member.value_start] + value))
    for key in added:
        entry = json.dumps(key, ensure_ascii=style.ensure_ascii) + key_separator
        pieces.append((None, entry + style.dumps_at(new[key], prefix)))
    spans = [(m.start, m.end) for m in members]
    return _rebuild(text, start, end, spans, pieces, style)


def _splice_array(text: str, start: int, end: int, old: list[Any], new: list[Any], style: Style) -> str:
    spans, _, _ = _items(text, start)
    prefix = _line_prefix(text, spans[0][0])
    pieces: list[_Piece] = []
    for old_index, new_index in _align(old, new):
        if new_index is None:
            continue  # an item that went
        if old_index is None:
            pieces.append((None, style.dumps_at(new[new_index], prefix)))
        else:
            pieces.append((old_index, _splice(text, spans[old_index][0], new[new_index], style)))
    return _rebuild(text, start, end, spans, pieces, style)


def _align(old: list[Any], new: list[Any]) -> list[tuple[int | None, int | None]]:
    """Pairs `(old index, new index)` covering both lists in order: equal items are paired (a longest
    common subsequence); between two such pairs, items of the same kind (both objects, both arrays) are
    paired to be edited, and the rest are `(i, None)` (gone) or `(None, j)` (new)."""
    a = [json.dumps(x) for x in old]
    b = [json.dumps(x) for x in new]
    lengths = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            lengths[i][j] = (
                lengths[i + 1][j + 1] + 1 if a[i] == b[j] else max(lengths[i + 1][j], lengths[i][j + 1])
            )
    equal: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            equal.append((i, j))
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    pairs: list[tuple[int | None, int | None]] = []
    i = j = 0
    for ei, ej in [*equal, (len(a), len(b))]:
        gone, fresh = list(range(i, ei)), list(range(j, ej))
        while (
            gone
            and fresh
            and type(old[gone[0]]) is type(new[fresh[0]])
            and isinstance(old[gone[0]], dict | list)
        ):
            pairs.append((gone.pop(0), fresh.pop(0)))
        pairs.extend((g, None) for g in gone)
        pairs.extend((None, f) for f in fresh)
        if ei < len(a):
            pairs.append((ei, ej))
        i, j = ei + 1, ej + 1
    return pairs


def _rebuild(
    text: str, start: int, end: int, spans: list[tuple[int, int]], pieces: list[_Piece], style: Style
) -> str:
    """The container at `start:end` holding `pieces` in order, laid out as it was: the text before its first
    item and after its last stays, an old item keeps the separator that followed it, and a new item gets
    the separator of the container's first two items (or, with one item, a new line at its indent)."""
    open_char, close_char = text[start], text[end - 1]
    if not pieces:
        return open_char + close_char
    lead = text[start + 1 : spans[0][0]]
    trail = text[spans[-1][1] : end - 1]
    if len(spans) > 1:
        default = text[spans[0][1] : spans[1][0]]
    elif "\n" in lead:
        default = "," + lead
    else:
        default = style.item_separator
    out = [open_char, lead]
    for position, (index, piece) in enumerate(pieces):
        out.append(piece)
        if position + 1 == len(pieces):
            break
        if index is not None and index + 1 < len(spans):
            out.append(text[spans[index][1] : spans[index + 1][0]])
        else:
            out.append(default)
    out.extend([trail, close_char])
    return "".join(out)


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
        return (
            text[: member.value_start] + _splice(text, member.value_start, value, style) + text[member.end :]
        )
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
