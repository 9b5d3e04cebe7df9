"""Every setting has its row in the reference: `docs/configuration.md`, or for the ranking weights
(`search_*`) the settings table of `docs/search.md` it points to; and no row there names a setting
that no longer exists. A setting added without its row, or renamed in one place only, fails here."""

from __future__ import annotations

import re
from pathlib import Path

from cairn.config import Settings

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _section(text: str, start: str, end: str | None) -> str:
    """The part of `text` from heading `start` to heading `end` (or the end)."""
    begin = text.index(start)
    return text[begin : text.index(end, begin) if end else len(text)]


def _row_names(text: str) -> set[str]:
    """The lower-case names in backticks in the first cell of each table row (a row may also name the
    environment variable that sets it, `CAIRN_HOME`)."""
    cells = re.findall(r"^\| ([^|]+)\|", text, re.M)
    return {name for cell in cells for name in re.findall(r"`([a-z]\w*)`", cell)}


def test_every_setting_has_a_row_and_every_row_a_setting() -> None:
    configuration = (DOCS / "configuration.md").read_text()
    rows = _section(configuration, "## Store, capture", "## Environment variables that are not settings")
    settings_rows = _row_names(rows)
    search_rows = _row_names(_section((DOCS / "search.md").read_text(), "## Settings", "## Quality"))
    fields = set(Settings.model_fields)

    undocumented = sorted(fields - settings_rows - search_rows)
    assert not undocumented, f"settings without a row in configuration.md or search.md: {undocumented}"
    assert not sorted(settings_rows - fields), "rows in docs/configuration.md name settings that do not exist"
    # search.md's rows may name a setting together with what it is measured against (`top`): only its
    # `search_*` names must exist.
    assert not sorted(n for n in search_rows if n.startswith("search_") and n not in fields)
    assert {n for n in fields if n.startswith("search_")} <= search_rows | settings_rows
