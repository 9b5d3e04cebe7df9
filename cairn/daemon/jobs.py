"""The long store operations — `index`, `backfill`, `reindex`, `reindex-vectors` — as JSON in, JSON out.

The daemon runs them for its socket clients and the CLI runs the very same functions when no daemon
runs, so a command prints the same either way. Each reports progress through `emit` (plain dicts: the
daemon streams them to the client as `{"progress": ...}` lines) and asks `should_stop` at every batch
boundary — never inside a batch, whose work is applied whole or not at all.

Progress comes per phase — capture, embed, index (`cairn.progress`) — so the command can show the whole
job, not only its indexing: on a large history capture and embedding are most of the wait.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn.config import Settings
from cairn.progress import Emit, Phases, no_emit
from cairn.store.store import Store

if TYPE_CHECKING:
    from cairn.ingest import SyncReport

ShouldStop = Callable[[], bool]


def _never() -> bool:
    return False


async def capture_phase(store: Store, files: list[Path], settings: Settings, phases: Phases) -> SyncReport:
    """Store what is new in `files`, one "capture" step per file with the messages it added.

    `sync_paths` does the same without saying how many messages each file gave, and on a large
    history capture is minutes of reading that a user should see moving.
    """
    from cairn.ingest import SyncReport, sync_file

    report = SyncReport()
    phases.start("capture", len(files), "files")
    for path in files:
        synced = await sync_file(store, path, settings)
        report.files.append(synced)
        phases.advance("capture", 1, messages=synced.messages_added)
    phases.end("capture")
    return report


class _StopEmbedding(Exception):
    """Raised from the outbox's progress callback to leave it between two committed batches."""


async def embed_phase(store: Store, phases: Phases, should_stop: ShouldStop = _never) -> int:
    """Embed every queued vector change ("embed" steps as batches land); how many were applied.

    Embedding a large history takes minutes, so `should_stop` is asked after every batch, as the
    indexer asks it between runs: what is written stays, the outbox keeps the rest for the next run.
    """
    written = 0

    def progress(done: int, total: int) -> None:
        nonlocal written
        written = done
        phases.update("embed", done, total)
        if should_stop():
            raise _StopEmbedding

    phases.start("embed", None, "vectors")
    try:
        written = await store.sync_vectors(progress=progress)
    except _StopEmbedding:
        pass
    finally:
        phases.end("embed")
    return written


@asynccontextmanager
async def embedding_alongside(
    store: Store, settings: Settings, phases: Phases, should_stop: ShouldStop = _never
) -> AsyncIterator[Callable[[], int]]:
    """Embed in the background while the body captures and indexes (`Settings.embed_alongside`).

    Yields how many vectors were written, to ask once the block is over. Off, the block runs as
    before and the queue is embedded after it, as one "embed" phase.
    """
    written = 0
    if not settings.embed_alongside:
        yield lambda: written
        written = await embed_phase(store, phases, should_stop)
        return
    started = False

    def progress(done: int, total: int) -> None:
        # The phase starts at the worker's first report, which comes after the body has started
        # its own first phase (capture): the display keeps the order capture, embedding, indexing.
        nonlocal started
        if not started:
            phases.start("embed", None, "vectors")
            started = True
        phases.update("embed", done, total)

    try:
        async with store.vectors_alongside(progress=progress, should_stop=should_stop) as worker:
            yield lambda: worker.written
    finally:
        if not started:
            phases.start("embed", None, "vectors")
        phases.end("embed")


def index_json(report: Any) -> dict[str, Any]:
    """An `IndexReport` as the JSON `cairn index --json` prints (without `messages_added`)."""
    return {
        "batches": report.batches,
        "runs_ok": report.ok,
        "runs_failed": len(report.failures),
        "skipped_batches": report.skipped_batches,
        "stopped": report.stopped,
        # Set when the daily token budget stopped the job: when indexing may go on (local ISO time).
        "paused_until": report.paused_until.isoformat(timespec="seconds") if report.paused_until else None,
        # Files left to index that were queued for the daemon until then (`defer_rest`).
        "deferred_files": report.deferred_files,
        "applied": asdict(report.stats),
        "rejected": report.rejected,
        "input_tokens": report.input_tokens,
        "output_tokens": report.output_tokens,
        "tool_calls": report.tool_calls,
        "requests": report.requests,
        "seconds": round(report.seconds, 3),
        "failures": [{"run_id": r.run_id, "outcome": r.outcome, "error": r.error} for r in report.failures],
    }


