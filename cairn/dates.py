"""The one parser for every date cairn takes from a person or an agent (CLI `--since`, MCP `since`, ...).

A user types `3d` in one place and `2025-01-31` in another; an agent copies whatever it saw. Every face
accepts the same forms and says the same thing about a bad one, so what works in `cairn search` works
in `cairn backfill`, `cairn reindex` and the MCP `search` tool alike.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from cairn.errors import Refusal

#: The forms `parse_when` accepts, for error messages and help texts.
ACCEPTED = "2025-01-31, 2025-01-31T14:00, today, yesterday, now, or an age such as 3d, 12h, 2w"

# Ages; no `m`, which could be read as minutes or as months.
_AGE = re.compile(r"^(\d{1,5})\s*([hdw])$", re.I)
_UNITS = {
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}


class DateError(Refusal):
    """A value that is none of the accepted forms; its message names what was given and what works."""


def parse_when(value: str, what: str = "date", *, now: datetime | None = None) -> datetime:
    """An aware datetime for `value`: an ISO date or date-time, `today`, `yesterday`, `now`, or an age.

    A date or time without a zone is the user's local time, as they read it on their clock; an age
    (`3d`, `12h`, `2w`) counts back from `now`. `what` names the option or argument in the
    error (`--since`, `since`), so the one line says which value to fix.
    """
    current = (now or datetime.now()).astimezone()
    text = value.strip().lower()
    midnight = current.replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "now":
        return current
    if text == "today":
        return midnight
    if text == "yesterday":
        return midnight - timedelta(days=1)
    age = _AGE.match(text)
    if age:
        return current - int(age[1]) * _UNITS[age[2].lower()]
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day)
        else:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise DateError(f"{what} {value!r} is not a date: use {ACCEPTED}") from None
    try:
        aware = moment if moment.tzinfo else moment.astimezone()
        # Stored times are UTC, and a day either side is added in places: a moment whose neighbourhood
        # falls outside years 1-9999 (0001-01-01, 9999-12-31T23:59-12:00) is refused here, in one line.
        (aware - timedelta(days=2)).astimezone(UTC)
        (aware + timedelta(days=2)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise DateError(f"{what} {value!r} is too far in the past or future: use {ACCEPTED}") from None
    return aware


def parse_when_iso(value: str | None, what: str = "date") -> str | None:
    """`parse_when` as an ISO string, passing None through: the form ops and the daemon's JSON carry."""
    return None if value is None else parse_when(value, what).isoformat()


def iso_utc(value: datetime) -> str:
    """The store's time format: UTC, milliseconds, `Z` — the same text SQLite's defaults write."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_stored(value: str | None) -> datetime | None:
    """An aware datetime for a timestamp cairn stored (a transcript's ISO time, SQLite's `...Z`), or
    None when there is none or it is unreadable: ranking and filters treat such a row as undated
    rather than failing a search on one odd value. A time without a zone is UTC, as stored."""
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def empty_range(
    since: str | None,
    until: str | None = None,
    *,
    names: tuple[str, str] = ("--since", "--until"),
    now: datetime | None = None,
) -> str | None:
    """Why nothing can have been said between `since` and `until` (values as given, `parse_when`'s
    forms), or None when something could: `since` at or after `until`, or `since` in the future.

    A search over such a range finds nothing whatever the memory holds; saying so beats a bare "No
    matches", which sends the user to try other words. `names` are the options as the face calls them.
    """
    current = (now or datetime.now()).astimezone()
    start = parse_when(since, names[0], now=current) if since else None
    end = parse_when(until, names[1], now=current) if until else None
    if start is None:
        return None
    said = f"{names[0]} {_as_given(since or '', start)}"
    if end is not None and start > end:
        return f"the date range is empty: {said} is after {names[1]} {_as_given(until or '', end)}"
    if end is not None and start == end:
        return f"the date range is empty: {said} is the same moment as {names[1]} (which is exclusive)"
    if start > current:
        return f"the date range is empty: {said} is in the future"
    return None


def _as_given(value: str, moment: datetime) -> str:
    """`value` as the user typed it, with the local date-time it stands for when it was relative."""
    text = value.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return text
    return f"{text} ({moment.strftime('%Y-%m-%d %H:%M')})"


def shown_date(value: str | None, with_time: bool = True) -> str:
    """A stored timestamp as a person reads it: local `YYYY-MM-DD HH:MM` (or the date alone), the one
    short form every listing uses, so a column of dates lines up and is never an ISO string cut in three.
    An empty value is an empty cell; one that is no timestamp passes through as it is."""
    if not value:
        return ""
    moment = parse_stored(str(value))
    if moment is None:
        return str(value)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")
