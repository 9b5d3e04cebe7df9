"""Backfill: index a developer's whole transcript history, one session at a time, oldest first.

Seed 003's backfill mode: each agent run gets one session's consecutive messages up to the backfill
budget (`plan_batches(mode="backfill")`), and sessions go in the order they happened, so when a later
session revisits a decision the earlier one is already stored for the agent to find, link or
supersede.

Nothing here keeps state of its own. Capture stores each file's messages with its byte offset, and
every applied batch moves its files' indexing cursors in the same transaction (`cairn.agent`). A run
that stops — Ctrl-C, a crash, `kill -9` — therefore resumes from the stored offsets and cursors: the
next run captures only new bytes and indexes only messages past the cursors, with no duplicates.

The dry run captures (free, local and idempotent: the next real run would do the same) but runs no
agent. Its estimates come from the same planner the real run uses, so its batch and message counts
are exact for the data captured so far; token and cost figures are estimates (see `estimate`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from cairn.agent.batches import PlannedBatch, plan_batches
from cairn.agent.indexer import IndexReport, RunOutcome, index_pending
from cairn.agent.models import ModelChoice
from cairn.config import Settings
from cairn.pricing import Price, cost
from cairn.prompts import load_prompt
from cairn.store.db import Database
from cairn.store.identity import git_identity
from cairn.store.store import Store
from cairn.tokens import count_tokens
from cairn.transcripts.discover import find_transcripts, is_subagent_file, session_id_for

# How much of each end of a file is read to find its first and last timestamps and its cwd.
_SNIFF_BYTES = 64 * 1024
# Seed 003's backfill budget besides the messages: ~5K tokens of tool results per run.
TOOL_RESULT_TOKENS = 5_000
# Seed 003 expects ~5K output tokens for a ~50K-token backfill run.
OUTPUT_RATIO = 0.1


@dataclass
class Session:
    """One Claude Code session on disk: its transcript and its subagents' transcripts."""

    key: str  # the main transcript's path without `.jsonl`: unique even when session ids repeat
    session_id: str
    project: str  # the Claude Code project directory's name (the cwd with `/` → `-`)
    files: list[Path]
    started: datetime | None = None
    last: datetime | None = None
    mtime: float = 0.0
    cwd: str | None = None

    @property
    def order(self) -> tuple[float, str]:
        """Oldest first: by the first message's time, else the newest file's mtime."""
        when = self.started.timestamp() if self.started else self.mtime
        return when, self.key

    @property
    def last_activity(self) -> datetime:
        return self.last or datetime.fromtimestamp(self.mtime, UTC)

    def describe(self) -> dict[str, object]:
        return {
            "session": self.session_id,
            "project": self.project,
            "files": [str(f) for f in self.files],
            "started": self.started.isoformat() if self.started else None,
        }


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _entries(lines: Iterable[bytes]) -> Iterable[dict[str, object]]:
    for raw in lines:
        try:
            value = json.loads(raw)
        except Exception:  # any malformed line is passed over (`[` * 2000 raises RecursionError)
            continue
        if isinstance(value, dict):
            yield value


def sniff(path: Path) -> tuple[datetime | None, datetime | None, str | None]:
    """(first timestamp, last timestamp, cwd) of a transcript, from its first and last 64 KiB.

    Reading the whole of every file just to order sessions would cost as much as capturing them.
    """
    first = last = None
    cwd: str | None = None
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - _SNIFF_BYTES)
        fh.seek(start)
        tail = fh.read()
    for entry in _entries(head.split(b"\n")):
        if cwd is None and isinstance(entry.get("cwd"), str):
            cwd = str(entry["cwd"])
        if first is None:
            first = _parse_time(entry.get("timestamp"))
        if first is not None and cwd is not None:
            break
    tail_lines = tail.split(b"\n")
    if start > 0:
        tail_lines = tail_lines[1:]  # the first line of the window is cut
    for entry in _entries(reversed(tail_lines)):
        if (last := _parse_time(entry.get("timestamp"))) is not None:
            break
    return first, last, cwd


