"""The daemon's indexing pause, kept in `$CAIRN_HOME/indexing-pause.json` for whoever wants to read it.

When the model cannot be used — logged out, rate limited, unreachable — or the daily token budget is
spent, every indexing run would fail or overspend alike, so the daemon stops running them for a while
instead of failing each queued file until it is parked (`cairn.daemon.loop`). Capture goes on. The
pause says why in one line, since when, until when and for which model; it is lifted by the first
run that succeeds.

Why a file and not a table: the pause is the daemon's state, not memory. `cairn status`, `cairn
stats` and the viewer read it with the daemon stopped and without the store lock, as they read the
recall hook's drop counts (`recall-drops.json`); a file needs no schema step, and a read-only home
can still be read. It is rewritten whole through a temporary file and `os.replace`, so a reader never
sees half of it, and it only ever has one writer: the daemon that owns the store.

A pause can go stale when the daemon stops while paused: the reader
(`cairn.daemon.status.read_pause_state`) decides from what the store says since — an applied run
after the pause's last failure, or a new day for a budget pause.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

PAUSE_FILE = "indexing-pause.json"
BUDGET = "budget"
MODEL = "model"
MAX_BACKOFF = timedelta(minutes=30)


@dataclass
class Pause:
    """Why indexing waits and until when; times are aware datetimes."""

    kind: str  # BUDGET: the daily token budget is spent; MODEL: the model cannot be used
    reason: str  # the one line a person reads
    model: str
    since: datetime  # the first failure of this pause
    until: datetime  # when the daemon tries again (a rate limit's reset, the budget's, a backoff)
    last_failure: datetime  # the latest failure: an applied run after it means the pause is over
    failures: int = 1  # model failures in a row: the backoff doubles with each

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("since", "until", "last_failure"):
            data[key] = getattr(self, key).isoformat()
        return data

    @classmethod
    def from_json(cls, data: Any) -> Pause | None:
        """The pause `data` describes, or None for anything this module did not write."""
        if not isinstance(data, dict):
            return None
        try:
            times = {
                key: datetime.fromisoformat(str(data[key])) for key in ("since", "until", "last_failure")
            }
            if any(t.tzinfo is None for t in times.values()):
                return None
            return cls(
                kind=str(data["kind"]),
                reason=str(data["reason"]),
                model=str(data["model"]),
                failures=int(data.get("failures", 1)),
                **times,
            )
        except (KeyError, TypeError, ValueError):
            return None


def pause_path(home: Path) -> Path:
    return home / PAUSE_FILE


def read_pause(home: Path) -> Pause | None:
    """The pause recorded in `home`, or None (none recorded, or not readable as one)."""
    try:
        data = json.loads(pause_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return Pause.from_json(data)


def write_pause(home: Path, pause: Pause) -> None:
    """Record `pause` atomically (temporary file + `os.replace`)."""
    fd, tmp = tempfile.mkstemp(prefix=".indexing-pause.", dir=home)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(pause.to_json(), fh)
        os.replace(tmp, pause_path(home))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def clear_pause(home: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        pause_path(home).unlink()


def backoff(first_seconds: float, failures: int) -> timedelta:
    """The wait after the `failures`-th model failure in a row: `first_seconds`, doubled per failure,
    at most 30 minutes."""
    seconds = first_seconds * 2 ** max(0, failures - 1)
    return min(MAX_BACKOFF, timedelta(seconds=seconds))


def when(moment: datetime, now: datetime) -> str:
    """A resume time as a person reads it: `14:05 local` within a day, `2026-11-30 14:05 local` later,
    `with the next run` once it has passed (the daemon tries again at its next queued item)."""
    if moment <= now:
        return "with the next run"
    local = moment.astimezone()
    return f"{local:%H:%M} local" if moment - now < timedelta(days=1) else f"{local:%Y-%m-%d %H:%M} local"


def pause_line(pause: Pause, now: datetime) -> str:
    """`indexing paused: <why>; resumes <when>`: the line `cairn status` and the viewer show.

    A budget pause's reason (`cairn.agent.budget.spent_line`) already says it resumes after midnight,
    so the time is not said a second time."""
    if pause.kind == BUDGET:
        return f"indexing paused: {pause.reason}"
    return f"indexing paused: {pause.reason}; resumes {when(pause.until, now)}"
