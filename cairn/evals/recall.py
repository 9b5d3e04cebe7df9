"""`cairn eval recall`: what recall injects into the coding agent, scored on real sessions next to a baseline.

Three measures, each in stores built the way `cairn backfill` builds them (`cairn.evals.benchmark.backfill`):

1. **Prompts that should recall** — each question of a QA set (`cairn.evals.qa`) sent as a
   UserPromptSubmit from its session's project with a fresh session id. *Fired*: something was
   injected; *hit*: an injected idea's line lies within `tolerance` lines of an evidence line;
   *precision of the fired*: hits / fired; the items and tokens injected and the latency of working
   out the injection (the daemon's share of the hook; `benchmarks/recall.py` times the whole hook).
2. **Prompts that should not** — everyday requests ("run the tests again") and, when given, LoCoMo
   questions, asked from each coding project in turn: the *false-fire* rate.
3. **SessionStart** against a session-truth set (`cairn.evals.truth`): each labelled session
   backfilled alone into its own store, as the memory the next session in its project starts from,
   and what SessionStart shows scored per section.

The baseline, in the same run, is the simplest recall: inject the top `BASELINE_K` results of the
prompt's default `cairn search` (hybrid, every kind), no threshold. The curve says, per score floor,
what recall would have done: hit rate and precision on the QA prompts against false fires off topic —
the data `recall_min_score` and `recall_min_specificity` are chosen from.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cairn.agent.models import OFFLINE, resolve_model
from cairn.config import Settings
from cairn.evals.benchmark import backfill, source_revision
from cairn.evals.extents import ResultExtents
from cairn.evals.indexing import eval_settings
from cairn.evals.metrics import mean, percentile
from cairn.evals.qa import QASet
from cairn.evals.questions import BenchmarkError, Evidence, Question, read_json
from cairn.evals.truth import (
    SECTIONS,
    Shown,
    Stored,
    TruthSet,
    idea_totals,
    score_ideas,
    score_session,
    totals,
)
from cairn.prompts import load_prompt
from cairn.recall.abandoned import ABANDONED
from cairn.recall.context import (
    CLOSE_TAG,
    INTRO,
    OPEN_TAG,
    Candidate,
    chosen,
    find_project,
    idea_line,
    prompt_candidates,
    prompt_recall,
)
from cairn.recall.ops import context_for
from cairn.search.hybrid import search
from cairn.search.models import SearchRequest
from cairn.store.store import Store
from cairn.tokens import count_tokens

BASELINE_K = 3
DIGITS = 4
#: The floors the curves are drawn at: the search score, and the specificity (`cairn.recall.specific`).
SCORE_CURVE = tuple(round(0.05 * step, 2) for step in range(0, 13))
SPECIFICITY_CURVE = tuple(float(step) for step in range(0, 13))
_REPO = Path(__file__).resolve().parents[2]
DEFAULT_EVERYDAY = _REPO / "evals" / "datasets" / "recall" / "everyday.json"

Progress = Callable[[str, int, int | None], None]


def _no_progress(_step: str, _done: int, _total: int | None) -> None:
    return None


def load_prompts(path: Path) -> list[str]:
    """A JSON list of prompt strings (`--everyday`); `BenchmarkError` naming the file otherwise."""
    data = read_json(path)
    if not isinstance(data, list) or not all(isinstance(p, str) and p.strip() for p in data):
        raise BenchmarkError(f"{path.name}: expected a JSON list of non-empty prompt strings")
    return list(data)


@dataclass(frozen=True)
class OffTopic:
    """A prompt nothing in a coding project's memory should answer, and where it comes from."""

    source: str
    prompt: str