def _session_key(path: Path) -> tuple[str, Path]:
    """(grouping key, project directory) of a transcript file in Claude Code's layout."""
    if is_subagent_file(path):
        session_dir = path.parent.parent
        return str(session_dir), session_dir.parent
    return str(path.with_suffix("")), path.parent


def discover_sessions(roots: Iterable[Path]) -> list[Session]:
    """Every session with a transcript under `roots`, oldest first, subagent files with their parent."""
    sessions: dict[str, Session] = {}
    for path in find_transcripts(roots):
        key, project_dir = _session_key(path)
        session = sessions.get(key)
        if session is None:
            session = sessions[key] = Session(key, session_id_for(path), project_dir.name, [])
        session.files.append(path)
        first, last, cwd = sniff(path)
        session.mtime = max(session.mtime, path.stat().st_mtime)
        if first is not None and (session.started is None or first < session.started):
            session.started = first
        if last is not None and (session.last is None or last > session.last):
            session.last = last
        if cwd is not None and (session.cwd is None or not is_subagent_file(path)):
            session.cwd = cwd
    for session in sessions.values():
        # The main transcript first, so its lines are indexed before its subagents' ones.
        session.files.sort(key=lambda p: (is_subagent_file(p), str(p)))
    return sorted(sessions.values(), key=lambda s: s.order)


def parse_since(text: str) -> datetime:
    """`--since` by cairn's one date parser (`cairn.dates`): ISO, `today`, `yesterday` or an age like 3d."""
    from cairn.dates import parse_when

    return parse_when(text, "--since")


def matches_project(session: Session, project: str) -> bool:
    """Whether `project` names the session's project: its Claude Code directory name, its cwd, or
    (a directory here) any path inside the same repository, worktrees included.

    Claude Code names a project directory by its cwd with `/` replaced by `-`, so `/home/dev/demo`,
    `dev/demo`, `demo` and `-home-dev-demo` all find `-home-dev-demo`; and from a subdirectory of one
    worktree, `--project .` finds the sessions of every worktree of that repository.
    """
    wanted = project.casefold()
    name = session.project.casefold()
    cwd = (session.cwd or "").casefold()
    if wanted in name or wanted.replace("/", "-") in name or (bool(cwd) and wanted in cwd):
        return True
    return session.cwd is not None and _same_repository(session.cwd, project)


def _same_repository(cwd: str, project: str) -> bool:
    """Whether `cwd` and the directory `project` are in one repository, as git's files on disk say."""
    path = os.path.realpath(os.path.expanduser(project))
    if not os.path.isdir(path):
        return False
    here, there = git_identity(path), git_identity(cwd)
    return here is not None and there is not None and here.root == there.root


def select_sessions(
    sessions: list[Session], *, since: datetime | None = None, project: str | None = None
) -> list[Session]:
    """The sessions active on or after `since` and belonging to `project`, order kept."""
    return [
        s
        for s in sessions
        if (since is None or s.last_activity >= since) and (project is None or matches_project(s, project))
    ]


def session_paths(session: Session) -> list[str]:
    """The session's files as store keys (absolute, resolved paths)."""
    return [str(f.resolve()) for f in session.files]


@dataclass
class RunTally:
    """What the indexing runs of one session added up to: batches, messages, ideas, tokens, time, failures
    (shared by backfill and `cairn reindex`, which both index a session batch by batch)."""

    batches: int = 0
    messages: int = 0
    ideas: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    failures: int = 0

    def add(self, planned: PlannedBatch, run: RunOutcome) -> None:
        self.batches += 1
        self.input_tokens += run.input_tokens
        self.output_tokens += run.output_tokens
        self.seconds += run.seconds
        if run.ok:
            self.messages += planned.message_count
            self.ideas += sum(run.stats.ideas_by_intent.values()) if run.stats else 0
        else:
            self.failures += 1

    def figures(self) -> dict[str, object]:
        return {
            "batches": self.batches,
            "messages": self.messages,
            "ideas": self.ideas,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "seconds": round(self.seconds, 3),
            "failures": self.failures,
        }