async def index_job(
    store: Store,
    settings: Settings,
    *,
    paths: list[str],
    model: str | None = None,
    emit: Emit = no_emit,
    should_stop: ShouldStop = _never,
) -> dict[str, Any]:
    """Capture the transcripts under `paths`, embed them, then index what is stored and not indexed yet."""
    from cairn.agent.models import resolve_model
    from cairn.transcripts.discover import find_transcripts

    started = time.perf_counter()
    files = list(find_transcripts([Path(p) for p in paths]))
    choice = resolve_model(settings, model)  # a model that cannot be set up fails before any work
    phases = Phases(emit)
    try:
        async with embedding_alongside(store, settings, phases, should_stop) as vectors_written:
            captured = await capture_phase(store, files, settings, phases)
            indexed = await index_phase(store, settings, choice, [str(f) for f in files], phases, should_stop)
        vectors = vectors_written()
    finally:
        await choice.aclose()
    return {
        "model": choice.name,
        "messages_added": captured.messages_added,
        "vectors_written": vectors,
        **index_json(indexed),
        **phases.rounded(),
        "wall_seconds": round(time.perf_counter() - started, 3),
    }


async def index_phase(
    store: Store,
    settings: Settings,
    choice: Any,
    paths: list[str] | None,
    phases: Phases,
    should_stop: ShouldStop = _never,
) -> Any:
    """Index the stored, not-yet-indexed messages of `paths` (all when None) as one "index" phase.

    Its total is the messages waiting, so the display can give a rate and an ETA in messages.
    """
    from cairn.agent.indexer import index_pending
    from cairn.backfill import pending_messages

    waiting = await pending_messages(store.db, paths)
    phases.start("index", waiting, "messages")
    billed = _billed(settings, choice)

    def on_batch(planned: Any, run: Any) -> None:
        phases.advance("index", planned.message_count, **_batch_counts(run, billed))

    try:
        indexed = await index_pending(
            store, settings, model=choice, paths=paths, on_batch=on_batch, should_stop=should_stop
        )
    finally:
        phases.end("index")
    await defer_rest(store, indexed, paths)
    return indexed


async def defer_rest(store: Store, report: Any, paths: list[str] | None) -> None:
    """When the daily budget stopped indexing, queue the files left (of `paths`; None: all) for the
    daemon, deferred until the budget's reset: the daemon then indexes them on its own, within the next
    day's budget, where it would otherwise never hear of them (no hook fires for an old session).
    Their messages are stored and their cursors unmoved, so nothing is indexed twice, whoever gets
    there first — the daemon or a rerun of the command. Sets `report.deferred_files`."""
    from cairn.agent.batches import pending_files
    from cairn.daemon import queue

    if report.paused_until is None:
        return
    rest = await pending_files(store.db, paths)
    report.deferred_files = await queue.defer_paths(
        store.db,
        [(path, session) for _id, path, session, _line in rest],
        report.paused_until,
        report.stopped or "daily indexing budget spent",
    )


def _batch_counts(run: Any, billed: bool) -> dict[str, int]:
    """What a finished indexing run adds to the display's side counts: its ideas, and its tokens when
    they are paid for (an offline or local model's count would read like spend)."""
    counts = {"ideas": sum(run.stats.ideas_by_intent.values()) if run.ok and run.stats else 0}
    if billed:
        counts["tokens"] = run.input_tokens + run.output_tokens
    return counts


