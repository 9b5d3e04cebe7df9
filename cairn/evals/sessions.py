"""`cairn eval sessions`: what the indexer distils from labelled real sessions, reported per split.

Each selected session (`cairn.evals.splits`) is backfilled alone into a fresh store under `home`, as
`cairn backfill` would (`cairn.evals.benchmark.backfill`, the offline indexer unless a model is named),
and the store is read back: its user and assistant messages, every idea with its line, the ideas marked
answered (or done) with the line that settled them, and what SessionStart shows in the session's project.
`cairn.evals.coverage` scores the first three, `cairn.evals.truth.score_session` the last; figures are
kept per session and summed per project and per split, never across splits — a figure on what was
tuned on must not be read as one on what was not.

`weights` sets `CAIRN_OFFLINE_WEIGHTS` for the run (the offline indexer's learned model reads it; an
eval of a model trained without one project names that model's file) and is recorded in the result.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cairn.agent.models import OFFLINE, resolve_model
from cairn.config import Settings
from cairn.evals.benchmark import backfill, source_revision
from cairn.evals.coverage import Idea, Link, add, score_distilled
from cairn.evals.indexing import eval_settings
from cairn.evals.recall import session_start_of
from cairn.evals.splits import SPLITS, LabelledSession
from cairn.evals.truth import idea_totals, score_ideas, score_session, totals
from cairn.prompts import load_prompt
from cairn.store.store import Store
from cairn.tokens import count_tokens

WEIGHTS_ENV = "CAIRN_OFFLINE_WEIGHTS"

Progress = Callable[[str, int, int | None], None]


def _no_progress(_step: str, _done: int, _total: int | None) -> None:
    return None


@contextmanager
def offline_weights(path: Path | None) -> Iterator[str | None]:
    """`CAIRN_OFFLINE_WEIGHTS` set to `path` for the duration (restored after); yields the value in effect."""
    if path is None:
        yield os.environ.get(WEIGHTS_ENV) or None
        return
    before = os.environ.get(WEIGHTS_ENV)
    os.environ[WEIGHTS_ENV] = str(path)
    try:
        yield str(path)
    finally:
        if before is None:
            os.environ.pop(WEIGHTS_ENV, None)
        else:
            os.environ[WEIGHTS_ENV] = before


async def _read(store: Store) -> tuple[int, list[Idea], list[Link], list[Link], int]:
    """The store's user/assistant messages, ideas, answered and done links, and settled ideas whose
    settling line the store does not know (not scored, counted)."""
    row = await store.db.fetchone("SELECT count(*) AS n FROM messages WHERE role IN ('user', 'assistant')")
    messages = int(row["n"]) if row is not None else 0
    rows = await store.db.fetchall("SELECT id, intent, source_line FROM ideas WHERE source_line IS NOT NULL")
    ideas = [Idea(int(r["id"]), str(r["intent"]), int(r["source_line"])) for r in rows]
    # The executor stores an answer on the question: answered_at, resolved_line (the answering line) and
    # answered_by; an `answers` relation without them still names the answering idea.
    settled = await store.db.fetchall(
        """
        SELECT q.id, q.source_line AS line, q.answered_at IS NOT NULL AS answered,
               COALESCE(q.resolved_line, a.source_line,
                        (SELECT min(f.source_line) FROM relations r JOIN ideas f ON f.id = r.from_idea_id
                         WHERE r.to_idea_id = q.id AND r.relation_type = 'answers')) AS answer_line
        FROM ideas q LEFT JOIN ideas a ON a.id = q.answered_by
        WHERE (q.answered_at IS NOT NULL OR q.completed_at IS NOT NULL) AND q.source_line IS NOT NULL
        """
    )
    answered, done, unlocated = [], [], 0
    for r in settled:
        if r["answer_line"] is None:
            unlocated += 1
            continue
        link = Link(int(r["id"]), int(r["line"]), int(r["answer_line"]))
        (answered if r["answered"] else done).append(link)
    return messages, ideas, answered, done, unlocated


async def _one(
    session: LabelledSession, home: Path, settings: Settings, model: str, tolerance: int, progress: Progress
) -> dict[str, Any]:
    store = await Store.open(settings, embedding_mode="bulk")  # an eval is waited on, like a backfill
    try:
        filled = await backfill(store, [session.path.resolve()], settings, model, progress)
        messages, ideas, answered, done, unlocated = await _read(store)
        recall, shown, stored = await session_start_of(store, session.truth.cwd)
    finally:
        await store.close()
    figures = score_distilled(
        session.truth, ideas, messages=messages, answered=answered, done=done, tolerance=tolerance
    )
    return {
        "set": session.set,
        "key": session.key,
        "project": session.project,
        "split": session.split,
        **figures,
        "settled_without_line": unlocated,
        "indexer": score_ideas(session.truth, stored, tolerance),
        "session_start": score_session(session.truth, shown, tolerance),
        "session_start_tokens": count_tokens(recall.text) if recall.text else 0,
        "errors": filled.errors,
        "home": str(home),
    }


def _group(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Micro-averaged figures of some sessions: coverage, links, the indexer's own capture, SessionStart."""
    return {
        **add(rows),
        "indexer": idea_totals({str(i): r["indexer"] for i, r in enumerate(rows)}),
        "session_start": totals({str(i): r["session_start"] for i, r in enumerate(rows)}),
    }


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per split (in `SPLITS` order): its totals and each project's."""
    result: dict[str, Any] = {}
    for split in SPLITS:
        in_split = [r for r in rows if r["split"] == split]
        if not in_split:
            continue
        projects = sorted({r["project"] for r in in_split})
        result[split] = {
            "totals": _group(in_split),
            "projects": {p: _group([r for r in in_split if r["project"] == p]) for p in projects},
        }
    return result


async def run_sessions_eval(
    sessions: Sequence[LabelledSession],
    home: Path,
    *,
    model: str | None = None,
    tolerance: int = 3,
    base_settings: Settings | None = None,
    progress: Progress = _no_progress,
    about: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Backfill each session alone under `home` (new or empty) and score it; the run as a plain dict.

    `about` is copied into the result (the splits file, the shared folder, the weights in effect)."""
    started = time.perf_counter()
    home = home.expanduser().resolve()
    model_name = model or OFFLINE
    rows = []
    for done, session in enumerate(sessions, start=1):
        store_home = home / "sessions" / str(done)
        store_home.mkdir(parents=True)
        settings = eval_settings(store_home, base_settings)
        if done == 1:
            await resolve_model(settings, model_name).aclose()  # a missing key fails here, before any work
        rows.append(await _one(session, store_home, settings, model_name, tolerance, progress))
        progress("sessions", done, len(sessions))
    return {
        "benchmark": "sessions",
        "model": model_name,
        "prompt_version": load_prompt("indexer").id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source_revision(),
        "tolerance": tolerance,
        **dict(about or {}),
        "splits": summarise(rows),
        "sessions": rows,
        "cost": {"wall_seconds": round(time.perf_counter() - started, 3)},
        "home": str(home),
    }