@dataclass
class SessionResult(RunTally):
    """What backfilling one session did."""

    session: Session = field(kw_only=True)
    complete: bool = False  # every pending message of the session was indexed

    def as_dict(self) -> dict[str, object]:
        return {**self.session.describe(), **self.figures()}


@dataclass
class BackfillReport:
    """The sum of a backfill: per session, and every run in one `IndexReport` for the CLI's renderers."""

    total: int
    sessions: list[SessionResult] = field(default_factory=list)
    index: IndexReport = field(default_factory=IndexReport)
    interrupted: bool = False

    @property
    def done(self) -> int:
        """Sessions indexed to their end (an interrupted or failed session is not done)."""
        return sum(1 for s in self.sessions if s.complete)


class _Stop(Exception):
    """Raised from the batch callback to leave `index_pending` between batches, never inside one."""


BatchProgress = Callable[[Session, PlannedBatch, RunOutcome], None]
SessionProgress = Callable[[SessionResult], None]


async def run_backfill(
    store: Store,
    settings: Settings,
    sessions: list[Session],
    choice: ModelChoice,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    on_batch: BatchProgress | None = None,
    on_session: SessionProgress | None = None,
) -> BackfillReport:
    """Index the captured, not-yet-indexed messages of `sessions`, one session after another.

    `should_stop` is asked after every batch and before every session; once it answers True the
    backfill ends at that boundary and the report says `interrupted`. A failure that is not a
    batch's own (API down, bad key) ends the backfill too: every later session would fail alike.
    """
    report = BackfillReport(total=len(sessions))
    for session in sessions:
        if should_stop():
            report.interrupted = True
            break
        result = SessionResult(session=session)
        report.sessions.append(result)

        def batch_done(planned: PlannedBatch, run: RunOutcome, result: SessionResult = result) -> None:
            result.add(planned, run)
            report.index.add(run)
            if on_batch is not None:
                on_batch(result.session, planned, run)
            if should_stop():
                raise _Stop

        try:
            indexed = await index_pending(
                store,
                settings,
                model=choice,
                paths=session_paths(session),
                mode="backfill",
                on_batch=batch_done,
            )
        except _Stop:
            report.index.batches += result.batches
            report.interrupted = True
            break
        report.index.batches += indexed.batches
        report.index.skipped_batches += indexed.skipped_batches
        result.complete = result.failures == 0 and indexed.skipped_batches == 0
        if on_session is not None:
            on_session(result)
        if indexed.stopped is not None:
            report.index.stopped = indexed.stopped
            report.index.paused_until = indexed.paused_until
            break
    return report


async def pending_messages(db: Database, paths: list[str] | None) -> int:
    """Stored messages of `paths` (None: of every file) past their indexing cursor and worth sending
    (not noise): the total a progress display counts indexing against."""
    if paths is not None and not paths:
        return 0
    row = await db.fetchone(
        """
        SELECT count(*) AS n FROM messages m JOIN transcript_files f ON f.id = m.file_id
        WHERE (? IS NULL OR f.path IN (SELECT value FROM json_each(?)))
          AND m.end_line > f.indexed_line AND NOT m.is_noise
        """,
        (None if paths is None else 1, json.dumps(paths or [])),
    )
    return int(row["n"]) if row else 0


