"""Running the indexing agent over planned batches: one accounted agent run per batch, applied once.

`index_batch` runs the agent on one `PlannedBatch` (the batch rendered inside `<transcript_batch>`
markers, the read-only tools, the versioned system prompt), then hands the `IndexResult` to the
executor, which validates every id and line and applies the result and the batch's cursors in one
transaction. Whatever goes wrong — the model overruns its budget, answers with something that is
still invalid after one retry, or the API fails after the transport's retries — the run is recorded
in `index_runs` and nothing else changes: the cursors stay, so the batch is planned again next cycle.
No failure of a run is raised to the caller.

`index_pending` plans every pending batch and runs them in order. After a file's batch failed, that
file's later batches are not run in this pass: applying them would move the cursor past messages
that were never indexed. A failure that is not the batch's own (the API is down after retries, the
key is bad) ends the pass, since every later batch would fail alike and be recorded for nothing.
A run that answers only after the tools' soft budget notice is applied and recorded `tool_budget`.
Before every batch the pass also reads the daily token budget (`cairn.agent.budget`); once today's
runs have spent it, the pass stops with one line in `IndexReport.stopped` and the reset time in
`paused_until`, leaving the rest pending for the next day. A failed run carries what a pause needs:
`systemic`, its own one-line `reason` and, when the model said so, `resume_at`.

Seed 003's open questions, decided:

1. Tool call limit. Soft: `max_tool_calls` (15) — after it every tool answers with a notice to
   return the result now (`cairn.tools`), so a run ends with an answer, not an error. Hard:
   `UsageLimits` of `max_tool_calls + 5` tool calls and as many requests, and a token budget of
   `run_token_budget` plus four times the batch's own tokens, because every request re-sends the
   batch: a budget blind to batch size would let a 40k-token backfill batch make no lookup at all.
   Hitting a hard limit records `usage_limit` and applies nothing.
2. Cross-session relations. The agent decides on meaning (option B) with cross-session search by
   default (option C): `search_ideas` covers all sessions unless narrowed, and the prompt tells the
   agent to link across sessions when ideas are about the same project, entity or decision — not on
   loose word overlap. Shared entities link sessions implicitly as well (option A).
3. Confidence threshold. 0.3: the prompt asks the agent to leave out ideas below it, and the
   executor rejects (and reports) any that still arrive (`cairn.agent.validate.MIN_CONFIDENCE`).
4. Deduplication. Three layers: the agent searches before it writes (prompt, `search_ideas`); the
   executor rejects an idea whose file, line and normalised content hash is already stored or
   repeated, so a replayed batch adds nothing (`cairn.agent.validate`); entity names are matched
   lexically and, through the `embed` callable this runner passes, by embedding similarity
   (`cairn.agent.entities`). No global content-hash dedup: the same words said in two sessions are
   two ideas, linked by the agent when they are one decision.
5. Embeddings. Option C: the executor writes SQLite and queues vector work in the outbox in the same
   transaction; after the commit `Store.sync_vectors()` embeds everything new in batches. The agent
   never produces vectors, and Chroma stays derived from SQLite.
6. Activation. Yes: `activated_ideas` (ids the tools returned that the batch is about) bump the
   ideas' `usage_count` and `last_used_at` in the executor, feeding working memory and forgetting;
   search-time activation is separate and adds to it.
7. Message storage. Messages stay stored (FTS5 and vectors) as the RAG fallback and as the indexer's
   own input; `skip_lines` only marks lines as not worth an idea and never deletes a message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from functools import cache

import httpx2
from pydantic_ai import Agent, RunUsage, UsageLimits
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelNotFoundError,
    ModelRequestRejectedError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from cairn.agent import executor
from cairn.agent.batches import PlannedBatch, plan_batches
from cairn.agent.budget import Clock, applies, budget_state, spent_line, utc_now
from cairn.agent.entities import Embed
from cairn.agent.executor import ApplyStats, RunRecord, StaleBatchError
from cairn.agent.models import ModelChoice, resolve_model
from cairn.agent.schema import IndexResult, Mode, render_batch_prompt
from cairn.agent.spend import RunMeter, metering
from cairn.config import Settings
from cairn.prompts import Prompt, load_prompt
from cairn.store.db import Database
from cairn.store.store import Store
from cairn.store.vectors import VectorStoreError
from cairn.tools import ToolDeps, indexing_toolset

log = logging.getLogger(__name__)

OK = "ok"
TOOL_BUDGET = "tool_budget"  # applied, but the agent answered only after its soft tool budget ran out
USAGE_LIMIT = "usage_limit"
INVALID_OUTPUT = "invalid_output"
FAILED = "failed"
STALE = "stale"
APPLIED = frozenset({OK, TOOL_BUDGET})

# Hard limits above the soft tool budget: room to finish after the budget notice, not to keep going.
LIMIT_MARGIN = 5
# The batch is re-sent with every request; the run's token limit allows this many readings of it.
BATCH_READINGS = 4
MAX_ERROR_CHARS = 2000

BatchCallback = Callable[[PlannedBatch, "RunOutcome"], None]


@dataclass
class RunOutcome:
    """What one agent run over one batch did; `run_id` is its `index_runs` row."""

    run_id: int
    outcome: str
    stats: ApplyStats | None = None
    rejected: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    requests: int = 0
    seconds: float = 0.0
    error: str | None = None
    vectors_error: str | None = None
    # The failure is the API's or the configuration's, not this batch's: later batches would fail alike.
    systemic: bool = False
    # When the model said it can be used again (a rate limit's reset), from the error's `resume_at`.
    resume_at: datetime | None = None
    # A failure's own words for a person: the first line of the exception's message, without its type
    # (a model adapter's errors say what to do in one line); `error` keeps the full record.
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """The result was applied and the batch's cursors moved."""
        return self.outcome in APPLIED


