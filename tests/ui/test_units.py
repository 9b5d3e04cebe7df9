"""The viewer's human units (`cairn.ui.units`): counts, sizes, flags, rates, durations and relative times
as a person reads them, and nothing a template could be tricked into rendering as markup."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.ui import units
from cairn.ui.viewer import _environment

NOW = datetime(2026, 3, 10, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0, "0"), (7, "7"), (1234, "1,234"), (4448456, "4,448,456"), (2.5, "2.5"), (1 / 3, "0.33"), (None, "—")],
)
def test_number_separates_thousands(value: object, shown: str) -> None:
    assert units.number(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0"),
        (999, "999"),
        (1000, "1K"),
        (1234, "1.2K"),
        (12_345, "12.3K"),
        (123_456, "123K"),
        (999_999, "1M"),
        (4_500_000, "4.5M"),
        (2_000_000_000, "2B"),
        (-1500, "-1.5K"),
        (None, "—"),
        ("n/a", "n/a"),
    ],
)
def test_compact_shortens_large_counts(value: object, shown: str) -> None:
    assert units.compact(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1,023 bytes"),
        (1024, "1.0 KB"),
        (4448456, "4.2 MB"),
        (150 * 1024 * 1024, "150 MB"),
        (3 * 1024**3, "3.0 GB"),
        (None, "—"),
    ],
)
def test_size_in_the_largest_fitting_unit(value: object, shown: str) -> None:
    assert units.size(value) == shown


def test_flags_rates_and_missing_values() -> None:
    assert (units.yesno(True), units.yesno(False), units.yesno(None)) == ("yes", "no", "—")
    assert units.percent(0.375) == "37.5%"
    assert units.percent(1) == "100%"
    assert units.percent(0) == "0%"
    assert units.percent(None) == "—"
    assert units.dash(None) == units.dash("") == "—"
    assert units.dash(0) == 0


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.04, "0 s"),
        (1.44, "1.4 s"),
        (45, "45 s"),
        (60, "1 min"),
        (125, "2 min 5 s"),
        (3700, "1 h 1 min"),
        (7200, "2 h"),
        (2 * 86400 + 4 * 3600 + 59, "2 d 4 h"),
        (None, "—"),
    ],
)
def test_duration_in_two_units(seconds: float | None, shown: str) -> None:
    assert units.duration(seconds) == shown


@pytest.mark.parametrize(
    ("stamp", "shown"),
    [
        ("2026-03-10T11:59:58.000Z", "just now"),
        ("2026-03-10T11:59:20Z", "40 s ago"),
        ("2026-03-10T09:00:00.000Z", "3 h ago"),
        ("2026-03-10T12:05:00+00:00", "in 5 min"),
        ("2026-02-28T12:00:00", "10 d ago"),  # naive: taken as UTC, as the store writes
        ("2025-01-02T03:04:05.000Z", "2025-01-02"),  # past 60 days, the date reads better
        (None, "—"),
        ("not a time", "not a time"),
    ],
)
def test_relative_time(stamp: str | None, shown: str) -> None:
    assert units.relative(stamp, NOW) == shown


def test_ago_carries_the_exact_time_and_escapes_what_it_cannot_read() -> None:
    html = str(units.ago("2026-03-10T09:00:00.000Z", NOW))
    assert html == '<time datetime="2026-03-10T09:00:00Z" title="2026-03-10 09:00:00 UTC">3 h ago</time>'
    assert str(units.ago("<script>alert(1)</script>", NOW)) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert str(units.ago(None)) == "—"


def test_the_templates_have_the_filters() -> None:
    env = _environment()
    rendered = env.from_string(
        "{{ 4448456|size }} | {{ 12345|compact }} | {{ 12345|number }} | {{ true|yesno }} | "
        "{{ none|dash }} | {{ 0.5|percent }} | {{ 90|duration }} | {{ '<b>'|ago }}"
    ).render()
    assert rendered == "4.2 MB | 12.3K | 12,345 | yes | — | 50% | 1 min 30 s | &lt;b&gt;"
