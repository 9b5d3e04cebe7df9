"""The one layout of every listing (`cairn.cli.tables`), drawn by rich into a console of a given width."""

from __future__ import annotations

import io
import re

from cairn.cli.safe import SafeConsole
from cairn.cli.tables import Column, print_listing

COLUMNS = [
    Column("id", "id", "id"),
    Column("text", "text", min_width=20),
    Column("at", "said", "date"),
    Column("project", "project", "label", primary=False),
    Column("topic", "topic", primary=False, min_width=16),
    Column("gone", "superseded by", "id", primary=False),
]
ROWS = [
    {
        "id": 1041,
        "text": "use WAL journal mode, a 5 s busy_timeout, and BEGIN IMMEDIATE for every write",
        "at": "2026-11-20T09:15:16.000Z",
        "project": "acme-api",
        "topic": "Fix the flaky orders test that fails one run in five",
        "gone": None,
    },
    {
        "id": 7,
        "text": "stay on SQLite",
        "at": "2026-11-21T10:00:00.000Z",
        "project": "acme-api",
        "topic": "Black Friday",
        "gone": None,
    },
]


def drawn(width: int, wide: bool = False) -> str:
    out = io.StringIO()
    console = SafeConsole(file=out, width=width, color_system=None)
    print_listing(console, "ideas (2)", ROWS, COLUMNS, wide)
    return out.getvalue()


def test_a_narrow_terminal_drops_the_last_secondary_column_first_and_names_it() -> None:
    text = drawn(70)
    assert all(len(line) <= 70 for line in text.splitlines()), text
    assert re.search(r"┃ project\s+┃", text) and "topic" not in text.split("┡")[0]
    assert "1 column hidden at this width: topic (--wide or --json shows them)" in text
    assert "superseded by" not in text, "a column empty in every row is left out, not named"
    assert "│ 1041 │" in text and "busy_timeout" in text
    assert text.count("2026-11-2") == 2 and all(len(m) == 16 for m in _dates(text))


def test_a_wide_terminal_shows_every_column_with_something_in_it() -> None:
    text = drawn(160)
    assert "topic" in text and "hidden" not in text and "superseded by" not in text
    assert "Fix the flaky orders test that fails one run in five" in text, "one line: room enough"


def test_wide_draws_past_the_terminals_edge_rather_than_leave_a_column_out() -> None:
    text = drawn(60, wide=True)
    assert "topic" in text and "hidden" not in text
    assert max(len(line) for line in text.splitlines()) > 60


def test_the_narrowest_terminal_keeps_ids_and_dates_whole() -> None:
    text = drawn(50)
    assert "│ 1041 │" in text and len(_dates(text)) == 2
    assert "project, topic" in " ".join(text.split())


def _dates(text: str) -> list[str]:
    return re.findall(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", text)