@dataclass
class IndexReport:
    """The sum of one `index_pending` pass: every run, and what the applied ones wrote."""

    batches: int = 0
    runs: list[RunOutcome] = field(default_factory=list)
    skipped_batches: int = 0
    stopped: str | None = None
    # The pass stopped because the daily budget is spent; indexing may go on at this time (aware).
    paused_until: datetime | None = None
    # Files left unindexed that were handed to the daemon for after `paused_until` (`cairn.daemon.jobs`).
    deferred_files: int = 0
    stats: ApplyStats = field(default_factory=ApplyStats)

    @property
    def ok(self) -> int:
        return sum(run.ok for run in self.runs)

    @property
    def failures(self) -> list[RunOutcome]:
        return [run for run in self.runs if not run.ok]

    @property
    def rejected(self) -> int:
        return sum(run.rejected for run in self.runs)

    @property
    def input_tokens(self) -> int:
        return sum(run.input_tokens for run in self.runs)

    @property
    def output_tokens(self) -> int:
        return sum(run.output_tokens for run in self.runs)

    @property
    def tool_calls(self) -> int:
        return sum(run.tool_calls for run in self.runs)

    @property
    def requests(self) -> int:
        return sum(run.requests for run in self.runs)

    @property
    def seconds(self) -> float:
        return sum(run.seconds for run in self.runs)

    def add(self, run: RunOutcome) -> None:
        self.runs.append(run)
        if run.stats is not None:
            _accumulate(self.stats, run.stats)


def _accumulate(total: ApplyStats, stats: ApplyStats) -> None:
    """Add `stats`' counters to `total`: integers summed, per-kind dicts summed key by key."""
    for f in fields(stats):
        if f.name == "run_id":
            continue
        value = getattr(stats, f.name)
        if isinstance(value, dict):
            merged = getattr(total, f.name)
            for key, count in value.items():
                merged[key] = merged.get(key, 0) + count
        elif isinstance(value, int):
            setattr(total, f.name, getattr(total, f.name) + value)


@cache
def build_agent(prompt: Prompt) -> Agent[ToolDeps, IndexResult]:
    """The indexing agent for `prompt`; the model is chosen per run.

    An output that fails validation gets one retry with the errors shown to the model; a tool call
    with bad arguments gets one too.
    """
    return Agent(
        output_type=IndexResult,
        deps_type=ToolDeps,
        instructions=prompt.text,
        toolsets=[indexing_toolset()],
        retries={"tools": 1, "output": 1},
        defer_model_check=True,
        name="cairn-indexer",
    )


def usage_limits(settings: Settings, planned: PlannedBatch) -> UsageLimits:
    """Hard limits of one run (see the module docstring, decision 1)."""
    hard = settings.max_tool_calls + LIMIT_MARGIN
    return UsageLimits(
        request_limit=hard,
        tool_calls_limit=hard,
        total_tokens_limit=settings.run_token_budget + BATCH_READINGS * planned.tokens,
    )


def run_meter(limits: UsageLimits, budget_left: int | None) -> RunMeter:
    """The meter of a run held to `limits` and to what is left of today's budget: the caps a model
    adapter that sends requests of its own (`claude-code`) stops at, request by request."""
    cap = limits.total_tokens_limit
    if budget_left is not None:
        cap = budget_left if cap is None else min(cap, budget_left)
    return RunMeter(token_cap=cap, request_cap=limits.request_limit, budget_left=budget_left)


