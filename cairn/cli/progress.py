"""One progress display for a whole job — capture, embedding, indexing — drawn from its events.

A job's phases (`cairn.progress`) arrive as events, from the daemon's socket or from the job running
in this process. On a terminal they become one rich display, a line per phase with its bar, counts,
rate, elapsed time and ETA, kept on screen when the job ends so the user sees what each phase took.
Anywhere else (a pipe, a log, CI) rich would draw nothing, so the same figures go out as plain lines:
one when a phase starts, one every `interval` seconds while it runs, one when it ends, and one per
backfilled session. Both go to stderr, so stdout carries only the command's result (its `--json`
stays parseable).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cairn.cli.safe import plain_text

#: Phase name → (label, the side count whose rate is worth showing besides the unit's own).
PHASES: dict[str, tuple[str, str | None]] = {
    "capture": ("capture", "messages"),
    "embed": ("embedding", None),
    "index": ("indexing", None),
}

#: Seconds between two plain lines of one phase (its start and end lines are always written).
DEFAULT_INTERVAL = 10.0


def duration(seconds: float) -> str:
    """`4.2s`, `3m05s`, `1h02m`: short enough for a progress line."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _rate(value: float, unit: str) -> str:
    return f"{value:,.0f} {unit}/s" if value >= 10 else f"{value:.1f} {unit}/s"


@dataclass
class PhaseState:
    """What the display knows of one phase, timed by this process's clock as its events arrive."""

    name: str
    unit: str
    total: int | None
    started: float
    completed: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    sessions: tuple[int, int] | None = None  # (done, of), for a backfill's indexing
    ended: float | None = None
    last_line: float = 0.0

    @property
    def label(self) -> str:
        return PHASES.get(self.name, (self.name, None))[0]

    def elapsed(self, now: float) -> float:
        return (self.ended if self.ended is not None else now) - self.started

    def figures(self) -> str:
        """`5/12 files, 1,234 messages`: the counts so far."""
        done = f"{self.completed:,}/{self.total:,}" if self.total is not None else f"{self.completed:,}"
        parts = [f"{done} {self.unit}"]
        if self.sessions is not None:
            parts.append(f"{self.sessions[0]}/{self.sessions[1]} sessions")
        parts += [f"{n:,} {name}" for name, n in self.counts.items()]
        return ", ".join(parts)

    def rates(self, now: float) -> str:
        """Average rates since the phase started: of its unit, and of its telling side count."""
        secs = self.elapsed(now)
        if secs <= 0 or not self.completed:
            return ""
        rates = [_rate(self.completed / secs, self.unit)]
        side = PHASES.get(self.name, (self.name, None))[1]
        if side and side in self.counts:
            rates.append(_rate(self.counts[side] / secs, side))
        return ", ".join(rates)

    def eta(self, now: float) -> float | None:
        """Seconds left at the average rate so far; None without a total or a rate yet."""
        secs = self.elapsed(now)
        if self.total is None or not self.completed or secs <= 0:
            return None
        return max(0.0, (self.total - self.completed) * secs / self.completed)


class JobProgress:
    """Call it with each event of a job (`on_progress`); use it as a context manager around the job.

    `live` (default: whether `console` is a terminal) picks the rich display over plain lines;
    `clock` times the phases (tests pass their own).
    """

    def __init__(
        self,
        console: Console,
        *,
        live: bool | None = None,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.clock = clock
        self.live = console.is_terminal if live is None else live
        self.interval = interval
        self.phases: dict[str, PhaseState] = {}
        self._tasks: dict[str, TaskID] = {}
        self._progress = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            TextColumn("{task.fields[figures]}"),
            TextColumn("{task.fields[rates]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            disable=not self.live,
        )

    def __enter__(self) -> JobProgress:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        """Take one event; events of unknown kinds (say, from an older daemon) are ignored."""
        step, now = event.get("step"), self.clock()
        if step == "session":
            self._session(event)
            return
        name = event.get("phase")
        if not isinstance(name, str):
            return
        if step == "phase":
            self._start(name, event.get("total"), str(event.get("unit") or "items"), now)
            return
        phase = self.phases.get(name)
        if phase is None:
            return
        if step == "advance":
            phase.completed += int(event.get("advance", 0))
            for key, n in (event.get("counts") or {}).items():
                phase.counts[key] = phase.counts.get(key, 0) + int(n)
        elif step == "update":
            phase.completed = int(event.get("completed", phase.completed))
            if event.get("total") is not None:
                phase.total = int(event["total"])
        elif step == "end":
            phase.ended = now
            self._show(phase, now)
            rates = phase.rates(now)
            self._line(
                f"{phase.label}: done, {phase.figures()} in {duration(phase.elapsed(now))}"
                + (f" ({rates})" if rates else ""),
                phase,
            )
            return
        self._show(phase, now)
        if now - phase.last_line >= self.interval:
            self._status_line(phase, now)

    def _start(self, name: str, total: Any, unit: str, now: float) -> None:
        phase = self.phases[name] = PhaseState(
            name, unit, None if total is None else int(total), started=now, last_line=now
        )
        if self.live:
            self._tasks[name] = self._progress.add_task(
                phase.label, total=phase.total, figures=phase.figures(), rates=""
            )
        else:
            what = f" ({phase.total:,} {unit})" if phase.total is not None else ""
            self._line(f"{phase.label}: started{what}", phase)

    def _show(self, phase: PhaseState, now: float) -> None:
        task = self._tasks.get(phase.name)
        if task is None:
            return
        self._progress.update(
            task,
            completed=phase.completed,
            total=phase.total,
            figures=phase.figures(),
            rates=phase.rates(now),
        )
        if phase.ended is not None:
            self._progress.stop_task(task)

    def _status_line(self, phase: PhaseState, now: float) -> None:
        line = f"{phase.label}: {phase.figures()}"
        if rates := phase.rates(now):
            line += f"; {rates}"
        line += f"; {duration(phase.elapsed(now))} elapsed"
        if left := phase.eta(now):
            line += f", about {duration(left)} left"
        self._line(line, phase)

    def _line(self, text: str, phase: PhaseState | None = None) -> None:
        if phase is not None:
            phase.last_line = self.clock()
        if not self.live:
            self.console.print(plain_text(text), soft_wrap=True, highlight=False)

    def _session(self, event: dict[str, Any]) -> None:
        """A backfilled session: counted on the indexing line, and listed as a plain line of its own."""
        index = self.phases.get("index")
        done = (index.sessions[0] if index and index.sessions else 0) + 1
        of = int(event.get("of") or 0)
        if index is not None:
            index.sessions = (done, of)
            self._show(index, self.clock())
        tokens = int(event.get("input_tokens", 0)) + int(event.get("output_tokens", 0))
        failed = f", {event['failures']} failed run(s)" if event.get("failures") else ""
        self._line(
            f"[{done}/{of}] {event.get('session')} ({event.get('project')}): "
            f"{event.get('batches', 0)} batch(es), {event.get('messages', 0)} messages, "
            f"{event.get('ideas', 0)} ideas, {tokens} tokens, {float(event.get('elapsed', 0)):.1f}s "
            f"elapsed{failed}"
        )
