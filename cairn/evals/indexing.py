"""The indexing eval: capture and index a dataset into a fresh store, then score it against the labels.

The store is built exactly as a user's would be — transcripts captured by `sync_paths`, indexed by
`index_pending` in backfill mode with the chosen model and prompt, vectors synced — so the numbers say
how cairn itself does, not a test double of it. Settings are cairn's defaults, whatever `CAIRN_*`
variables or config the user has (only how to reach the model is taken from them): two runs differ in
the model and the prompt, nothing else. The model defaults to `offline`: an eval never spends money
unless a paid model is asked for by name.

The store stays on disk after the run (its `home` is in the result) so the retrieval eval can search
the same index; the caller decides when to delete it.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cairn.agent.batches import plan_batches
from cairn.agent.indexer import APPLIED, index_pending
from cairn.agent.models import OFFLINE, ModelChoice, request_settings, resolve_model
from cairn.config import Settings
from cairn.errors import Failure
from cairn.evals import scoring
from cairn.evals.dataset import Dataset
from cairn.evals.record import RecordingModel, ReplayMismatchError, read_recording, replay_model, replay_of
from cairn.evals.state import score, scoring_state
from cairn.ingest import sync_paths
from cairn.pricing import Price, cost
from cairn.prompts import load_prompt
from cairn.store.store import Store

# Taken from the user's settings: how to reach the model, which says nothing about how cairn indexes.
# The user's settings an eval keeps: how to reach the model, and the daily budget as a cap on one eval
# run (its own store's ledger starts empty, so it does not share the daemon's day).
CONNECTION_SETTINGS = ("model_base_url", "model_retries", "claude_code_cli", "daily_token_budget")
SESSIONS_DIR = "sessions"
SESSIONS_PLACEHOLDER = "$EVAL_SESSIONS"

Progress = Callable[[str, int, int | None], None]


class IndexingStoppedError(Failure):
    """The eval's indexing pass stopped early (budget spent, model unreachable): its scores would lie."""


class IndexingRun(BaseModel):
    """One scored indexing run; saved as JSON by `cairn.evals.runs` and compared by `cairn.evals.compare`."""

    dataset: str
    model: str
    prompt_version: str
    created_at: str
    tolerance: int
    cases: list[str]
    metrics: dict[str, Any]
    per_case: dict[str, dict[str, Any]]
    misses: dict[str, list[dict[str, Any]]]
    cost: dict[str, Any]
    home: Path
    idea_map: dict[int, tuple[str, str]]
    case_of_file: dict[str, str]
    recorded_to: str | None = None
    replayed_from: str | None = None
    retrieval: dict[str, Any] | None = Field(default=None, description="Filled in by the retrieval eval.")


def eval_settings(home: Path, base: Settings | None = None) -> Settings:
    """cairn's default settings for the store at `home`, ignoring `CAIRN_*` variables and config files.

    Every field is passed explicitly because explicit values outrank the environment; only the
    connection fields and the budget are copied from `base` (the user's settings), when given.
    """
    values: dict[str, Any] = {
        name: info.get_default(call_default_factory=True)
        for name, info in Settings.model_fields.items()
        if name != "home"
    }
    if base is not None:
        values.update({name: getattr(base, name) for name in CONNECTION_SETTINGS})
    return Settings.load(home, **values)


def _choose_model(
    settings: Settings, model: str | None, replay: Path | None, placeholders: dict[str, str]
) -> ModelChoice:
    if replay is None:
        return resolve_model(settings, model or OFFLINE)
    recorded = read_recording(replay).model
    if model is not None and model != recorded:
        raise ReplayMismatchError(f"{replay} was recorded with model {recorded!r}, not {model!r}")
    return ModelChoice(
        recorded,
        replay_model(replay, placeholders=placeholders),
        request_settings(settings, sdk_retries=True),
    )


def _prompt_version(prompt_version: str | None, replay: Path | None) -> str | None:
    """The asked version; on replay without one, the version the recording was made with."""
    if prompt_version is None and replay is not None:
        return read_recording(replay).header.get("prompt_version")
    return prompt_version


async def _capture(
    store: Store, dataset: Dataset, settings: Settings, sessions: Path, progress: Progress
) -> dict[str, str]:
    """Copy every case's transcript into the store's directory and capture it; store path -> case."""
    sessions.mkdir(parents=True, exist_ok=True)
    case_of_file: dict[str, str] = {}
    for case in dataset.cases:
        target = sessions / f"{case.name}.jsonl"
        shutil.copyfile(case.transcript, target)
        case_of_file[str(target.resolve())] = case.name
    done = 0

    def advanced(_path: Path) -> None:
        nonlocal done
        done += 1
        progress("capture", done, len(case_of_file))

    # Finished files, just copied (a fresh mtime): a last line without its newline is read at once.
    report = await sync_paths(
        store, [Path(p) for p in case_of_file], settings, on_file=advanced, settle_seconds=0
    )
    if report.errors:
        raise OSError("; ".join(f"{f.path}: {f.error}" for f in report.errors))
    return case_of_file