async def _budget_left(
    settings: Settings, choice: ModelChoice, dbs: Sequence[Database], now: Clock
) -> int | None:
    """Tokens left of today's budget for a run of `choice`, or None when no budget applies to it."""
    if not applies(settings, choice.name):
        return None
    state = await budget_state(dbs, settings, now())
    return state.remaining


def _message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _classify(exc: BaseException) -> tuple[str, bool]:
    """(outcome, systemic) of a run that raised `exc`."""
    if isinstance(exc, UsageLimitExceeded):
        return USAGE_LIMIT, False
    if isinstance(exc, UnexpectedModelBehavior):
        return INVALID_OUTPUT, False
    if isinstance(exc, ModelRequestRejectedError):
        # A rejected request is about this batch, except a bad key or an unknown model.
        return FAILED, isinstance(exc, ModelAuthenticationError | ModelNotFoundError)
    if isinstance(exc, ModelAPIError | httpx2.HTTPError):
        return FAILED, True
    return FAILED, False


MAX_REASON_CHARS = 300


def _reason(exc: BaseException) -> str:
    """The first line of `exc`'s message (its type when it has none), at most `MAX_REASON_CHARS`."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _resume_at(exc: BaseException) -> datetime | None:
    """When the failing model says it can be used again: the `resume_at` a model adapter may set on its
    error (an aware datetime, e.g. a rate limit's reset time), else the `retry_after` seconds an API
    error carries (a 429's `Retry-After`, once the transport's own retries are spent); else None."""
    value = getattr(exc, "resume_at", None)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    wait = getattr(exc, "retry_after", None)
    if isinstance(wait, int | float) and wait > 0:
        return datetime.now(UTC) + timedelta(seconds=float(wait))
    return None


def _record(
    choice: ModelChoice,
    prompt: Prompt,
    planned: PlannedBatch,
    usage: RunUsage,
    meter: RunMeter,
    seconds: float,
) -> RunRecord:
    input_tokens, output_tokens, requests = meter.merged(usage)
    return RunRecord(
        model=choice.name,
        prompt_version=prompt.id,
        mode=planned.batch.mode,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        tool_calls=usage.tool_calls,
        requests=requests,
        seconds=seconds,
    )


def _outcome(run_id: int, record: RunRecord) -> RunOutcome:
    return RunOutcome(
        run_id=run_id,
        outcome=record.outcome,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        tool_calls=record.tool_calls,
        requests=record.requests,
        seconds=record.seconds,
        error=record.error,
    )


async def index_batch(
    store: Store,
    planned: PlannedBatch,
    choice: ModelChoice,
    settings: Settings,
    *,
    prompt: Prompt | None = None,
    embed: Embed | None = None,
    budget_dbs: Sequence[Database] | None = None,
    now: Clock = utc_now,
) -> RunOutcome:
    """Run the agent on `planned` and apply its result; every outcome is recorded in `index_runs`.

    A failed run is returned, not raised, and leaves the batch's cursors where they were. Only a
    failure of the store itself (the database unusable while recording) propagates. `embed` matches
    entity names by embedding (default: the store's own embedding function); a store without vectors
    of its own (`cairn.reindex`'s scratch store) passes its owner's.

    pydantic-ai holds the run to its `usage_limits` between its requests. A model adapter that sends
    API requests of its own (`claude-code`) is held, request by request, to the run's meter: its token
    limit or what is left of today's budget (counting the runs of `budget_dbs`, default the store's
    own), whichever is lower, and its request limit. Either way every request's tokens are recorded.
    """
    prompt = prompt or load_prompt()
    deps = ToolDeps(db=store.db, vectors=store.vectors_or_none, max_tool_calls=settings.max_tool_calls)
    usage = RunUsage()  # filled in place, so a run that raises is still accounted
    budget_left = await _budget_left(settings, choice, list(budget_dbs) if budget_dbs else [store.db], now)
    limits = usage_limits(settings, planned)
    meter = run_meter(limits, budget_left)
    started = time.perf_counter()
    try:
        with metering(meter):
            run = await build_agent(prompt).run(
                render_batch_prompt(planned.batch),
                deps=deps,
                model=choice.model,
                model_settings=choice.settings,
                usage_limits=limits,
                usage=usage,
            )
    except Exception as exc:
        # Recorded, not raised, whatever it is: the daemon must move on to other files, and the batch
        # is safe — its cursors have not moved. An error that is no agent or API failure is a bug in
        # a tool or a model adapter; the traceback goes to the log.
        record = _record(choice, prompt, planned, usage, meter, time.perf_counter() - started)
        record.outcome, systemic = _classify(exc)
        record.error = _message(exc)
        expected = isinstance(exc, AgentRunError | httpx2.HTTPError)
        log.log(
            logging.WARNING if expected else logging.ERROR,
            "indexing run %s: %s",
            record.outcome,
            record.error,
            exc_info=not expected,
        )
        failed = _outcome(await executor.record_failed_run(store.db, planned, record), record)
        failed.systemic = systemic
        failed.resume_at = _resume_at(exc)
        failed.reason = _reason(exc)
        return failed

    record = _record(choice, prompt, planned, usage, meter, time.perf_counter() - started)
    record.outcome = TOOL_BUDGET if deps.tool_calls > deps.max_tool_calls else OK
    try:
        stats = await executor.apply(
            store.db, planned, run.output, record, embed=embed or store_embedder(store)
        )
    except StaleBatchError as exc:
        # Another writer indexed these messages since the batch was planned: the run is accounted,
        # its result dropped, and the next plan starts from the moved cursors.
        record.outcome, record.error = STALE, _message(exc)
        return _outcome(await executor.record_failed_run(store.db, planned, record), record)
    applied = _outcome(stats.run_id, record)
    applied.stats, applied.rejected = stats, stats.rejected
    try:
        await store.sync_vectors()
    except VectorStoreError as exc:
        # The outbox keeps the work; the next sync (or `cairn reindex-vectors`) catches up.
        applied.vectors_error = _message(exc)
        log.warning("vector sync after indexing failed: %s", applied.vectors_error)
    return applied


def store_embedder(store: Store) -> Embed:
    """The store's embedding function as a plain `texts → vectors` callable, for entity matching."""
    function = store.vectors.embedding_function

    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in vector] for vector in function(texts)]

    return embed


