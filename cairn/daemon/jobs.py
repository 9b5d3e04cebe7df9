"""The long store operations — `index`, `backfill`, `reindex-vectors` — as JSON in, JSON out.

The daemon runs them for its socket clients and the CLI runs the very same functions when no daemon
runs, so a command prints the same either way. Each reports progress through `emit` (plain dicts: the
daemon streams them to the client as `{"progress": ...}` lines) and asks `should_stop` at every batch
boundary — never inside a batch, whose work is applied whole or not at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.store.store import Store

Emit = Callable[[dict[str, Any]], None]
ShouldStop = Callable[[], bool]


def _no_emit(_event: dict[str, Any]) -> None:
    return None


def _never() -> bool:
    return False


def index_json(report: Any) -> dict[str, Any]:
    """An `IndexReport` as the JSON `cairn index --json` prints (without `messages_added`)."""
    return {
        "batches": report.batches,
        "runs_ok": report.ok,
        "runs_failed": len(report.failures),
        "skipped_batches": report.skipped_batches,
        "stopped": report.stopped,
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
    emit: Emit = _no_emit,
    should_stop: ShouldStop = _never,
) -> dict[str, Any]:
    """Capture the transcripts under `paths`, then index what is stored and not indexed yet."""
    from cairn.agent.indexer import index_pending
    from cairn.agent.models import resolve_model
    from cairn.ingest import sync_paths
    from cairn.transcripts.discover import find_transcripts

    files = list(find_transcripts([Path(p) for p in paths]))
    choice = resolve_model(settings, model)  # a model that cannot be set up fails before any work
    try:
        emit({"step": "read", "total": len(files), "advance": 0})
        captured = await sync_paths(
            store, files, settings, on_file=lambda _p: emit({"step": "read", "advance": 1})
        )
        indexed = await index_pending(
            store,
            settings,
            model=choice,
            paths=[str(f) for f in files],
            on_batch=lambda _planned, _run: emit({"step": "index", "advance": 1}),
            should_stop=should_stop,
        )
    finally:
        await choice.aclose()
    return {"messages_added": captured.messages_added, **index_json(indexed)}


async def reindex_vectors_job(
    store: Store, settings: Settings, *, emit: Emit = _no_emit, should_stop: ShouldStop = _never
) -> dict[str, Any]:
    """Rebuild every Chroma collection from SQLite; how many vectors were written."""
    n = await store.reindex_vectors(
        progress=lambda done, total: emit({"step": "reindex", "completed": done, "total": total})
    )
    return {"vectors": n}


async def backfill_job(
    store: Store,
    settings: Settings,
    *,
    paths: list[str] | None = None,
    model: str | None = None,
    since: str | None = None,
    project: str | None = None,
    dry_run: bool = False,
    emit: Emit = _no_emit,
    should_stop: ShouldStop = _never,
) -> dict[str, Any]:
    """`cairn backfill`: the JSON it prints with `--json`, dry run or not."""
    from cairn.agent.models import resolve_model
    from cairn.backfill import (
        OUTPUT_RATIO,
        Estimate,
        discover_sessions,
        estimate,
        parse_since,
        pending_messages,
        run_backfill,
        run_overhead_tokens,
        select_sessions,
        session_paths,
    )
    from cairn.doctor import default_model
    from cairn.ingest import sync_paths
    from cairn.pricing import PRICES_AS_OF, load_prices

    since_at = parse_since(since) if since else None
    prices = load_prices(settings)
    roots = [Path(p) for p in paths] if paths else [settings.projects_dir]
    sessions = select_sessions(discover_sessions(roots), since=since_at, project=project)
    files = [f for s in sessions for f in s.files]
    model_name = (model or settings.model or default_model()).strip()
    choice = None if dry_run else resolve_model(settings, model)
    try:
        captured = await sync_paths(store, files, settings, vectors=not dry_run)
        if dry_run:
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
        pending = await pending_messages(store.db, [p for s in sessions for p in session_paths(s)])
        emit({"step": "start", "total": pending, "sessions": len(sessions)})
        started = time.perf_counter()

        def on_batch(_session: Any, planned: Any, run: Any) -> None:
            emit(
                {
                    "step": "batch",
                    "messages": planned.message_count,
                    "ideas": sum(run.stats.ideas_by_intent.values()) if run.stats else 0,
                    "tokens": run.input_tokens + run.output_tokens,
                }
            )

        def on_session(result: Any) -> None:
            emit({"step": "session", **result.as_dict(), "elapsed": time.perf_counter() - started})

        report = await run_backfill(
            store,
            settings,
            sessions,
            choice,
            should_stop=should_stop,
            on_batch=on_batch,
            on_session=on_session,
        )
        return {
            "model": model_name,
            "sessions_total": report.total,
            "sessions_done": report.done,
            "interrupted": report.interrupted,
            "messages_added": captured.messages_added,
            "wall_seconds": round(time.perf_counter() - started, 3),
            "sessions": [s.as_dict() for s in report.sessions],
            **index_json(report.index),
        }
    finally:
        if choice is not None:
            await choice.aclose()


JOBS = {"index": index_job, "backfill": backfill_job, "reindex_vectors": reindex_vectors_job}