def _billed(settings: Settings, choice: Any) -> bool:
    """Whether the runs of `choice` (a `ModelChoice`, a model string or None for the default) are paid."""
    from cairn.agent.model_names import default_model
    from cairn.pricing import billed

    name = getattr(choice, "name", None) or choice or settings.model or default_model()
    return billed(str(name), settings.model_base_url)


async def reindex_vectors_job(
    store: Store, settings: Settings, *, emit: Emit = no_emit, should_stop: ShouldStop = _never
) -> dict[str, Any]:
    """Rebuild every Chroma collection from SQLite; how many vectors were written."""
    phases = Phases(emit)
    phases.start("embed", None, "vectors")
    n = await store.reindex_vectors(progress=lambda done, total: phases.update("embed", done, total))
    phases.end("embed")
    data: dict[str, Any] = {"vectors": n}
    if (moved := store.vectors.moved_aside) is not None:
        data["moved_aside"], data["damage"] = str(moved[0]), moved[1]
    return data


async def backfill_job(
    store: Store,
    settings: Settings,
    *,
    paths: list[str] | None = None,
    model: str | None = None,
    since: str | None = None,
    project: str | None = None,
    dry_run: bool = False,
    emit: Emit = no_emit,
    should_stop: ShouldStop = _never,
) -> dict[str, Any]:
    """`cairn backfill`: the JSON it prints with `--json`, dry run or not."""
    from cairn.agent.model_names import default_model
    from cairn.agent.models import resolve_model
    from cairn.backfill import (
        OUTPUT_RATIO,
        Estimate,
        discover_sessions,
        estimate,
        parse_since,
        run_overhead_tokens,
        select_sessions,
    )
    from cairn.pricing import PRICES_AS_OF, load_prices

    started = time.perf_counter()
    since_at = parse_since(since) if since else None
    prices = load_prices(settings)
    roots = [Path(p) for p in paths] if paths else [settings.projects_dir]
    sessions = select_sessions(discover_sessions(roots), since=since_at, project=project)
    files = [f for s in sessions for f in s.files]
    model_name = (model or settings.model or default_model()).strip()
    choice = None if dry_run else resolve_model(settings, model)
    phases = Phases(emit)
    try:
        if dry_run:
            captured = await capture_phase(store, files, settings, phases)
            overhead = run_overhead_tokens()
            total = Estimate()
            rows = []
            for session in sessions:
                est = await estimate(store.db, session, overhead)
                total.add(est)
                rows.append({**session.describe(), **est.as_dict(prices, model_name)})
            return {
                "dry_run": True,
                "model": model_name,
                "prices_as_of": PRICES_AS_OF,
                "output_ratio": OUTPUT_RATIO,
                "messages_added": captured.messages_added,
                "sessions": rows,
                "total": total.as_dict(prices, model_name),
            }
        assert choice is not None
        async with embedding_alongside(store, settings, phases, should_stop) as vectors_written:
            captured = await capture_phase(store, files, settings, phases)
            report = await _index_sessions(store, settings, sessions, choice, phases, should_stop)
        vectors = vectors_written()
        return {
            "model": model_name,
            "sessions_total": report.total,
            "sessions_done": report.done,
            "interrupted": report.interrupted,
            "messages_added": captured.messages_added,
            "vectors_written": vectors,
            "messages_indexed": sum(s.messages for s in report.sessions),
            **phases.rounded(),
            # The job's own time; the command replaces it by its whole wall time (`cairn.clock`).
            "wall_seconds": round(time.perf_counter() - started, 3),
            "sessions": [s.as_dict() for s in report.sessions],
            **index_json(report.index),
        }
    finally:
        if choice is not None:
            await choice.aclose()


