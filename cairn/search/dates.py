"""Dates a query names ("on 7 July, 2023", "in December 2023", "2023-06-03"), as time windows search weighs.

A question about what was said on a day names that day, and its words are no help to a keyword
match: "7", "july" and "2023" are not in the answer ("I'm off to have dinner with friends from the
gym", said that evening), and as key terms they dilute the share of the words that are. So a date
phrase leaves the keyword query (`without_dates`) and becomes a window instead: items said within it
gain `search_date_weight` of relevance (`cairn.search.hybrid`), and when the window is narrow enough
its items are candidates even if neither ranking drew them (`in_window`), scored by their meaning.

Only complete dates count: a day with its month and year, or a month with its year. A bare month or
year ("in June", "2023") is too wide, and "may" alone is a verb. A window reaches half a day past its
calendar bounds, since times are stored in UTC and the asker's day is local.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from cairn.dates import iso_utc, parse_stored
from cairn.search.filters import TABLES, Filters
from cairn.search.models import Kind
from cairn.store.db import Database

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
MARGIN = timedelta(hours=12)

_MONTH = "(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
]


@dataclass(frozen=True)
class Window:
    """A time window a query names: [start, end) in UTC, margins included."""

    start: datetime
    end: datetime

    def holds(self, iso: str | None) -> bool:
        when = parse_stored(iso)
        return when is not None and self.start <= when < self.end


@dataclass(frozen=True)
class QueryDates:
    """The windows a query names and its text with those date phrases taken out."""

    windows: tuple[Window, ...]
    rest: str

    def holds(self, iso: str | None) -> bool:
        return any(window.holds(iso) for window in self.windows)


def dates_in(text: str) -> QueryDates:
    """Every complete date `text` names, and the rest of it. The patterns go most precise first and
    each claims its stretch of text, so "30 February, 2023" (no such day) is not read as a month."""
    claimed: list[tuple[int, int]] = []
    windows: list[Window] = []
    cut: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for found in pattern.finditer(text):
            start, end = found.span()
            if any(start < b and a < end for a, b in claimed):
                continue
            claimed.append((start, end))
            window = _window(found)
            if window is not None:
                windows.append(window)
                cut.append((start, end))
    rest = text
    for start, end in sorted(cut, reverse=True):
        rest = rest[:start] + " " + rest[end:]
    return QueryDates(tuple(windows), " ".join(rest.split()) if cut else text)


def _window(found: re.Match[str]) -> Window | None:
    month_text = found.group("month").lower()
    month = int(month_text) if month_text.isdigit() else MONTHS[month_text]
    year = int(found.group("year"))
    day_text = found.groupdict().get("day")
    try:
        if day_text is None:
            start = datetime(year, month, 1, tzinfo=UTC)
            end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        else:
            start = datetime(year, month, int(day_text), tzinfo=UTC)
            end = start + timedelta(days=1)
    except ValueError:  # "31 February, 2023", month 13: not a date
        return None
    return Window(start - MARGIN, end + MARGIN)


async def in_window(db: Database, kind: Kind, dates: QueryDates, filters: Filters, cap: int) -> list[int]:
    """The rows of `kind` said within the query's windows under `filters`, when they are at most `cap`;
    none when more: a window that wide (a busy month) says nothing about which of its rows to show."""
    spec = TABLES[kind]
    found: list[int] = []
    for window in dates.windows:
        since, until = iso_utc(window.start), iso_utc(window.end)
        narrowed = replace(
            filters,
            since=max(since, filters.since) if filters.since else since,
            until=min(until, filters.until) if filters.until else until,
        )
        where, params = narrowed.sql(kind)
        rows = await db.fetchall(
            f"SELECT t.id FROM {spec.table} AS t WHERE {where} LIMIT ?", (*params, cap + 1)
        )
        if len(rows) <= cap:
            found.extend(int(row["id"]) for row in rows)
    return list(dict.fromkeys(found))