@dataclass
class Outcome:
    """One prompt: the ideas injected and which of them hit; every candidate's score and hit (for the
    curve); the tokens injected and the time it took."""

    ids: list[int] = field(default_factory=list)
    injected_hits: list[bool] = field(default_factory=list)
    candidates: list[tuple[float, float, bool]] = field(default_factory=list)  # score, specificity, hit
    tokens: int = 0
    ms: float = 0.0

    @property
    def fired(self) -> bool:
        return bool(self.ids)

    @property
    def hit(self) -> bool:
        return any(self.injected_hits)


async def _idea_lines(
    store: Store, ids: Sequence[int], key_of_path: Mapping[str, str]
) -> dict[int, Evidence]:
    """Where each idea was said, as `(file key, line)`; ideas outside the set's files are left out."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = await store.db.fetchall(
        "SELECT i.id, i.source_line, f.path FROM ideas i "
        f"LEFT JOIN transcript_files f ON f.id = i.source_file_id WHERE i.id IN ({marks})",
        tuple(ids),
    )
    return {
        int(row["id"]): Evidence(key_of_path[row["path"]], int(row["source_line"]))
        for row in rows
        if row["path"] in key_of_path and row["source_line"] is not None
    }


def _near(evidence: Evidence | None, question: Question, tolerance: int) -> bool:
    return evidence is not None and any(
        e.file == evidence.file and abs(e.line - evidence.line) <= tolerance for e in question.evidence
    )


async def _project_of(store: Store, path: Path) -> str | None:
    """The project path the store gave the session of transcript `path` (where its hooks run)."""
    value = await store.db.scalar(
        "SELECT p.path FROM transcript_files f JOIN sessions s ON s.id = f.session_id "
        "JOIN projects p ON p.id = s.project_id WHERE f.path = ?",
        (str(path.resolve()),),
    )
    return None if value is None else str(value)


async def _recall(
    store: Store, cwd: str | None, prompt: str
) -> tuple[list[Candidate], list[int], str | None, float]:
    """What the hook injects for `prompt` from `cwd` in a fresh session: every candidate (for the
    curve), the injected ideas, the text and the milliseconds it took."""
    started = time.perf_counter()
    project = await find_project(store.db, cwd)
    candidates = await prompt_candidates(store.db, store.vectors, store.settings, project, prompt)
    settings = store.settings
    recall = prompt_recall(candidates, settings.recall_min_score, settings.recall_min_specificity)
    ms = (time.perf_counter() - started) * 1000
    return candidates, recall.ids, recall.text, ms


async def _baseline(store: Store, extents: ResultExtents, question_or_prompt: str) -> tuple[list[Any], float]:
    started = time.perf_counter()
    request = SearchRequest(query=question_or_prompt, limit=BASELINE_K, min_score=0.0)
    page = await search(store.db, store.vectors, store.settings, request, record_usage=False)
    ms = (time.perf_counter() - started) * 1000
    results = page.results[:BASELINE_K]
    return list(zip(results, await extents.of(results), strict=True)), ms


def _baseline_tokens(results: Sequence[Any]) -> int:
    if not results:
        return 0
    lines = [idea_line(0, r.kind, r.said_at, r.content).replace("#0 ", f"#{r.id} ", 1) for r, _ in results]
    return count_tokens("\n".join([OPEN_TAG, INTRO, *lines, CLOSE_TAG]))


def _summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    fired = [o for o in outcomes if o.fired]
    items = sum(len(o.ids) for o in outcomes)
    times = [o.ms for o in outcomes]
    return {
        "prompts": len(outcomes),
        "fired": round(len(fired) / len(outcomes), DIGITS) if outcomes else None,
        "hit_rate": round(sum(o.hit for o in outcomes) / len(outcomes), DIGITS) if outcomes else None,
        "precision": round(sum(o.hit for o in fired) / len(fired), DIGITS) if fired else None,
        "item_precision": round(sum(sum(o.injected_hits) for o in outcomes) / items, DIGITS)
        if items
        else None,
        "items_per_fired": round(items / len(fired), 2) if fired else None,
        "tokens_per_fired": round(sum(o.tokens for o in fired) / len(fired), 1) if fired else None,
        "latency_ms": {"p50": round(percentile(times, 50), 1), "p95": round(percentile(times, 95), 1)}
        if times
        else None,
    }


def _curve(
    on_topic: Sequence[Outcome], off_topic: Sequence[Outcome], settings: Settings, over: str
) -> list[dict[str, Any]]:
    """Per floor of `over` (`min_score` or `min_specificity`, the other at its setting): what recall
    would do with that floor (`cairn.recall.context.chosen`)."""
    rows = []
    for floor in SCORE_CURVE if over == "min_score" else SPECIFICITY_CURVE:
        score = floor if over == "min_score" else settings.recall_min_score
        specific = floor if over == "min_specificity" else settings.recall_min_specificity

        def passing(outcome: Outcome, score: float = score, specific: float = specific) -> list[bool]:
            scored = [(s, sp) for s, sp, _hit in outcome.candidates]
            return [outcome.candidates[i][2] for i in chosen(scored, score, specific)]

        fired = [bool(passing(o)) for o in on_topic]
        hits = [any(passing(o)) for o in on_topic]
        false = [bool(passing(o)) for o in off_topic]
        rows.append(
            {
                over: floor,
                "fired": round(mean(fired), DIGITS),
                "hit_rate": round(mean(hits), DIGITS),
                "precision": round(sum(hits) / sum(fired), DIGITS) if any(fired) else None,
                "false_fire": round(mean(false), DIGITS) if off_topic else None,
            }
        )
    return rows


async def _prompts(
    store: Store, qa: QASet, off_topic: Sequence[OffTopic], tolerance: int, progress: Progress
) -> dict[str, Any]:
    key_of_path = {str(path.resolve()): key for key, path in qa.files.items()}
    cwd_of = {key: await _project_of(store, path) for key, path in qa.files.items()}
    extents = ResultExtents(store.db)
    recall: list[Outcome] = []
    baseline: list[Outcome] = []
    cases: list[dict[str, Any]] = []
    total = len(qa.questions) + len(off_topic)
    for done, question in enumerate(qa.questions, start=1):
        cwd = cwd_of.get(question.session or "")
        candidates, ids, text, ms = await _recall(store, cwd, question.question)
        where = await _idea_lines(store, [c.idea for c in candidates], key_of_path)
        all_hits = [_near(where.get(c.idea), question, tolerance) for c in candidates]
        injected = [i for i, c in enumerate(candidates) if c.idea in ids]
        outcome = Outcome(
            ids=ids,
            injected_hits=[all_hits[i] for i in injected],
            candidates=[(c.score, c.specificity, h) for c, h in zip(candidates, all_hits, strict=True)],
            tokens=count_tokens(text) if text else 0,
            ms=ms,
        )
        recall.append(outcome)
        results, base_ms = await _baseline(store, extents, question.question)
        base_hits = [
            extent.file is not None
            and key_of_path.get(extent.file) is not None
            and any(
                e.file == key_of_path[extent.file] and extent.near(e.line, tolerance)
                for e in question.evidence
            )
            for _, extent in results
        ]
        baseline.append(
            Outcome(
                ids=list(range(len(results))),
                injected_hits=base_hits,
                tokens=_baseline_tokens(results),
                ms=base_ms,
            )
        )
        cases.append(
            {
                "id": question.id,
                "question": question.question,
                "evidence": [str(e) for e in question.evidence],
                "injected": [
                    {
                        "idea": candidates[i].idea,
                        "score": round(candidates[i].score, 4),
                        "specificity": candidates[i].specificity,
                        "hit": all_hits[i],
                    }
                    for i in injected
                ],
                "best": None
                if not candidates
                else {
                    "idea": candidates[0].idea,
                    "score": round(candidates[0].score, 4),
                    "specificity": candidates[0].specificity,
                    "hit": all_hits[0],
                    "line": candidates[0].line,
                },
            }
        )
        progress("prompts", done, total)
    projects = sorted({cwd for cwd in cwd_of.values() if cwd})
    off: list[Outcome] = []
    off_base: list[Outcome] = []
    by_source: dict[str, list[Outcome]] = {}
    fired_off: list[dict[str, Any]] = []
    for index, case in enumerate(off_topic):
        cwd = projects[index % len(projects)] if projects else None
        candidates, ids, text, ms = await _recall(store, cwd, case.prompt)
        outcome = Outcome(ids=ids, candidates=[(c.score, c.specificity, False) for c in candidates], ms=ms)
        outcome.tokens = count_tokens(text) if text else 0
        off.append(outcome)
        by_source.setdefault(case.source, []).append(outcome)
        results, base_ms = await _baseline(store, extents, case.prompt)
        off_base.append(Outcome(ids=list(range(len(results))), ms=base_ms))
        if ids:
            fired_off.append({"source": case.source, "prompt": case.prompt, "ideas": ids})
        progress("prompts", len(qa.questions) + index + 1, total)
    return {
        "recall": _summary(recall),
        "baseline": _summary(baseline),
        "off_topic": {
            "prompts": len(off),
            "sources": {name: len(rows) for name, rows in by_source.items()},
            "recall": {
                "false_fire": round(mean([o.fired for o in off]), DIGITS) if off else None,
                "by_source": {
                    name: round(mean([o.fired for o in rows]), DIGITS) for name, rows in by_source.items()
                },
                "latency_ms": _summary(off)["latency_ms"],
            },
            "baseline": {
                "false_fire": round(mean([o.fired for o in off_base]), DIGITS) if off_base else None
            },
            "fired": fired_off,
        },
        "curve": {
            over: _curve(recall, off, store.settings, over) for over in ("min_specificity", "min_score")
        },
        "cases": cases,
    }


async def _shown(store: Store, ids: Sequence[int], sections: Mapping[int, str]) -> list[Shown]:
    """What SessionStart showed as `Shown` items: each idea's line, and for a fix the line of the
    problem or question it answers."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = await store.db.fetchall(
        f"""
        SELECT i.id, i.content, i.source_line,
               (SELECT group_concat(p.source_line) FROM ideas p WHERE p.answered_by = i.id) AS answers
        FROM ideas i WHERE i.id IN ({marks})
        """,
        tuple(ids),
    )
    by_id = {int(row["id"]): row for row in rows}
    shown = []
    for idea in ids:
        row = by_id.get(idea)
        if row is None or row["source_line"] is None:
            continue
        lines = [int(row["source_line"])]
        if sections[idea] == "fixes" and row["answers"]:
            lines += [int(value) for value in str(row["answers"]).split(",")]
        shown.append(Shown(sections[idea], idea, str(row["content"]), tuple(lines)))
    return shown