@dataclass
class Estimate:
    """What backfilling one session (or all of them) would send, and its estimated price per model."""

    batches: int = 0
    messages: int = 0
    message_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Estimate) -> None:
        self.batches += other.batches
        self.messages += other.messages
        self.message_tokens += other.message_tokens
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def as_dict(self, prices: dict[str, Price], model: str) -> dict[str, object]:
        """Counts, `model`'s estimated cost (None when unpriced, or paid by the user's Claude plan rather
        than in dollars: `claude-code`) and the cost on every priced model."""
        from cairn.agent.model_names import claude_code_target

        model_cost = None
        if claude_code_target(model, "") is None:
            model_cost = cost(model, self.input_tokens, self.output_tokens, prices)
        return {
            "batches": self.batches,
            "messages": self.messages,
            "message_tokens": self.message_tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "model_cost_usd": None if model_cost is None else round(model_cost, 4),
            "cost_usd": {
                model: round(cost(model, self.input_tokens, self.output_tokens, prices) or 0.0, 4)
                for model in prices
            },
        }


def run_overhead_tokens() -> int:
    """Input tokens a run sends besides its messages: the system prompt and its tool results."""
    return count_tokens(load_prompt().text) + TOOL_RESULT_TOKENS


async def estimate(db: Database, session: Session, overhead: int) -> Estimate:
    """What a backfill of `session` would send, from the real planner over its captured messages.

    Input: each batch's message tokens plus `overhead` per run. Re-sent context within a run is not
    counted, since Claude runs use prompt caching, which bills those re-reads at a tenth. Output:
    `OUTPUT_RATIO` of the input, about 5K per 50K-token run.
    """
    return await estimate_paths(db, session_paths(session), overhead)


async def estimate_paths(db: Database, paths: list[str] | None, overhead: int) -> Estimate:
    """`estimate` for the stored files `paths` (None: every file with messages past its cursor).

    `cairn reindex --dry-run` calls it on a scratch copy whose cursors are back at line 0."""
    planned = await plan_batches(db, mode="backfill", paths=paths)
    result = Estimate(
        batches=len(planned),
        messages=sum(p.message_count for p in planned),
        message_tokens=sum(p.tokens for p in planned),
    )
    result.input_tokens = result.message_tokens + overhead * sum(1 for p in planned if p.message_count)
    result.output_tokens = round(result.input_tokens * OUTPUT_RATIO)
    return result


