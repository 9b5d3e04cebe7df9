"""The daemon's continuous indexing loop: queue items in, one agent run per cycle, items done or retried.

Hooks put transcript paths into `work_queue` within milliseconds and leave. The daemon — the one
owner of the store — waits for the first item, collects more for `batch_window_seconds` (a user's
prompt, the assistant's answer and its subagents usually arrive together), then for every claimed
path captures the file's new bytes (`sync_file`, exactly once by the stored offsets) and makes **one**
agent run over all updated sessions, cut to the continuous budget by `plan_batches`.

Why the outcomes are safe:
- Capture and indexing each commit their cursors in the transaction that applies their work, so a
  kill at any instant leaves items `running` with cursors at a consistent point; the next start puts
  those items back (`requeue_running`) and re-reading from the cursors completes exactly the work an
  uninterrupted run would have done.
- An item whose file still has messages after this cycle's run is re-enqueued *before* it is marked
  done, so a crash in between leaves a duplicate notification (harmless), never a lost one.
- A failed run over several files is retried file by file in the same cycle, so one bad session costs
  the others at most that one run; only the files that fail alone go back with an attempt count and
  a next-try time (`retry`), and are parked after `queue_max_attempts`. A file whose *capture*
  raises, whatever it raises, fails the same way (`Daemon._capture`): out of the cycle it would stop
  the daemon with its item `running`, requeued by the next start without an attempt counted — a
  crash loop on one file.
- A failure that is the model's, not a file's (`RunOutcome.systemic`: logged out, rate limited,
  unreachable), and a spent daily token budget (`cairn.agent.budget`) pause indexing instead: the
  claimed files are still captured (and embedded), so search sees new messages, but not indexed;
  their items go back deferred to the pause's end without counting an attempt (`queue.defer`), so
  none is ever parked for it. The pause lasts until the model's own `resume_at`, the budget's reset
  at local midnight, or a backoff (`pause_backoff_seconds`, doubling to 30 minutes) after which one
  run probes the model. It is recorded in `indexing-pause.json` (`cairn.daemon.pause`) for `cairn
  status`, `cairn stats` and the viewer, and lifted by the first run that succeeds.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sqlite3
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cairn.agent.batches import PlannedBatch, pending_files, plan_batches
from cairn.agent.budget import Clock, applies, budget_state, spent_line, utc_now
from cairn.agent.indexer import RunOutcome, index_batch
from cairn.agent.models import ModelChoice, ModelConfigError, resolve_model
from cairn.config import Settings
from cairn.daemon import queue
from cairn.daemon.pause import BUDGET, MODEL, Pause, backoff, clear_pause, read_pause, write_pause
from cairn.daemon.process import remove_pidfile, remove_warm_marker, write_pidfile, write_warm_marker
from cairn.daemon.server import SocketServer
from cairn.ingest import sync_file
from cairn.store.failures import describe_write_failure
from cairn.store.lock import StoreLockedError
from cairn.store.store import Store
from cairn.store.vectors import VectorStoreError
from cairn.transcripts.discover import is_subagent_file, is_transcript

log = logging.getLogger("cairn.daemon")

CLAIM_LIMIT = 50
POLL_SECONDS = 0.2
RETRY_BACKOFF_SECONDS = 5.0
BUDGET_RECHECK_SECONDS = 30.0  # how often a budget pause reads daily_token_budget again
CONTINUE_EVENT = "continue"  # a follow-up the daemon queues for itself: the file had more than one run


@dataclass
class CycleReport:
    """What one cycle did, for the log and the tests' understanding of a run."""

    claimed: int = 0
    skipped: int = 0
    messages_added: int = 0
    runs: int = 0
    failed_files: dict[str, str] = field(default_factory=dict)
    done: int = 0
    continued: int = 0
    retried: int = 0
    deferred: int = 0  # put back until the pause ends, no attempt counted
    paused: str | None = None  # why indexing is paused after this cycle


def subagent_files(path: Path) -> list[Path]:
    """The subagent transcripts of the session `path` belongs to: `<session>/subagents/agent-*.jsonl`.

    A `SubagentStop` hook names the parent's transcript, so capturing the parent also captures its
    subagents; the store files their messages under the parent session.
    """
    if is_subagent_file(path):
        return []
    return sorted(p for p in (path.parent / path.stem / "subagents").glob("agent-*.jsonl") if p.is_file())


