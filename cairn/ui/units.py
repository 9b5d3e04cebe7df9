"""Figures in human units for the viewer's pages: `12,345` or `12.3K`, `4.2 MB`, `yes`, `—`, `37.5%`,
`2 h 5 min`, `3 h ago` (with the exact time in a tooltip).

The pages show what `cairn stats` and `cairn status` report as JSON; a person reads "4.2 MB" and
"3 h ago", not `db_size_bytes 4448456` and `2026-11-28T03:27:11.581Z`. Each function takes what the ops
answer (ints, floats, ISO-8601 UTC text, None) and never raises: a value it cannot read is shown as it
came, and a missing one as a dash. They are registered as Jinja filters by `cairn.ui.viewer`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

NONE = "—"
_COMPACT = ((1_000_000_000_000, "T"), (1_000_000_000, "B"), (1_000_000, "M"), (1_000, "K"))
_SIZES = ("bytes", "KB", "MB", "GB", "TB")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def number(value: Any) -> str:
    """A count with thousands separators (`12,345`); a fraction with at most two decimals."""
    n = _number(value)
    if n is None:
        return NONE if value is None else str(value)
    if n.is_integer():
        return f"{int(n):,}"
    return f"{n:,.2f}".rstrip("0").rstrip(".")


def compact(value: Any) -> str:
    """A count where space is tight: as is below 1,000, else `12.3K`, `4.5M`, `1.2B` (one decimal below
    100 of the unit, none above: `123K`)."""
    n = _number(value)
    if n is None:
        return NONE if value is None else str(value)
    size = abs(n)
    for step, suffix in _COMPACT:
        if size >= step * 0.9995:  # 999,950 reads as 1.0M, not 1000.0K
            scaled = n / step
            text = f"{scaled:.1f}" if abs(scaled) < 99.95 else f"{scaled:.0f}"
            return text.removesuffix(".0") + suffix
    return number(n)


def size(value: Any) -> str:
    """Bytes in the largest unit that keeps the figure at 1 or more: `512 bytes`, `4.2 MB` (units of 1024)."""
    n = _number(value)
    if n is None:
        return NONE if value is None else str(value)
    unit = 0
    while abs(n) >= 1024 and unit < len(_SIZES) - 1:
        n /= 1024
        unit += 1
    if unit == 0:
        return f"{int(n):,} byte" if int(n) == 1 else f"{int(n):,} bytes"
    return f"{n:.1f} {_SIZES[unit]}" if abs(n) < 100 else f"{n:.0f} {_SIZES[unit]}"


def yesno(value: Any) -> str:
    """`yes` or `no` for a flag; a dash when unknown."""
    if value is None:
        return NONE
    return "yes" if value else "no"


def dash(value: Any) -> Any:
    """A missing value as a dash; anything else unchanged."""
    return NONE if value is None or value == "" else value


def percent(value: Any) -> str:
    """A rate of 0..1 as a percentage: `0.375` → `37.5%`, `1` → `100%`."""
    n = _number(value)
    if n is None:
        return NONE if value is None else str(value)
    text = f"{n * 100:.1f}".removesuffix(".0")
    return f"{text}%"


def duration(value: Any) -> str:
    """Seconds as the two largest units that matter: `45 s`, `2 min 5 s`, `3 h 12 min`, `2 d 4 h`;
    under ten seconds with a tenth (`1.4 s`)."""
    n = _number(value)
    if n is None:
        return NONE if value is None else str(value)
    if n < 10:
        return f"{n:.1f} s".replace(".0 s", " s")
    seconds = round(n)
    parts = []
    for step, unit in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")):
        if parts or seconds >= step:
            count, seconds = divmod(seconds, step)
            parts.append((count, unit))
    shown = parts[:2]
    if len(shown) == 2 and shown[1][0] == 0:
        shown = shown[:1]
    return " ".join(f"{count} {unit}" for count, unit in shown)


def parse_time(value: Any) -> datetime | None:
    """A stored timestamp (`...Z`, `+00:00`, or naive, taken as UTC) as an aware datetime; None otherwise."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def exact(value: Any) -> str:
    """`2025-09-03 10:00:05 UTC`: what the tooltip of a relative time says."""
    moment = parse_time(value)
    if moment is None:
        return NONE if value is None else str(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def relative(value: Any, now: datetime | None = None) -> str:
    """How long ago (or how soon) `value` is: `just now`, `40 s ago`, `3 h ago`, `in 5 min`, `12 d ago`;
    past 60 days the date itself (`2025-03-01`), which reads better than `412 d ago`."""
    moment = parse_time(value)
    if moment is None:
        return NONE if value is None else str(value)
    now = now or datetime.now(UTC)
    seconds = (now - moment).total_seconds()
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 5:
        return "just now"
    if seconds >= 60 * 86400:
        return moment.astimezone(UTC).date().isoformat()
    for step, unit in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")):
        if seconds >= step:
            text = f"{int(seconds // step)} {unit}"
            break
    return f"in {text}" if ahead else f"{text} ago"


def ago(value: Any, now: datetime | None = None) -> Markup:
    """A `<time>` element saying `relative(value)`, with the exact UTC time as its tooltip; a dash when
    there is no time. Both texts are escaped: a timestamp is store data like any other."""
    moment = parse_time(value)
    if moment is None:
        return Markup(escape(NONE if value is None else str(value)))
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        moment.astimezone(UTC).isoformat().replace("+00:00", "Z"), exact(moment), relative(moment, now)
    )


FILTERS = {
    "number": number,
    "compact": compact,
    "size": size,
    "yesno": yesno,
    "dash": dash,
    "percent": percent,
    "duration": duration,
    "exact": exact,
    "relative": relative,
    "ago": ago,
}