async def _cost(store: Store, model: str, prices: dict[str, Price] | None, wall: float) -> dict[str, Any]:
    applied = ", ".join(f"'{outcome}'" for outcome in sorted(APPLIED))
    row = await store.db.fetchone(
        f"""
        SELECT count(*) AS batches,
               coalesce(sum(outcome NOT IN ({applied})), 0) AS failed_runs,
               coalesce(sum(json_array_length(rejected_items)), 0) AS rejected_items,
               coalesce(sum(CASE WHEN outcome IN ({applied}) THEN messages ELSE 0 END), 0) AS messages,
               coalesce(sum(input_tokens), 0) AS input_tokens,
               coalesce(sum(output_tokens), 0) AS output_tokens,
               coalesce(sum(tool_calls), 0) AS tool_calls,
               coalesce(sum(requests), 0) AS requests,
               coalesce(sum(seconds), 0.0) AS seconds
        FROM index_runs
        """
    )
    assert row is not None
    figures = dict(row)
    batches = figures["batches"] or 1
    dollars = (
        None if model == OFFLINE else cost(model, figures["input_tokens"], figures["output_tokens"], prices)
    )
    messages = figures["messages"]
    return {
        **figures,
        "seconds": round(figures["seconds"], 3),
        "wall_seconds": round(wall, 3),
        "seconds_per_batch": round(figures["seconds"] / batches, 3),
        "tokens_per_batch": round((figures["input_tokens"] + figures["output_tokens"]) / batches, 1),
        "tool_calls_per_batch": round(figures["tool_calls"] / batches, 2),
        "dollars": None if dollars is None else round(dollars, 6),
        "dollars_per_1k_messages": None
        if dollars is None or not messages
        else round(dollars * 1000 / messages, 6),
    }


def _no_progress(_step: str, _done: int, _total: int | None) -> None:
    return None


async def run_indexing(
    dataset: Dataset,
    settings_home: Path,
    *,
    model: str | None = None,
    prompt_version: str | None = None,
    record: Path | None = None,
    replay: Path | None = None,
    tolerance: int = 2,
    base_settings: Settings | None = None,
    prices: dict[str, Price] | None = None,
    progress: Progress = _no_progress,
) -> IndexingRun:
    """Index `dataset` into a fresh store at `settings_home` and score it; the store is left in place.

    `model` is a cairn model string (default `offline`); with `replay` it defaults to the recorded one
    and must match it. `record` writes the run's model traffic to a file, `replay` answers from one
    (`cairn.evals.record`). Raises `ReplayMismatchError` when a replay meets a request it did not record,
    `PromptNotFoundError` for an unknown prompt version, `ModelConfigError` for a model that cannot be set
    up, and `ValueError` when `settings_home` already holds something.
    """
    settings_home = settings_home.expanduser().resolve()
    if settings_home.exists() and any(settings_home.iterdir()):
        raise ValueError(f"{settings_home}: the eval needs an empty directory for its store")
    settings = eval_settings(settings_home, base_settings)
    if replay is not None:  # a replay spends nothing: the recorded tokens must not stop it at a budget
        settings = settings.model_copy(update={"daily_token_budget": 0})
    prompt = load_prompt("indexer", _prompt_version(prompt_version, replay))
    sessions = settings_home / SESSIONS_DIR
    placeholders = {str(sessions.resolve()): SESSIONS_PLACEHOLDER}
    choice = _choose_model(settings, model, replay, placeholders)
    if record is not None:
        header = {
            "model": choice.name,
            "prompt": prompt.id,
            "prompt_version": prompt.version,
            "dataset": dataset.name,
        }
        wrapped = RecordingModel(choice.model, record, header=header, placeholders=placeholders)
        choice = dataclasses.replace(choice, model=wrapped)
    replayer = replay_of(choice.model)
    started = time.perf_counter()
    settings_home.mkdir(parents=True, exist_ok=True)
    store = await Store.open(settings, embedding_mode="bulk")  # an eval is waited on, like a backfill
    try:
        case_of_file = await _capture(store, dataset, settings, sessions, progress)
        total = len(await plan_batches(store.db, mode="backfill"))
        done = 0

        def batch_done(_planned: Any, _run: Any) -> None:
            nonlocal done
            done += 1
            progress("index", done, total)

        indexed = await index_pending(
            store,
            settings,
            model=choice,
            mode="backfill",
            prompt=prompt,
            on_batch=batch_done,
            should_stop=lambda: replayer is not None and replayer.error is not None,
        )
        if replayer is not None:
            replayer.finish()
        if indexed.stopped is not None:
            # A spent daily budget or a model that cannot be reached: scores of part of the dataset
            # would read as the model's quality.
            raise IndexingStoppedError(
                f"indexing stopped before the dataset was indexed ({indexed.stopped}); no scores were written"
            )
        await store.sync_vectors()
        state = await scoring_state(store, case_of_file, dataset)
        scores, idea_map = score(dataset, state, tolerance)
        figures = await _cost(store, choice.name, prices, time.perf_counter() - started)
    finally:
        await choice.aclose()
        await store.close()
    labels = {case.name: case.labels for case in dataset.cases}
    return IndexingRun(
        dataset=dataset.name,
        model=choice.name,
        prompt_version=prompt.id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tolerance=tolerance,
        cases=list(labels),
        metrics=scores.totals(),
        per_case=scores.per_case(),
        misses=scoring.misses(labels, state.ideas, idea_map, tolerance),
        cost=figures,
        home=settings_home,
        idea_map=idea_map,
        case_of_file=case_of_file,
        recorded_to=str(record) if record else None,
        replayed_from=str(replay) if replay else None,
    )
