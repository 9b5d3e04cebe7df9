"""One progress display for a whole job — capture, embedding, indexing — drawn from its events.

A job's phases (`cairn.progress`) arrive as events, from the daemon's socket or from the job running
in this process. On a terminal they become one rich display, a line per phase with its bar, counts,
rate, elapsed time and ETA, kept on screen when the job ends so the user sees what each phase took.
The display fits the terminal it finds (`Layout`): on a narrow one it leaves out the rates and the side
counts and shortens the bar, so the phase, its elapsed time and its ETA are always shown whole.
Anywhere else (a pipe, a log, CI) rich would draw nothing, so the same figures go out as plain lines:
one when a phase starts, one every `interval` seconds while it runs, one when it ends, and one per
backfilled session. Both go to stderr, so stdout carries only the command's result (its `--json`
stays parseable).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from rich.console import Console, JustifyMethod, RenderableType
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.table import Column
from rich.text import Text

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


#: Columns the phase, elapsed time and ETA always keep: the longest label, `59m59s`, `eta 59m59s`.
LABEL_WIDTH = max(len(label) for label, _side in PHASES.values())
ELAPSED_WIDTH = 6
ETA_WIDTH = 10


@dataclass(frozen=True)
class Layout:
    """What the live display shows at a terminal width: a bar of `bar` cells (none when 0), the rates
    or not, all side counts or only the telling one. Phase, elapsed time and ETA are always shown."""

    bar: int
    rates: bool
    compact: bool

    @classmethod
    def for_width(cls, width: int) -> Layout:
        """Wide: everything. From 112 columns: a shorter bar, one rate, the telling counts. From 64
        (80 is the common terminal): no rates. Below: no bar either."""
        if width >= 150:
            return cls(bar=30, rates=True, compact=False)
        if width >= 112:
            return cls(bar=20, rates=True, compact=True)
        if width >= 64:
            return cls(bar=10, rates=False, compact=True)
        return cls(bar=0, rates=False, compact=True)


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

    @property
    def side(self) -> str | None:
        """The side count worth a rate of its own (a capture's messages), if any."""
        return PHASES.get(self.name, (self.name, None))[1]

    def figures(self, compact: bool = False) -> str:
        """`5/12 files, 1,234 messages`: the counts so far (`compact`: only the telling side count)."""
        done = f"{self.completed:,}/{self.total:,}" if self.total is not None else f"{self.completed:,}"
        parts = [f"{done} {self.unit}"]
        if self.sessions is not None:
            parts.append(f"{self.sessions[0]}/{self.sessions[1]} sessions")
        parts += [f"{n:,} {name}" for name, n in self.counts.items() if not compact or name == self.side]
        return ", ".join(parts)

    def rates(self, now: float, compact: bool = False) -> str:
        """Average rates since the phase started: of its unit, and (unless `compact`) of its telling
        side count."""
        secs = self.elapsed(now)
        if secs <= 0 or not self.completed:
            return ""
        rates = [_rate(self.completed / secs, self.unit)]
        if not compact and self.side and self.side in self.counts:
            rates.append(_rate(self.counts[self.side] / secs, self.side))
        return ", ".join(rates)

    def eta(self, now: float) -> float | None:
        """Seconds left at the average rate so far; None without a total or a rate yet."""
        secs = self.elapsed(now)
        if self.total is None or not self.completed or secs <= 0:
            return None
        return max(0.0, (self.total - self.completed) * secs / self.completed)

    def eta_text(self, now: float) -> str:
        """`eta 3m05s`, `eta ?` before there is a rate or a total, `done` once the phase ended."""
        if self.ended is not None:
            return "done"
        left = self.eta(now)
        return "eta ?" if left is None else f"eta {duration(left)}"


class _PhaseColumn(ProgressColumn):
    """A column drawn from the task's `PhaseState` at render time, by the display's clock, so elapsed
    time and ETA move while a long batch sends no event. `keep` columns are never wrapped or cut (the
    figures column, the one left wrappable, gives way first on a narrow terminal)."""

    def __init__(
        self,
        draw: Callable[[PhaseState, float], str],
        clock: Callable[[], float],
        *,
        width: int | None = None,
        keep: bool = False,
        justify: JustifyMethod = "left",
    ) -> None:
        column = Column(no_wrap=keep, min_width=width, justify=justify)
        super().__init__(table_column=column)
        self._draw = draw
        self._clock = clock

    def render(self, task: Task) -> RenderableType:
        phase = task.fields.get("phase")
        if not isinstance(phase, PhaseState):
            return Text("")
        return Text(self._draw(phase, self._clock()))


class JobProgress:
    """Call it with each event of a job (`on_progress`); use it as a context manager around the job.

    `live` (default: whether `console` is a terminal) picks the rich display over plain lines;
    `clock` times the phases (tests pass their own); the live display's columns follow the console's
    width (`Layout`).
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
        self.layout = Layout.for_width(console.width)
        self._progress = Progress(
            *self._columns(self.layout),
            console=console,
            disable=not self.live,
            get_time=clock,
        )

    def _columns(self, layout: Layout) -> list[ProgressColumn]:
        clock = self.clock
        columns: list[ProgressColumn] = [
            TextColumn("{task.description}", table_column=Column(no_wrap=True, min_width=LABEL_WIDTH))
        ]
        if layout.bar:
            columns.append(BarColumn(bar_width=layout.bar))
        columns.append(_PhaseColumn(lambda phase, _now: phase.figures(layout.compact), clock))
        if layout.rates:
            rates = _PhaseColumn(lambda phase, now: phase.rates(now, layout.compact), clock, keep=True)
            columns.append(rates)
        columns += [
            _PhaseColumn(
                lambda phase, now: duration(phase.elapsed(now)),
                clock,
                width=ELAPSED_WIDTH,
                keep=True,
                justify="right",
            ),
            _PhaseColumn(lambda phase, now: phase.eta_text(now), clock, width=ETA_WIDTH, keep=True),
        ]
        return columns

    def renderable(self) -> RenderableType:
        """What the live display draws now (for tests, which render it without a terminal)."""
        return self._progress.get_renderable()

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
            self._show(phase)
            rates = phase.rates(now)
            self._line(
                f"{phase.label}: done, {phase.figures()} in {duration(phase.elapsed(now))}"
                + (f" ({rates})" if rates else ""),
                phase,
            )
            return
        self._show(phase)
        if now - phase.last_line >= self.interval:
            self._status_line(phase, now)

    def _start(self, name: str, total: Any, unit: str, now: float) -> None:
        phase = self.phases[name] = PhaseState(
            name, unit, None if total is None else int(total), started=now, last_line=now
        )
        if self.live:
            self._tasks[name] = self._progress.add_task(phase.label, total=phase.total, phase=phase)
        else:
            what = f" ({phase.total:,} {unit})" if phase.total is not None else ""
            self._line(f"{phase.label}: started{what}", phase)

    def _show(self, phase: PhaseState) -> None:
        task = self._tasks.get(phase.name)
        if task is None:
            return
        self._progress.update(task, completed=phase.completed, total=phase.total)
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
            self._show(index)
        figures = [_count(event.get("messages"), "message"), _count(event.get("ideas"), "idea")]
        if event.get("billed", True):  # an offline or local model's token counts are not spend
            tokens = int(event.get("input_tokens", 0)) + int(event.get("output_tokens", 0))
            figures.append(_count(tokens, "token"))
        if event.get("failures"):
            figures.append(f"{event['failures']} failed run(s)")
        figures.append(f"at {duration(float(event.get('elapsed', 0)))}")
        line = f"[{done}/{of}] {short_session(str(event.get('session')))}: {', '.join(figures)}"
        self._line(self._fit(line, f" ({event.get('project')})"))

    def _fit(self, line: str, tail: str) -> str:
        """`line` + `tail`, the tail (a project's directory name, often long) cut to the console's width."""
        room = self.console.width - len(line)
        if len(tail) <= room:
            return line + tail
        return line + (tail[: room - 2] + "…)" if room >= 8 else "")


def _count(value: Any, noun: str) -> str:
    n = int(value or 0)
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def short_session(session: str) -> str:
    """A Claude Code session id by its first 8 characters, as `cairn timeline` heads sessions; other
    names (a file's stem) up to 24."""
    if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f-]{27}", session):
        return session[:8]
    return session if len(session) <= 24 else session[:23] + "…"