async def _stored(store: Store) -> list[Stored]:
    """Every idea of the (one-session) store with its line, state and whether recall leaves it out."""
    rows = await store.db.fetchall(
        f"""
        SELECT i.id, i.intent, i.source_line,
               (i.answered_at IS NOT NULL OR i.completed_at IS NOT NULL) AS settled, {ABANDONED} AS gone
        FROM ideas i WHERE i.source_line IS NOT NULL
        """
    )
    return [
        Stored(int(r["id"]), str(r["intent"]), int(r["source_line"]), bool(r["settled"]), bool(r["gone"]))
        for r in rows
    ]


async def session_start_of(store: Store, cwd: str) -> tuple[Any, list[Shown], list[Stored]]:
    """What SessionStart shows in `cwd`'s project from `store` (the recall, its items as `Shown`) and every
    idea the store holds as `Stored`: what `cairn eval recall` and `cairn eval sessions` score."""
    recall = await context_for(store, "SessionStart", cwd, None)
    return recall, await _shown(store, recall.ids, recall.sections), await _stored(store)


async def _session_start(
    truth: TruthSet,
    home: Path,
    settings_of: Callable[[Path], Settings],
    model: str,
    tolerance: int,
    progress: Progress,
) -> dict[str, Any]:
    per_session: dict[str, Any] = {}
    indexer: dict[str, Any] = {}
    shown_of: dict[str, Any] = {}
    for done, (key, labels) in enumerate(truth.sessions.items(), start=1):
        store_home = home / "sessions" / str(done)
        store_home.mkdir(parents=True)
        settings = settings_of(store_home)
        store = await Store.open(settings, embedding_mode="bulk")  # an eval is waited on, like a backfill
        try:
            await backfill(store, [truth.files[key].resolve()], settings, model)
            recall, shown, stored = await session_start_of(store, labels.cwd)
        finally:
            await store.close()
        per_session[key] = score_session(labels, shown, tolerance)
        indexer[key] = score_ideas(labels, stored, tolerance)
        shown_of[key] = {"text": recall.text, "tokens": count_tokens(recall.text) if recall.text else 0}
        progress("SessionStart", done, len(truth.sessions))
    return {
        "sessions": len(per_session),
        "totals": totals(per_session),
        "indexer": {"totals": idea_totals(indexer), "per_session": indexer},
        "per_session": {
            key: {section: figures[section] for section in SECTIONS} | shown_of[key]
            for key, figures in per_session.items()
        },
    }