async def index_pending(
    store: Store,
    settings: Settings,
    *,
    model: ModelChoice | str | None = None,
    paths: Iterable[str] | None = None,
    mode: Mode = "backfill",
    prompt: Prompt | None = None,
    on_batch: BatchCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    embed: Embed | None = None,
    now: Clock = utc_now,
    budget_dbs: Sequence[Database] | None = None,
) -> IndexReport:
    """Index every stored, not-yet-indexed message (of `paths`, default all) in planned batches.

    `model` is a resolved choice, a model string, or None for the configured model; a choice made
    here is closed here (and a model that cannot be configured raises `ModelConfigError` before any
    run). `paths` are store keys: absolute, resolved transcript paths.

    A batch whose file already failed in this pass is skipped (cursors must stay contiguous), and a
    failure that is not the batch's own (API down, bad key) ends the pass: every later batch would
    fail the same way and be recorded for nothing. `should_stop`, asked before every batch, ends the
    pass early at a batch boundary.

    Before every batch the daily token budget (`cairn.agent.budget`, any model but offline) is read
    at `now()`, counting the runs recorded in `budget_dbs` (default: the store's own); once it is
    spent the pass stops with one line in `stopped` and the reset time in `paused_until`. The
    batches left keep their cursors, so a later pass indexes them.
    """
    owned = not isinstance(model, ModelChoice)
    choice = model if isinstance(model, ModelChoice) else resolve_model(settings, model)
    report = IndexReport()
    blocked: set[int] = set()
    budgeted = applies(settings, choice.name)
    ledgers = list(budget_dbs) if budget_dbs is not None else [store.db]
    try:
        for planned in await plan_batches(store.db, mode=mode, paths=paths):
            if should_stop is not None and should_stop():
                break
            report.batches += 1
            files = {cursor.file_id for cursor in planned.cursors}
            if report.stopped is None and budgeted:
                budget = await budget_state(ledgers, settings, now())
                if budget.exhausted:
                    report.stopped, report.paused_until = spent_line(budget), budget.resets_at
            if report.stopped is not None or files & blocked:
                report.skipped_batches += 1
                continue
            run = await index_batch(
                store, planned, choice, settings, prompt=prompt, embed=embed, budget_dbs=ledgers, now=now
            )
            report.add(run)
            if not run.ok:
                blocked |= files
                if run.systemic:
                    report.stopped = run.error or run.outcome
            if on_batch is not None:
                on_batch(planned, run)
    finally:
        if owned:
            await choice.aclose()
    return report
