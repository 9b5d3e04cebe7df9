"""Listings laid out for the terminal they are printed on.

A listing's rows come from the store: ids, short labels, numbers, dates and free text. Rich, left to
itself, shares an 80-column terminal out evenly among eight columns and folds every cell, so an id, a
date or a word of the text ends up split over lines (`busy_timeo` / `ut`). Here the width is worked
out before rich draws anything:

- a column empty in every row is left out: it would only take room the text needs;
- ids, labels, numbers and dates are never wrapped: each gets the width of its widest cell;
- the text columns share what is left, wrapping at word boundaries, each at least its `min_width`;
- when that cannot fit, the secondary columns go, the last one first, and a dim line names them and
  says how to see them (`--wide`, `--json`).

`--wide` keeps every column with something in it and lets the table be as wide as it needs (for a
wider window or `less -S`); `--json` is never laid out at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from cairn.cli.safe import plain_text
from cairn.dates import shown_date

#: What a column holds. A `text` column wraps at word boundaries; every other kind is never wrapped.
Role = Literal["id", "label", "number", "date", "text"]

#: The widest a text column is drawn with `--wide`: wider lines are harder to read than more of them.
WIDE_TEXT = 72
#: A text column that must keep its words whole (a path) reserves room for a word up to this long.
LONGEST_WHOLE_WORD = 40


@dataclass(frozen=True)
class Column:
    """One column of a listing: the row field it shows, and how it may be laid out."""

    key: str  #: the row's field (a row is a dict, as the op answered it)
    header: str
    role: Role = "text"
    primary: bool = True  #: a secondary column is dropped when the width cannot hold it
    min_width: int = 12  #: the least width a text column is drawn at
    whole_words: bool = False  #: a text column that reserves room for its longest word (a path)
    cell: Callable[[dict[str, Any]], Any] | None = None  #: the cell from the row, else `row[key]`


@dataclass(frozen=True)
class Layout:
    """A listing drawn for a width: the table and the columns left out for want of room."""

    table: Table
    hidden: list[str]
    width: int  #: the width the table is drawn at


def cell_text(value: Any, role: Role) -> Text:
    """A cell as a person reads it: a date in the one short form, a yes/no, a list joined; stored text
    made visible (`plain_text`), never markup."""
    if isinstance(value, Text):
        return value
    if role == "date" and isinstance(value, str):
        return plain_text(shown_date(value))
    if isinstance(value, bool):
        return plain_text("yes" if value else "no")
    if isinstance(value, list | tuple):
        return plain_text(", ".join(str(v) for v in value))
    return plain_text(value)


def _lines(texts: Sequence[Text]) -> list[str]:
    return [line for text in texts for line in text.plain.splitlines()]


def _widest(texts: Sequence[Text]) -> int:
    return max((Text(line).cell_len for line in _lines(texts)), default=0)


def _longest_word(texts: Sequence[Text]) -> int:
    return max((Text(word).cell_len for line in _lines(texts) for word in line.split()), default=0)


@dataclass(frozen=True)
class _Measured:
    column: Column
    cells: list[Text]
    natural: int  #: the width that shows every cell on one line
    least: int  #: the narrowest it may be drawn

    @property
    def wraps(self) -> bool:
        return self.column.role == "text"


def _measure(column: Column, rows: Sequence[dict[str, Any]]) -> _Measured:
    cells = [cell_text(column.cell(row) if column.cell else row.get(column.key), column.role) for row in rows]
    header_word = _longest_word([Text(column.header)])
    natural = max(_widest(cells), header_word)
    if column.role != "text":
        return _Measured(column, cells, natural, natural)
    least = max(column.min_width, header_word)
    if column.whole_words:
        least = max(least, min(_longest_word(cells), LONGEST_WHOLE_WORD))
    return _Measured(column, cells, natural, min(natural, least))


def _overhead(count: int) -> int:
    """The border and padding a rich table with `count` columns draws: a rule before each column and
    after the last, and a space either side of every cell."""
    return 3 * count + 1


def _fits(measured: Sequence[_Measured], width: int) -> bool:
    return sum(m.least for m in measured) + _overhead(len(measured)) <= width


def _text_widths(measured: Sequence[_Measured], room: int) -> dict[str, int]:
    """The width each text column gets of `room`: its least first, then what is left shared out evenly,
    none past its natural width (a short column leaves the rest to the others)."""
    texts = [m for m in measured if m.wraps]
    widths = {m.column.key: m.least for m in texts}
    spare = room - sum(widths.values())
    growing = [m for m in texts if widths[m.column.key] < m.natural]
    while spare > 0 and growing:
        share = max(spare // len(growing), 1)
        for m in list(growing):
            grant = min(share, m.natural - widths[m.column.key], spare)
            widths[m.column.key] += grant
            spare -= grant
            if widths[m.column.key] >= m.natural:
                growing.remove(m)
            if spare <= 0:
                break
    return widths


def lay_out(
    title: str | None,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    width: int,
    wide: bool = False,
) -> Layout:
    """`rows` as a table no wider than `width` (wider with `wide`, which drops no column that has
    something in it). Columns empty in every row are left out either way; they say nothing."""
    measured = [
        m for m in (_measure(c, rows) for c in columns) if any(cell.plain.strip() for cell in m.cells)
    ]
    if wide:
        shown, hidden = [_capped(m) for m in measured], []
        width = max(width, sum(m.least for m in shown) + _overhead(len(shown)))
    else:
        shown, hidden = _fitted(measured, width)
    fixed = sum(m.natural for m in shown if not m.wraps)
    texts = _text_widths(shown, width - fixed - _overhead(len(shown)))
    widths = [texts[m.column.key] if m.wraps else m.natural for m in shown]
    return Layout(_table(title, shown, widths, len(rows)), hidden, sum(widths) + _overhead(len(shown)))


def _capped(measured: _Measured) -> _Measured:
    """A text column for `--wide`: at least its natural width, up to `WIDE_TEXT`."""
    if not measured.wraps:
        return measured
    return _Measured(measured.column, measured.cells, measured.natural, min(measured.natural, WIDE_TEXT))


def _fitted(measured: list[_Measured], width: int) -> tuple[list[_Measured], list[str]]:
    """The columns that fit `width`, secondary ones dropped last first; and the headers of those dropped."""
    shown, hidden = list(measured), []
    for dropped in [m for m in measured if not m.column.primary][::-1]:
        if _fits(shown, width):
            break
        shown = [m for m in shown if m is not dropped]
        hidden.insert(0, dropped.column.header)
    return shown, hidden


def _table(title: str | None, shown: Sequence[_Measured], widths: Sequence[int], count: int) -> Table:
    """The rich table, every column at its width: ids, labels, numbers and dates unwrapped, the text
    wrapped at words (folding only a word longer than the column, never cutting it)."""
    table = Table(title=title, title_justify="left")
    for m, width in zip(shown, widths, strict=True):
        table.add_column(
            _header(m.column.header, width),
            justify="right" if m.column.role == "number" else "left",
            no_wrap=not m.wraps,
            overflow="fold",
            width=width,
        )
    for index in range(count):
        table.add_row(*(m.cells[index] for m in shown))
    return table


def _header(header: str, width: int) -> Text:
    """A header one word a line when the column is narrower than it: an unwrapped column (a count
    under `open questions`) would otherwise cut its header off."""
    return Text(header if Text(header).cell_len <= width else header.replace(" ", "\n"))


def hidden_hint(hidden: Sequence[str]) -> Text:
    """The dim line under a listing that left columns out: which, and how to see them."""
    count = f"{len(hidden)} column{'' if len(hidden) == 1 else 's'}"
    return Text(
        f"{count} hidden at this width: {', '.join(hidden)} (--wide or --json shows them)", style="dim"
    )


def _print_past_the_edge(console: Console, table: Table, width: int) -> None:
    """`table` drawn `width` wide on a narrower console: rich clamps a print to the console's width, so
    the lines are rendered first and written whole (the terminal, or `less -S`, shows them)."""
    for line in console.render_lines(table, console.options.update(width=width), pad=False):
        console.print(Segments([*line, Segment.line()]), crop=False, soft_wrap=True)


def print_listing(
    console: Console,
    title: str | None,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    wide: bool = False,
) -> None:
    """Print `rows` laid out for `console`'s width, and the hint naming any column left out."""
    layout = lay_out(title, rows, columns, console.width, wide)
    if wide and layout.width > console.width:
        _print_past_the_edge(console, layout.table, layout.width)
    else:
        console.print(layout.table)
    if layout.hidden:
        console.print(hidden_hint(layout.hidden))
