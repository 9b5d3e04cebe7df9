"""Progress of a long job as plain, JSON-able events, and how long each of its phases took.

A job (`cairn.daemon.jobs`) runs in the daemon or in the command's own process; either way its
progress reaches the command as the same dicts (the daemon streams them over its socket), and the
command draws them (`cairn.cli.progress`). So the events carry everything a display needs — counts,
totals, units — and nothing that only one process could read, such as times: each side measures the
rate and ETA with its own clock from when the events arrive.

The events, all with `"phase"` (capture, embed, index, ...):
    {"step": "phase", "total": 12, "unit": "files"}       a phase starts (total may be None)
    {"step": "advance", "advance": 1, "counts": {...}}     units done, and side counts added
    {"step": "update", "completed": 300, "total": 1200}    absolute position (totals may grow)
    {"step": "end"}                                        the phase is over
and `{"step": "session", ...}` for a backfilled session, which a plain display lists one a line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Emit = Callable[[dict[str, Any]], None]


def no_emit(_event: dict[str, Any]) -> None:
    return None


class Phases:
    """Emits a job's phase events and keeps each phase's wall seconds for the job's report."""

    def __init__(self, emit: Emit = no_emit) -> None:
        self._emit = emit
        self._started: dict[str, float] = {}
        self.seconds: dict[str, float] = {}

    def start(self, phase: str, total: int | None, unit: str) -> None:
        self._started[phase] = time.perf_counter()
        self._emit({"step": "phase", "phase": phase, "total": total, "unit": unit})

    def advance(self, phase: str, n: int = 1, **counts: int) -> None:
        self._emit({"step": "advance", "phase": phase, "advance": n, "counts": counts})

    def update(self, phase: str, completed: int, total: int | None) -> None:
        self._emit({"step": "update", "phase": phase, "completed": completed, "total": total})

    def end(self, phase: str) -> None:
        """Close `phase`; its seconds add up if it runs more than once (e.g. embedding after each step)."""
        started = self._started.pop(phase, None)
        if started is not None:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - started
        self._emit({"step": "end", "phase": phase})

    def session(self, info: dict[str, Any]) -> None:
        self._emit({"step": "session", **info})

    def rounded(self) -> dict[str, float]:
        """`{"capture_seconds": 1.234, ...}` for the job's JSON."""
        return {f"{phase}_seconds": round(secs, 3) for phase, secs in self.seconds.items()}
