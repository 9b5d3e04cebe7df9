"""cairn's one date parser: the forms every face accepts, and the one line a bad value gets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cairn.dates import DateError, empty_range, parse_stored, parse_when, shown_date

NOW = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3d", NOW - timedelta(days=3)),
        ("12h", NOW - timedelta(hours=12)),
        ("2w", NOW - timedelta(weeks=2)),
        (" 2W ", NOW - timedelta(weeks=2)),
        ("now", NOW),
        ("2025-01-31T14:00:00+02:00", datetime(2025, 1, 31, 12, 0, tzinfo=UTC)),
        ("2025-01-31T14:00:00Z", datetime(2025, 1, 31, 14, 0, tzinfo=UTC)),
    ],
)
def test_ages_and_zoned_times_are_exact(value: str, expected: datetime) -> None:
    assert parse_when(value, now=NOW) == expected


def test_dates_without_a_zone_are_local_time() -> None:
    assert parse_when("2025-01-31") == datetime(2025, 1, 31).astimezone()
    assert parse_when("2025-01-31T14:00") == datetime(2025, 1, 31, 14, 0).astimezone()
    local_now = NOW.astimezone()
    midnight = local_now.replace(hour=0, minute=0, second=0, microsecond=0)
    assert parse_when("today", now=NOW) == midnight
    assert parse_when("Yesterday", now=NOW) == midnight - timedelta(days=1)


@pytest.mark.parametrize("value", ["last tuesday", "3m", "2025-13-01", "", "d3"])
def test_a_bad_value_names_itself_and_the_accepted_forms(value: str) -> None:
    with pytest.raises(DateError) as caught:
        parse_when(value, "--since")
    message = str(caught.value)
    assert message.startswith(f"--since {value!r} is not a date") and "3d" in message
    assert "\n" not in message


def test_stored_timestamps_read_as_utc_and_odd_values_as_undated() -> None:
    """What ranking (recency), date windows and learned associations read back from the store."""
    assert parse_stored("2025-03-01T10:00:00Z") == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert parse_stored("2025-03-01T10:00:00.123+02:00") == datetime(2025, 3, 1, 8, 0, 0, 123000, tzinfo=UTC)
    assert parse_stored("2025-03-01 10:00:00") == datetime(2025, 3, 1, 10, tzinfo=UTC)
    for odd in (None, "", "yesterday", "2025-13-01T00:00:00Z"):
        assert parse_stored(odd) is None


@pytest.mark.parametrize(
    "value", ["0001-01-01", "9999-12-31", "9999-12-31T23:59:59-12:00", "0001-01-01T00:00+14:00"]
)
def test_a_date_at_the_edge_of_the_calendar_is_one_line_not_a_traceback(value: str) -> None:
    """Issue 30: `--since 0001-01-01` raised `ValueError: year 0 is out of range` and
    `9999-12-31T23:59:59-12:00` an `OverflowError` once compared with stored UTC times."""
    with pytest.raises(DateError, match="too far in the past or future"):
        parse_when(value, "--since")
    assert parse_when("0002-01-05", "--since").year == 2


@pytest.mark.parametrize(
    ("since", "until", "said"),
    [
        ("2026-03-01", "2026-02-01", "--since 2026-03-01 is after --until 2026-02-01"),
        ("3d", "1w", "--since 3d ("),
        ("2026-03-01", "2026-03-01", "is the same moment as --until (which is exclusive)"),
        ("2026-03-12", None, "--since 2026-03-12 is in the future"),
        ("2027-01-01", "2028-01-01", "--since 2027-01-01 is in the future"),
    ],
)
def test_an_empty_range_says_why(since: str, until: str | None, said: str) -> None:
    reason = empty_range(since, until, now=NOW)
    assert reason is not None and reason.startswith("the date range is empty: ") and said in reason


@pytest.mark.parametrize(
    ("since", "until"), [(None, "2026-01-01"), ("2026-01-01", None), ("1w", "3d"), ("today", "now")]
)
def test_a_range_that_can_hold_something_is_not_empty(since: str | None, until: str | None) -> None:
    assert empty_range(since, until, now=NOW) is None


def test_a_stored_time_is_shown_in_the_one_short_local_form() -> None:
    stored = "2026-11-20T09:15:16.000Z"
    local = datetime(2026, 11, 20, 9, 15, 16, tzinfo=UTC).astimezone()
    assert shown_date(stored) == local.strftime("%Y-%m-%d %H:%M")
    assert shown_date(stored, with_time=False) == local.strftime("%Y-%m-%d")
    assert shown_date("2026-11-20 09:15:16") == shown_date(stored), "SQLite's form, a UTC time"
    assert shown_date(None) == "" and shown_date("") == ""
    assert shown_date("soon") == "soon", "no timestamp: shown as it is"