def spend(data: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """What a dry run's total means for the user: who pays the tokens, and how many days of the daily
    token budget they take (`daily_token_budget`; every model but offline counts against it).

    `budget_days` divides the estimate by the budget, rounded up. The budget also counts the context
    each request of a run re-sends, which the estimate leaves out (caching bills it at a tenth), so
    `budget_days_at_most` divides the runs' own token limits instead (`run_token_budget` plus four
    readings of the batch each): a run that hits its limit stops there.

    `claude-code` is paid from the user's Claude plan, not in dollars; its API list price is given as
    `api_equivalent_usd`, for comparison only. A dry run needs no SDK: `needs` says what indexing will.
    """
    import math

    from cairn.agent.claude_code_cli import INSTALL_HINT, sdk_installed
    from cairn.agent.indexer import BATCH_READINGS
    from cairn.agent.model_names import OFFLINE, claude_code_target
    from cairn.pricing import billed, load_prices

    model = str(data["model"])
    total = data["total"]
    tokens = int(total["input_tokens"]) + int(total["output_tokens"])
    limit = int(total["batches"]) * settings.run_token_budget + BATCH_READINGS * int(total["message_tokens"])
    target = claude_code_target(model, settings.claude_code_model)
    budget = settings.daily_token_budget
    counted = model != OFFLINE and budget > 0
    equivalent = None
    if target is not None:
        paid_by = "claude_plan"
        equivalent = cost(
            target, int(total["input_tokens"]), int(total["output_tokens"]), load_prices(settings)
        )
    elif model == OFFLINE:
        paid_by = "nothing"
    else:
        paid_by = "api" if billed(model, settings.model_base_url) else "local"
    return {
        "tokens": tokens,
        "paid_by": paid_by,
        "claude_model": target,
        "api_equivalent_usd": None if equivalent is None else round(equivalent, 4),
        "daily_token_budget": budget,
        "budget_days": math.ceil(tokens / budget) if counted else None,
        "run_limit_tokens": limit,
        "budget_days_at_most": math.ceil(limit / budget) if counted else None,
        "needs": INSTALL_HINT if target is not None and not sdk_installed() else None,
    }


def spend_lines(data: dict[str, Any]) -> list[str]:
    """`spend` for people: who pays, the budget's days, and what indexing will need."""
    figures = data.get("spend")
    if not figures:
        return []
    lines = []
    tokens = f"~{figures['tokens']:,} tokens"
    if figures["paid_by"] == "claude_plan":
        line = (
            f"claude-code ({figures['claude_model']}): {tokens} from your Claude plan, not billed in dollars"
        )
        if figures["api_equivalent_usd"] is not None:
            line += (
                f"; the API list price of {figures['claude_model']} would be "
                f"${figures['api_equivalent_usd']:.2f} (for comparison only)"
            )
        lines.append(line + ".")
    budget = figures["daily_token_budget"]
    days, most = figures["budget_days"], figures["budget_days_at_most"]
    if days is not None:
        head = f"Daily token budget {budget:,}: {tokens}"
        worst = f"{figures['run_limit_tokens']:,} tokens if every run used its whole limit"
        if most == 1:
            lines.append(f"{head} fit in one day's budget ({worst}).")
        else:
            lines.append(
                f"{head} take about {_days(days)} ({_days(most)} at most: {worst}); indexing "
                "waits for the next day whenever a day's budget is spent."
            )
    elif figures["paid_by"] != "nothing" and budget == 0:
        lines.append("No daily token budget (daily_token_budget = 0): indexing runs to its end in one go.")
    if figures["needs"]:
        lines.append(f"Before indexing (this dry run needs nothing): {figures['needs']}.")
    return lines


def _days(n: int) -> str:
    """`1 day`, `3 days`."""
    return f"{n} day" if n == 1 else f"{n} days"


def estimate_tables(data: dict[str, Any]) -> list[Table | Text | str]:
    """The dry run for people: what each session would send, then the total priced per model."""
    model = str(data["model"])
    plan = (data.get("spend") or {}).get("paid_by") == "claude_plan"
    sessions = Table(title=f"would send ({model})", title_justify="left")
    columns = ["session", "project", "started", "batches", "messages", "input tok", "output tok"]
    for col in [*columns, *([] if plan else ["cost"])]:  # claude-code is paid from the plan, not in $
        sessions.add_column(col, justify="left" if col in ("session", "project", "started") else "right")
    for row in data["sessions"]:
        price = row["model_cost_usd"]
        cells = [
            row["session"],
            row["project"],
            row["started"] or "—",
            str(row["batches"]),
            str(row["messages"]),
            f"{row['input_tokens']:,}",
            f"{row['output_tokens']:,}",
        ]
        sessions.add_row(*cells, *([] if plan else ["?" if price is None else f"${price:.2f}"]))
    total = data["total"]
    title = "API list prices, for comparison" if plan else "estimated cost per model"
    per_model = Table(title=title, title_justify="left")
    per_model.add_column("model")
    per_model.add_column("cost", justify="right")
    for name, value in total["cost_usd"].items():
        per_model.add_row(name, f"${value:.2f}")
    note = (
        f"{total['batches']} run(s), {total['messages']} messages, ~{total['input_tokens']:,} input and "
        f"~{total['output_tokens']:,} output tokens (output estimated at {data['output_ratio']:.0%} of "
        f"input). List prices as of {data['prices_as_of']}, without caching discounts; override them "
        "under \\[prices] in config.toml."
    )
    return [sessions, per_model, note, *map(Text, spend_lines(data))]  # Text: literal, no markup