async def _index_sessions(
    store: Store,
    settings: Settings,
    sessions: list[Any],
    choice: Any,
    phases: Phases,
    should_stop: ShouldStop,
) -> Any:
    """The backfill's "index" phase: `run_backfill` over `sessions`, one "session" event per session."""
    from cairn.backfill import pending_messages, run_backfill, session_paths

    waiting = await pending_messages(store.db, [p for s in sessions for p in session_paths(s)])
    phases.start("index", waiting, "messages")
    started = time.perf_counter()
    billed = _billed(settings, choice)
    try:
        report = await run_backfill(
            store,
            settings,
            sessions,
            choice,
            should_stop=should_stop,
            on_batch=lambda _s, planned, run: phases.advance(
                "index", planned.message_count, **_batch_counts(run, billed)
            ),
            on_session=lambda result: phases.session(
                {
                    **result.as_dict(),
                    "of": len(sessions),
                    "elapsed": time.perf_counter() - started,
                    "billed": billed,
                }
            ),
        )
    finally:
        phases.end("index")
    await defer_rest(store, report.index, [p for s in sessions for p in session_paths(s)])
    return report


async def reindex_job(
    store: Store,
    settings: Settings,
    *,
    model: str | None = None,
    project: str | None = None,
    session: str | None = None,
    since: str | None = None,
    dry_run: bool = False,
    emit: Emit = no_emit,
    should_stop: ShouldStop = _never,
) -> dict[str, Any]:
    """`cairn reindex`: the JSON it prints with `--json`; the dry run prices it as backfill's does."""
    from cairn.agent.model_names import default_model
    from cairn.agent.models import resolve_model
    from cairn.backfill import OUTPUT_RATIO, Estimate, parse_since, run_overhead_tokens
    from cairn.pricing import PRICES_AS_OF, load_prices
    from cairn.reindex.run import Selection, estimates, reindex, select_sessions, waiting_messages

    started = time.perf_counter()
    selection = Selection(project=project, session=session, since=parse_since(since) if since else None)
    prices = load_prices(settings)
    sessions = await select_sessions(store.db, selection)
    model_name = (model or settings.model or default_model()).strip()
    if dry_run:
        total, rows = Estimate(), []
        for stored, est in await estimates(store, settings, sessions, run_overhead_tokens()):
            total.add(est)
            rows.append({**stored.describe(), **est.as_dict(prices, model_name)})
        return {
            "dry_run": True,
            "model": model_name,
            "prices_as_of": PRICES_AS_OF,
            "output_ratio": OUTPUT_RATIO,
            "sessions": rows,
            "total": total.as_dict(prices, model_name),
        }
    choice = resolve_model(settings, model)
    phases = Phases(emit)
    billed = _billed(settings, choice)
    try:
        phases.start("index", await waiting_messages(store, sessions), "messages")
        try:
            report = await reindex(
                store,
                settings,
                sessions,
                choice,
                selection,
                embed=_embed_or_none(store),
                should_stop=should_stop,
                on_batch=lambda planned, run: phases.advance(
                    "index", planned.message_count, **_batch_counts(run, billed)
                ),
                on_session=lambda result: phases.session(
                    {
                        **result.as_dict(),
                        "of": len(sessions),
                        "elapsed": time.perf_counter() - started,
                        "billed": billed,
                    }
                ),
            )
        finally:
            phases.end("index")
        vectors = await embed_phase(store, phases, should_stop)
    finally:
        await choice.aclose()
    return {
        "model": choice.name,
        "job": report.job_id,
        "sessions_total": report.total,
        "sessions_already_done": report.already_done,
        "sessions_swapped": report.swapped,
        "interrupted": report.interrupted,
        "vectors_written": vectors,
        **phases.rounded(),
        "wall_seconds": round(time.perf_counter() - started, 3),
        "sessions": [s.as_dict() for s in report.sessions],
        **index_json(report.index),
    }


def _embed_or_none(store: Store) -> Any:
    """The store's embedding function for entity matching in the scratch store; None without vectors."""
    from cairn.agent.indexer import store_embedder
    from cairn.store.vectors import VectorStoreError

    try:
        return store_embedder(store)
    except VectorStoreError:
        return None


JOBS = {
    "index": index_job,
    "backfill": backfill_job,
    "reindex_vectors": reindex_vectors_job,
    "reindex": reindex_job,
}