async def run_recall_eval(
    *,
    qa: QASet,
    truth: TruthSet | None,
    off_topic: Sequence[OffTopic],
    home: Path,
    model: str | None = None,
    tolerance: int = 3,
    base_settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """Score recall's prompts, off-topic prompts and SessionStart (see the module docstring); a dict.

    `home` must be new or empty: the stores are built under it and left for the caller. `overrides` are
    recall settings to try (`recall_min_specificity`, ...) on top of cairn's defaults.
    """
    started = time.perf_counter()
    home = home.expanduser().resolve()
    model_name = model or OFFLINE

    def settings_of(path: Path) -> Settings:
        settings = eval_settings(path, base_settings)
        return settings.model_copy(update=dict(overrides)) if overrides else settings

    prompt_home = home / "prompts"
    prompt_home.mkdir(parents=True, exist_ok=True)
    settings = settings_of(prompt_home)
    await resolve_model(settings, model_name).aclose()  # a missing key fails here, before any work
    store = await Store.open(settings, embedding_mode="bulk")  # an eval is waited on, like a backfill
    try:
        filled = await backfill(
            store, [p.resolve() for p in qa.files.values()], settings, model_name, progress
        )
        prompts = await _prompts(store, qa, off_topic, tolerance, progress)
    finally:
        await store.close()
    session_start = (
        await _session_start(truth, home, settings_of, model_name, tolerance, progress) if truth else None
    )
    return {
        "benchmark": "recall",
        "dataset": qa.path.name,
        "truth": None if truth is None else truth.path.name,
        "model": model_name,
        "prompt_version": load_prompt("indexer").id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source_revision(),
        "tolerance": tolerance,
        "baseline": f"top {BASELINE_K} of cairn search (hybrid, every kind), no threshold",
        "settings": {
            name: getattr(settings, name)
            for name in (
                "recall_min_score",
                "recall_min_specificity",
                "recall_prompt_lines",
                "recall_session_tokens",
            )
        },
        "store": {"messages": filled.messages, "ideas": filled.ideas, "files": len(qa.files)},
        "prompts": {
            key: value for key, value in prompts.items() if key not in ("off_topic", "curve", "cases")
        },
        "off_topic": prompts["off_topic"],
        "curve": prompts["curve"],
        "cases": prompts["cases"],
        "session_start": session_start,
        "cost": {
            "wall_seconds": round(time.perf_counter() - started, 3),
            "backfill_seconds": round(filled.seconds, 3),
        },
        "home": str(home),
    }