class Daemon:
    """One daemon process: owns `store`, indexes with `choice`, stops when `stop()` is called."""

    def __init__(
        self, settings: Settings, store: Store, choice: ModelChoice, *, now: Clock = utc_now
    ) -> None:
        self.settings = settings
        self.store = store
        self.choice = choice
        self.now = now
        # An earlier daemon's pause: its failure count and start carry on, so the backoff keeps growing
        # and `since` stays the first failure; `serve` makes it due at once (a start is a good time to try).
        self.pause: Pause | None = read_pause(settings.home)
        self._budget_checked = time.monotonic()
        self.message_tokens = settings.continuous_token_budget // 2
        self._stopping = asyncio.Event()
        # Held by every cycle and by the socket's index/backfill/reindex_vectors ops, so the loop and
        # a CLI command never capture or index the same pending messages at once.
        self.index_lock = asyncio.Lock()
        # When a socket client last asked something (`used`): the daemon is idle only when neither
        # the queue nor a client has needed it for `idle_exit_seconds`, so one started for fast
        # searches (`cairn daemon start`) stays while they keep coming.
        self.last_request = time.monotonic()
        # Requests read and not yet answered: the daemon is not idle while one runs, however long it
        # takes (an import of a big export), or it exited under it and the client got no answer.
        self.answering = 0

    def used(self, answering: bool = False) -> None:
        """A socket client sent a request (`answering`) or got its answer: activity for the idle exit."""
        self.last_request = time.monotonic()
        self.answering = self.answering + 1 if answering else max(0, self.answering - 1)

    def stop(self) -> None:
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless asked to stop meanwhile; True when stopping."""
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            return False
        return True

    async def take_over(self) -> None:
        """Pick up what an earlier daemon left: items it left running, its indexing pause (tried again
        now: its deferred items are made due, while its failure count keeps the backoff growing), and
        vectors of runs it applied just before a crash (the next runs' lookups must see them).

        A budget pause whose budget is still spent today stays as it is: waking its items would only
        have them captured, planned and deferred to midnight again."""
        requeued = await queue.requeue_running(self.store.db)
        if requeued:
            log.info("requeued %s item(s) left running by an earlier daemon", requeued)
        if self.pause is not None and self.pause.kind == BUDGET and await self._budget_spent():
            log.info("indexing stays paused (%s)", self.pause.reason)
        elif self.pause is not None:
            self.pause.until = min(self.pause.until, self.now())
            woken = await queue.wake_deferred(self.store.db)
            log.info("indexing was paused (%s): trying again now, %s item(s) due", self.pause.reason, woken)
        try:
            await self.store.sync_vectors()
        except VectorStoreError as exc:
            log.warning("vector sync at start failed (the outbox keeps the work): %s", exc)

    async def serve(self) -> None:
        """Cycle until stopped, or until the queue has been empty for `idle_exit_seconds`."""
        await self.take_over()
        idle_since = time.monotonic()
        while not self.stopping:
            await self._recheck_budget()
            if self.index_lock.locked() or self.answering:  # a socket client waits on the daemon: not idle
                idle_since = time.monotonic()
            idle_since = max(idle_since, self.last_request)
            # Idle: nothing due before the idle exit would come. Items a pause deferred longer (a spent
            # budget until midnight, a rate limit's reset) wait in the queue; the next hook starts a
            # daemon, which tries them at once (`take_over`), so none sits up all night for them.
            horizon = self.now() + timedelta(seconds=self.settings.idle_exit_seconds)
            if await queue.depth(self.store.db, due_by=horizon) == 0:
                if time.monotonic() - idle_since >= self.settings.idle_exit_seconds:
                    if waiting := await queue.depth(self.store.db):
                        log.info(
                            "nothing due for %.0fs: exiting; %s item(s) wait for the indexing pause, "
                            "which the daemon the next hook starts tries at once",
                            self.settings.idle_exit_seconds,
                            waiting,
                        )
                    else:
                        log.info("queue empty for %.0fs: exiting", self.settings.idle_exit_seconds)
                    return
                await self._sleep(POLL_SECONDS)
                continue
            idle_since = time.monotonic()
            if await self._sleep(self.settings.batch_window_seconds):
                return
            items = await queue.claim(self.store.db, datetime.now(UTC), CLAIM_LIMIT)
            if not items:
                # Everything waiting is backing off after a failure: poll again, no busy loop.
                await self._sleep(POLL_SECONDS)
                continue
            report = await self.cycle(items)
            idle_since = time.monotonic()
            log.info(
                "cycle: %s claimed, %s skipped, %s new message(s), %s run(s), %s done, %s continued, "
                "%s retried, %s deferred%s",
                report.claimed,
                report.skipped,
                report.messages_added,
                report.runs,
                report.done,
                report.continued,
                report.retried,
                report.deferred,
                f" (indexing paused: {report.paused})" if report.paused else "",
            )

    async def cycle(self, items: list[queue.QueueItem]) -> CycleReport:
        """Capture the claimed files, make one indexing run over them, settle every item."""
        async with self.index_lock:
            return await self._cycle(items)

    async def _cycle(self, items: list[queue.QueueItem]) -> CycleReport:
        report = CycleReport(claimed=len(items))
        db = self.store.db
        files_of: dict[int, list[str]] = {}
        capture_errors: dict[str, str] = {}
        for item in items:
            path = Path(item.path).expanduser()
            try:
                wanted = path.is_file() and is_transcript(path)
            except Exception as exc:  # the file's fault, as in `_capture`: retried, then parked
                log.exception("could not tell whether %s is a transcript", item.path)
                key = str(path.resolve())
                capture_errors[key] = _one_line(exc)
                files_of[item.id] = [key]
                continue
            if not wanted:
                log.info(
                    "skipping %s: %s", item.path, "no such file" if not path.exists() else "no transcript"
                )
                await queue.done(db, [item.id])
                report.skipped += 1
                continue
            keys = []
            for file in [path, *subagent_files(path)]:
                key = str(file.resolve())
                keys.append(key)
                if key in capture_errors:
                    continue
                error = await self._capture(file, report)
                if error:
                    capture_errors[key] = error
            files_of[item.id] = keys

        keys = sorted({key for ks in files_of.values() for key in ks} - set(capture_errors))
        failed = await self._index(keys, report) if keys and not self.stopping else {}
        failed.update(capture_errors)
        report.failed_files = failed
        pause = self._paused()
        if pause is not None:
            report.paused = pause.reason
            await self._embed_captured()

        waiting = {path for _id, path, _session, _line in await pending_files(db, keys)} if keys else set()
        by_item = {item.id: item for item in items}
        outcome: dict[str, list[queue.QueueItem]] = defaultdict(list)
        for item_id, item_keys in files_of.items():
            item = by_item[item_id]
            errors = [failed[k] for k in item_keys if k in failed]
            if errors:
                await queue.retry(
                    db,
                    item,
                    errors[0],
                    max_attempts=self.settings.queue_max_attempts,
                    backoff=RETRY_BACKOFF_SECONDS,
                )
                report.retried += 1
            elif any(k in waiting for k in item_keys):
                if pause is not None:
                    await queue.defer(db, item, pause.until, pause.reason)
                    report.deferred += 1
                else:
                    outcome["continue"].append(item)
            else:
                outcome["done"].append(item)
        for item in outcome["continue"]:
            await queue.enqueue(db, item.path, item.session_id, CONTINUE_EVENT)
        finished = outcome["continue"] + outcome["done"]
        if finished:
            await queue.done(db, [item.id for item in finished])
        report.done, report.continued = len(outcome["done"]), len(outcome["continue"])
        return report

    async def _capture(self, file: Path, report: CycleReport) -> str | None:
        """Capture one file's new lines; the file's error, if capturing it failed.

        A fault of the file's own, whatever it raises, fails that file alone: its item is retried and
        then parked like any failing file. Raised out of the cycle it would stop the daemon with the
        item left `running`, which the next start requeues without counting an attempt, so one bad
        transcript crash-looped the daemon forever. A fault of the store (a full
        disk, a broken database) is no file's fault and still stops the daemon.
        """
        try:
            captured = await sync_file(self.store, file, self.settings)
        except (sqlite3.Error, VectorStoreError):
            raise
        except Exception as exc:
            if describe_write_failure(exc, self.settings.home) is not None:
                raise
            log.exception("capturing %s failed", file)
            return _one_line(exc)
        report.messages_added += captured.messages_added
        return captured.error

    async def _recheck_budget(self) -> None:
        """End a budget pause early when the user raised `daily_token_budget` (the pause's line tells
        them to): every `BUDGET_RECHECK_SECONDS` the setting is read again from config.toml, and with a
        budget no longer spent the deferred items are made due now. A config that cannot be read now
        changes nothing: the daemon keeps the settings it started with."""
        if self.pause is None or self.pause.kind != BUDGET:
            return
        if time.monotonic() - self._budget_checked < BUDGET_RECHECK_SECONDS:
            return
        self._budget_checked = time.monotonic()
        try:
            fresh = Settings.load(self.settings.home).daily_token_budget
        except ValueError:  # ConfigError, or a value pydantic refuses
            return
        if fresh == self.settings.daily_token_budget:
            return
        self.settings = self.settings.model_copy(update={"daily_token_budget": fresh})
        if await self._budget_spent():  # still spent under the new budget: the line says the new figures
            return
        log.info("daily_token_budget is now %s: indexing goes on", fresh)
        self.pause = None
        clear_pause(self.settings.home)
        await queue.wake_deferred(self.store.db)

    def _paused(self) -> Pause | None:
        """The pause in force now, if any (one whose time has come lets the next run probe the model)."""
        if self.pause is not None and self.now() < self.pause.until:
            return self.pause
        return None

    async def _embed_captured(self) -> None:
        """Embed what was captured while paused: search must find new messages by meaning too, and the
        vectors are local work, not the model's. The indexing runs do this when they run."""
        try:
            await self.store.sync_vectors()
        except VectorStoreError as exc:
            log.warning("vector sync while indexing is paused failed (the outbox keeps the work): %s", exc)

    async def _may_run(self) -> bool:
        """Whether a run may start now: not paused, and the daily token budget not spent (else the
        budget pause begins, until its reset at local midnight)."""
        if self._paused() is not None:
            return False
        return not await self._budget_spent()

    async def _budget_spent(self) -> bool:
        """Whether today's budget is spent; if so the budget pause is set (or renewed with today's
        figures), until its reset at local midnight."""
        if not applies(self.settings, self.choice.name):
            return False
        now = self.now()
        state = await budget_state(self.store.db, self.settings, now)
        if not state.exhausted:
            return False
        self._set_pause(
            Pause(
                kind=BUDGET,
                reason=spent_line(state),
                model=self.choice.name,
                since=self.pause.since if self.pause is not None and self.pause.kind == BUDGET else now,
                until=state.resets_at,
                last_failure=now,
                failures=0,
            )
        )
        return True

    async def _run(self, planned: PlannedBatch, report: CycleReport) -> RunOutcome:
        """One run; a systemic failure starts (or extends) the model pause, a success lifts any pause."""
        run = await index_batch(self.store, planned, self.choice, self.settings, now=self.now)
        report.runs += 1
        if run.ok:
            if self.pause is not None:
                log.info("indexing resumed: a run succeeded after the pause (%s)", self.pause.reason)
                self.pause = None
                clear_pause(self.settings.home)
        elif run.systemic:
            self._model_failed(run)
        return run

    def _model_failed(self, run: RunOutcome) -> None:
        now = self.now()
        earlier = self.pause if self.pause is not None and self.pause.kind == MODEL else None
        failures = earlier.failures + 1 if earlier is not None else 1
        if run.resume_at is not None and run.resume_at > now:
            until = run.resume_at
        else:
            until = now + backoff(self.settings.pause_backoff_seconds, failures)
        self._set_pause(
            Pause(
                kind=MODEL,
                reason=run.reason or (run.error or run.outcome).splitlines()[0],
                model=self.choice.name,
                since=earlier.since if earlier is not None else now,
                until=until,
                last_failure=now,
                failures=failures,
            )
        )

    def _set_pause(self, pause: Pause) -> None:
        self.pause = pause
        log.warning("indexing paused until %s: %s", pause.until.isoformat(timespec="seconds"), pause.reason)
        try:
            write_pause(self.settings.home, pause)
        except OSError as exc:  # the pause holds in this process; only its display is missing
            log.warning("could not record the indexing pause: %s", exc)

    async def _index(self, keys: list[str], report: CycleReport) -> dict[str, str]:
        """One agent run over the first continuous batch of `keys`; the files that failed, with errors.

        When a run over several files fails for a reason of its own (not the API's), each of its files
        gets one run alone, so only the file at fault is held back. A failure of the model itself, or
        a spent budget, fails no file: it pauses indexing (`self.pause`) and the caller defers them.
        """
        planned = await plan_batches(
            self.store.db, mode="continuous", paths=keys, message_tokens=self.message_tokens
        )
        if not planned or not await self._may_run():
            return {}
        first = planned[0]
        run = await self._run(first, report)
        if run.ok or run.systemic:
            return {}
        files = sorted({cursor.path for cursor in first.cursors})
        error = run.error or run.outcome
        if len(files) == 1:
            log.warning("indexing run over %s file(s) failed: %s", len(files), error)
            return dict.fromkeys(files, error)
        log.warning("indexing run over %s files failed (%s); retrying them one by one", len(files), error)
        failed: dict[str, str] = {}
        for path in files:
            if self.stopping or not await self._may_run():
                break
            alone = await plan_batches(
                self.store.db, mode="continuous", paths=[path], message_tokens=self.message_tokens
            )
            if not alone:
                continue
            single = await self._run(alone[0], report)
            if not single.ok and not single.systemic:
                failed[path] = single.error or single.outcome
        return failed


def _one_line(exc: BaseException) -> str:
    """An exception as a queue item's `last_error`: its type and first line, bounded."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


# How long a starting daemon waits for a store another process holds briefly (an MCP call, a query).
LOCK_WAIT_SECONDS = 2.0


def _warm_up(store: Store) -> None:
    """Load the tokenizer and the embedding model now, in a thread, rather than in the first request:
    a recall hook gives the daemon a quarter of a second, and loading both takes longer than that.

    Then say so in `daemon.warm`: until it names this process, the recall hook waits longer for an
    answer (`cairn.daemon.recall.adapt`). Also after a failure — waiting longer would not help then.
    """
    try:
        from cairn.tokens import count_tokens

        count_tokens("warm up")
        store.vectors.embed(["warm up"])
    except Exception:
        log.warning("warming up the tokenizer and embedding model failed", exc_info=True)
    try:
        write_warm_marker(store.settings)
    except OSError:
        log.warning("could not write the warm-up marker", exc_info=True)


async def run_daemon(settings: Settings) -> int:
    """Run the daemon in this process until SIGTERM/SIGINT or idle exit; the process's exit code.

    The first signal lets the current cycle finish; a second one cancels it — safe too, since every
    write is one transaction and claimed items left `running` are requeued by the next start.
    """
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            # Steady: the daemon embeds beside the user's work, so it leaves most CPUs to it.
            store = await Store.open(settings, embedding_mode="steady")
            break
        except StoreLockedError as exc:
            # An MCP server or a short command may hold the store for a moment; another daemon or a
            # long job holds it longer, and then this one is not needed.
            if time.monotonic() >= deadline:
                log.error("%s", exc)
                return 1
            await asyncio.sleep(0.1)
    try:
        choice = resolve_model(settings)
    except ModelConfigError as exc:
        log.error("cannot start the daemon: %s", exc)
        await store.close()
        return 1
    daemon = Daemon(settings, store, choice)
    # Listening before the pidfile names this process, so whoever sees the pidfile can connect.
    server = SocketServer(settings, store, daemon.index_lock, on_request=daemon.used)
    try:
        await server.start()
    except OSError as exc:
        log.error(
            "cannot listen on %s (other cairn commands will report the store in use): %s",
            settings.socket_path,
            exc,
        )
    write_pidfile(settings)
    log.info("daemon started (pid file %s, model %s)", settings.pid_path, choice.name)
    loop = asyncio.get_running_loop()
    warm = asyncio.ensure_future(asyncio.to_thread(_warm_up, store))
    task = asyncio.ensure_future(daemon.serve())

    def on_signal(signum: int) -> None:
        if daemon.stopping:
            log.warning("second %s: abandoning the current cycle", signal.Signals(signum).name)
            task.cancel()
        else:
            log.info("%s: stopping after the current cycle", signal.Signals(signum).name)
            daemon.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    code = 0
    try:
        await task
    except asyncio.CancelledError:
        await queue.requeue_running(store.db)
    except Exception as exc:
        if (full := describe_write_failure(exc, settings.home)) is not None:
            log.error("daemon stopped: %s", full)  # the user's to fix (free space), not a bug
        else:
            log.exception("daemon failed")
        code = 1
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await asyncio.gather(warm, return_exceptions=True)
        try:
            await server.close()  # no request may outlive the store it reads
        finally:
            remove_warm_marker(settings)
            remove_pidfile(settings)
            try:
                await choice.aclose()
            finally:
                await store.close()
        log.info("daemon stopped")
    return code
