"""Public retrieval benchmarks: questions whose answers sit at known transcript lines, scored against search.

`cairn eval qa` (`cairn.evals.qa`) and `cairn eval locomo` (`cairn.evals.locomo`) turn their input into the
same thing — transcript files keyed by a short name (a path relative to the transcripts directory, or the
file a LoCoMo session was converted to) and `Question`s whose evidence is `(file key, 1-based physical
line)` — and this module does the rest:

1. **Backfill** the files into a fresh store exactly as `cairn sync` + `cairn backfill` would: captured by
   `sync_paths` without vectors, indexed by `index_pending` (the offline indexer unless a model is named),
   then one `sync_vectors` for whatever the indexer's own per-batch syncs left. Every message, idea and
   span is embedded once.
2. **Baseline**: BM25 over the text of every physical line of the same files (`LineBM25`: an in-memory
   SQLite FTS5 table with cairn's own tokenizer, `porter unicode61`, queried with an OR of the question's
   quoted words and ranked by `bm25()`), in the same run, so a figure is always read next to what plain
   keyword retrieval over the raw lines gets.
3. **Search** every question in each mode x kind through `cairn.search.hybrid.search` (top `k`, usage not
   recorded, `min_score` 0 by default so the ranking is measured rather than the user-facing threshold).
4. **Score** each ranking: a result *hits* an evidence line when it comes from the same file and its line
   range (`cairn.evals.extents`) lies within `tolerance` lines of it. recall_any@k: some evidence line hit
   in the top k; recall_all@k: every one of them; MRR: 1 / rank of the first hit; p50/p95 latency of the
   search call. Overall, per category and per session, plus the misses (no hit in the top k) with what
   ranked first instead, and what a person sees in each top k (`cairn.evals.shown`: results repeating a
   higher one, snippets with escapes or raw tool JSON).

The result is a plain dict that `cairn.evals.runs.save_run` writes and `cairn.evals.compare` compares:
`retrieval` holds `{group: {recall_any@1, ..., mrr}}` with groups `bm25` and `<mode>/<kind>`, and the
latencies sit under `cost.latency_ms` because less is better there.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from cairn.agent.indexer import index_pending
from cairn.agent.models import OFFLINE, resolve_model
from cairn.config import Settings
from cairn.evals.extents import Extent, ResultExtents
from cairn.evals.indexing import eval_settings
from cairn.evals.metrics import (
    all_covered_at_k,
    any_covered_at_k,
    coverage_reciprocal_rank,
    first_covering_rank,
    mean,
    percentile,
)
from cairn.evals.questions import (
    DEFAULT_KINDS,
    DEFAULT_MODES,
    KINDS,
    BenchmarkError,
    Evidence,
    KindFilter,
    Mode,
    Question,
    physical_lines,
)
from cairn.evals.shown import Shown, shown, summed
from cairn.ingest import sync_paths
from cairn.prompts import load_prompt
from cairn.search.hybrid import search
from cairn.search.models import SearchRequest, SearchResult, parse_item_id, preview
from cairn.store.store import Store

CUTOFFS = (1, 5, 10)
TOP_K = 10
BASELINE = "bm25"
DIGITS = 4
PREVIEW = 120
# The cairn tokenizer of messages_fts (migrations), so the baseline tokenizes as cairn's keyword search does.
TOKENIZER = "porter unicode61"

Progress = Callable[[str, int, int | None], None]

__all__ = [
    "BASELINE",
    "DEFAULT_KINDS",
    "DEFAULT_MODES",
    "KINDS",
    "BenchmarkError",
    "Evidence",
    "LineBM25",
    "Question",
    "line_text",
    "run_benchmark",
    "score_questions",
]


@dataclass(frozen=True)
class Located:
    """One ranked item, wherever it came from: its file key (None outside the benchmark) and lines."""

    file: str | None
    start: int | None
    end: int | None
    id: str
    kind: str
    preview: str

    def hits(self, question: Question, tolerance: int) -> set[str]:
        """The evidence of `question` this item hits, as `file:line` strings."""
        if self.file is None:
            return set()
        extent = Extent(self.file, self.start, self.end)
        return {str(e) for e in question.evidence if e.file == self.file and extent.near(e.line, tolerance)}

    def where(self) -> str:
        if self.file is None:
            return "(outside the benchmark)"
        if self.start is None:
            return self.file
        if self.end is None:
            return f"{self.file}:{self.start}-"
        return f"{self.file}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")


# Transcript text, read independently of cairn's reader for the baseline.


def _block_text(block: Any) -> list[str]:
    if isinstance(block, str):
        return [block]
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return [block["text"]]
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return [text for item in content for text in _block_text(item)]
        return [content] if isinstance(content, str) else []
    if kind == "tool_use":
        return [json.dumps(block.get("input"), ensure_ascii=False)]
    return []


def line_text(raw: str | bytes) -> str:
    """The searchable text of one JSONL line: user text, assistant text blocks, tool results and tool
    inputs (as JSON); empty for anything else (summaries, snapshots, thinking, malformed lines)."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return ""
    if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
        return ""
    message = entry.get("message")
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(text for block in blocks for text in _block_text(block) if text)


@dataclass(frozen=True)
class LineDoc:
    file: str
    line: int
    text: str


def line_docs(files: Mapping[str, Path]) -> list[LineDoc]:
    """One document per physical line with text, for every file (key -> path)."""
    docs = []
    for key, path in files.items():
        for number, raw in enumerate(physical_lines(path), start=1):
            text = line_text(raw)
            if text.strip():
                docs.append(LineDoc(key, number, text))
    return docs


_WORD = re.compile(r"\w+")


def or_query(text: str) -> str | None:
    """An FTS5 OR query of the text's distinct words, each quoted so no punctuation is syntax."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return " OR ".join(f'"{w}"' for w in words) if words else None


class LineBM25:
    """BM25 over transcript lines: SQLite FTS5 in memory, ranked by `bm25()` (k1 1.2, b 0.75)."""

    def __init__(self, docs: Iterable[LineDoc]) -> None:
        self._docs = list(docs)
        self._db = sqlite3.connect(":memory:")
        self._db.execute(f"CREATE VIRTUAL TABLE lines USING fts5 (text, tokenize = '{TOKENIZER}')")
        self._db.executemany(
            "INSERT INTO lines (rowid, text) VALUES (?, ?)",
            ((index + 1, doc.text) for index, doc in enumerate(self._docs)),
        )

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, text: str, k: int = TOP_K) -> list[LineDoc]:
        query = or_query(text)
        if query is None:
            return []
        rows = self._db.execute(
            "SELECT rowid FROM lines WHERE lines MATCH ? ORDER BY bm25(lines) LIMIT ?", (query, k)
        ).fetchall()
        return [self._docs[rowid - 1] for (rowid,) in rows]

    def close(self) -> None:
        self._db.close()


# Backfill


def _no_progress(_step: str, _done: int, _total: int | None) -> None:
    return None


@dataclass
class Backfill:
    seconds: float = 0.0
    messages: int = 0
    batches: int = 0
    ideas: int = 0
    spans: int = 0
    vectors: int = 0
    errors: list[str] = field(default_factory=list)


async def backfill(
    store: Store, paths: Sequence[Path], settings: Settings, model: str, progress: Progress = _no_progress
) -> Backfill:
    """Capture and index `paths` into `store`, embedding everything once; raises `BenchmarkError` when a
    file cannot be read or the indexing model fails for good."""
    started = time.perf_counter()
    done = 0

    def captured(_path: Path) -> None:
        nonlocal done
        done += 1
        progress("capture", done, len(paths))

    # Finished files: a last line without its newline is read whatever the checkout's mtime says.
    report = await sync_paths(store, paths, settings, vectors=False, on_file=captured, settle_seconds=0)
    if report.errors:
        raise BenchmarkError("; ".join(f"{f.path}: {f.error}" for f in report.errors))
    from cairn.agent.batches import plan_batches

    total = len(await plan_batches(store.db, mode="backfill"))
    batches = 0

    def batch_done(_planned: Any, _run: Any) -> None:
        nonlocal batches
        batches += 1
        progress("index", batches, total)

    choice = resolve_model(settings, model)
    indexed = await index_pending(store, settings, model=choice, mode="backfill", on_batch=batch_done)
    if indexed.stopped is not None:
        raise BenchmarkError(f"indexing stopped: {indexed.stopped}")
    progress("embed", 0, None)
    vectors = await store.sync_vectors()
    progress("embed", 1, 1)
    counts = await store.db.fetchone(
        "SELECT (SELECT count(*) FROM messages) AS messages, (SELECT count(*) FROM ideas) AS ideas, "
        "(SELECT count(*) FROM topic_spans) AS spans"
    )
    assert counts is not None
    return Backfill(
        seconds=time.perf_counter() - started,
        messages=counts["messages"],
        batches=indexed.batches,
        ideas=counts["ideas"],
        spans=counts["spans"],
        vectors=vectors,
        errors=[f"{run.outcome}: {run.error}" for run in indexed.failures],
    )


# Scoring


@dataclass
class Ranked:
    """One question's ranking in one group: what each rank hit, the first result, the search time and
    the kind of each result."""

    hits: list[set[str]]
    first: Located | None
    ms: float
    kinds: list[str] = field(default_factory=list)
    shown: Shown = field(default_factory=Shown)

    def first_hit_kind(self, question: Question) -> str | None:
        rank = first_covering_rank(self.hits, _targets(question))
        return None if rank is None or rank > len(self.kinds) else self.kinds[rank - 1]


def _targets(question: Question) -> set[str]:
    return {str(e) for e in question.evidence}


def _figures(rankings: Sequence[tuple[Question, Ranked]]) -> dict[str, Any]:
    figures: dict[str, Any] = {"questions": len(rankings)}
    for name, measure in (("recall_any", any_covered_at_k), ("recall_all", all_covered_at_k)):
        for k in CUTOFFS:
            values = [measure(r.hits, _targets(q), k) for q, r in rankings]
            figures[f"{name}@{k}"] = round(mean(values), DIGITS)
    figures["mrr"] = round(mean(coverage_reciprocal_rank(r.hits, _targets(q)) for q, r in rankings), DIGITS)
    return figures


def _latency(rankings: Sequence[tuple[Question, Ranked]]) -> dict[str, float]:
    times = [r.ms for _, r in rankings]
    return {"p50": round(percentile(times, 50), 1), "p95": round(percentile(times, 95), 1)}


def _by(
    rankings: Sequence[tuple[Question, Ranked]], key: Callable[[Question], str | None]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[tuple[Question, Ranked]]] = {}
    for question, ranked in rankings:
        name = key(question)
        if name is not None:
            groups.setdefault(name, []).append((question, ranked))
    return {name: _figures(rows) for name, rows in sorted(groups.items())}


def _miss(question: Question, ranked: Ranked) -> dict[str, Any]:
    first = ranked.first
    return {
        "id": question.id,
        "question": question.question,
        "category": question.category,
        "evidence": [str(e) for e in question.evidence],
        "first": None
        if first is None
        else {"id": first.id, "kind": first.kind, "at": first.where(), "preview": first.preview},
    }


def group_name(mode: str, kind: str) -> str:
    return f"{mode}/{kind}"


async def _search_one(
    store: Store,
    extents: ResultExtents,
    key_of_path: Mapping[str, str],
    question: Question,
    mode: Mode,
    kind: KindFilter,
    tolerance: int,
    min_score: float,
) -> Ranked:
    request = SearchRequest(query=question.question, mode=mode, kind=kind, limit=TOP_K, min_score=min_score)
    started = time.perf_counter()
    page = await search(store.db, store.vectors, store.settings, request, record_usage=False)
    ms = (time.perf_counter() - started) * 1000
    results = page.results[:TOP_K]
    # A topic span is scored where it starts, as a result's "source line": the offline indexer leaves
    # most spans open to the end of their file, so their range points at a region, not an answer.
    located = [
        Located(
            key_of_path.get(extent.file) if extent.file else None,
            extent.start,
            extent.start if result.kind == "span" else extent.end,
            result.id,
            result.kind,
            preview(result.content, PREVIEW),
        )
        for result, extent in zip(results, await extents.of(results), strict=True)
    ]
    hits = [item.hits(question, tolerance) for item in located]
    whole = await _whole_texts(store, results)
    seen = shown(
        [(result.snippet, whole.get(result.id, result.content), result.origin) for result in results]
    )
    return Ranked(hits, located[0] if located else None, ms, [item.kind for item in located], seen)


async def _whole_texts(store: Store, results: Sequence[SearchResult]) -> dict[str, str]:
    """Each long message's whole text, by result id: its stored text and the passages it was cut into,
    which hold what is past the stored text's cap — what a snippet from a passage is judged against."""
    rows = {parse_item_id(r.id)[1]: r for r in results if r.kind == "message"}
    if not rows:
        return {}
    passages = await store.db.fetchall(
        "SELECT message_id, group_concat(text, ' ') AS text FROM (SELECT message_id, text "
        "FROM message_passages WHERE message_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY message_id, seq) "
        "GROUP BY message_id",
        (json.dumps(sorted(rows)),),
    )
    return {
        rows[int(p["message_id"])].id: f"{rows[int(p['message_id'])].content} {p['text']}" for p in passages
    }


def _baseline(bm25: LineBM25, question: Question, tolerance: int) -> Ranked:
    started = time.perf_counter()
    docs = bm25.search(question.question, TOP_K)
    ms = (time.perf_counter() - started) * 1000
    located = [
        Located(d.file, d.line, d.line, f"{d.file}:{d.line}", "line", preview(d.text, PREVIEW)) for d in docs
    ]
    hits = [item.hits(question, tolerance) for item in located]
    return Ranked(hits, located[0] if located else None, ms, [item.kind for item in located])


async def score_questions(
    store: Store,
    bm25: LineBM25,
    questions: Sequence[Question],
    key_of_path: Mapping[str, str],
    *,
    modes: Sequence[Mode] = DEFAULT_MODES,
    kinds: Sequence[KindFilter] = DEFAULT_KINDS,
    tolerance: int = 3,
    min_score: float = 0.0,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """Rank every question with the baseline and each mode x kind and score the rankings.

    `key_of_path` maps a transcript path as the store records it (absolute, resolved) to its file key.
    Returns `retrieval`, `latency_ms`, `per_category`, `per_session`, `misses`, `first_hit_kinds`,
    `shown` (what a person sees in each top 10, `cairn.evals.shown`; each `{group: ...}`) and `ranks`
    (`{question id: {group: rank of the first hit or None}}`).
    """
    groups = [BASELINE, *(group_name(m, k) for m in modes for k in kinds)]
    rankings: dict[str, list[tuple[Question, Ranked]]] = {g: [] for g in groups}
    extents = ResultExtents(store.db)
    for done, question in enumerate(questions, start=1):
        rankings[BASELINE].append((question, _baseline(bm25, question, tolerance)))
        for mode in modes:
            for kind in kinds:
                ranked = await _search_one(
                    store, extents, key_of_path, question, mode, kind, tolerance, min_score
                )
                rankings[group_name(mode, kind)].append((question, ranked))
        progress("questions", done, len(questions))
    sessions = {q.session for q in questions if q.session is not None}
    return {
        "retrieval": {g: _figures(rows) for g, rows in rankings.items()},
        "latency_ms": {g: _latency(rows) for g, rows in rankings.items()},
        "per_category": {g: _by(rows, lambda q: q.category) for g, rows in rankings.items()},
        "per_session": {g: _by(rows, lambda q: q.session) for g, rows in rankings.items()}
        if len(sessions) > 1
        else {},
        "misses": {
            g: [_miss(q, r) for q, r in rows if first_covering_rank(r.hits, _targets(q)) is None]
            for g, rows in rankings.items()
        },
        "ranks": {
            q.id: {g: first_covering_rank(rankings[g][i][1].hits, _targets(q)) for g in groups}
            for i, q in enumerate(questions)
        },
        "first_hit_kinds": {g: _first_hit_kinds(rows) for g, rows in rankings.items()},
        "shown": {g: summed(r.shown for _, r in rows) for g, rows in rankings.items() if g != BASELINE},
    }


def _first_hit_kinds(rankings: Sequence[tuple[Question, Ranked]]) -> dict[str, int]:
    """How many questions' first hit was an idea, a span, a message (or a line, for the baseline): a span
    covers many lines, so a group whose hits are mostly spans points at regions rather than answers."""
    counts: dict[str, int] = {}
    for question, ranked in rankings:
        kind = ranked.first_hit_kind(question)
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def source_revision() -> dict[str, Any] | None:
    """The git commit cairn's code was run from and whether its `cairn/` tree had changes; None outside a
    checkout. A baseline is only a baseline if one can say what code produced it."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "cairn"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(changed)} if commit else None


async def run_benchmark(
    *,
    benchmark: str,
    dataset: str,
    files: Mapping[str, Path],
    questions: Sequence[Question],
    home: Path,
    model: str | None = None,
    modes: Sequence[Mode] = DEFAULT_MODES,
    kinds: Sequence[KindFilter] = DEFAULT_KINDS,
    tolerance: int = 3,
    min_score: float = 0.0,
    base_settings: Settings | None = None,
    progress: Progress = _no_progress,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Backfill `files` (key -> path) into a fresh store at `home`, score `questions`; the run as a dict.

    `home` may already hold the files (LoCoMo's converted transcripts), not a store. The store is left
    at `home` for the caller to delete or keep. Raises `ModelConfigError` for a model
    that cannot be set up (before anything is written) and `BenchmarkError` when backfilling fails.
    """
    started = time.perf_counter()
    home = home.expanduser().resolve()
    settings = eval_settings(home, base_settings)
    if settings.db_path.exists():
        raise ValueError(f"{home}: already holds a store; the benchmark needs a fresh one")
    model_name = model or OFFLINE
    await resolve_model(settings, model_name).aclose()  # a missing key fails here, before any work
    prompt = load_prompt("indexer")
    built = time.perf_counter()
    bm25 = LineBM25(line_docs(files))
    bm25_seconds = time.perf_counter() - built
    home.mkdir(parents=True, exist_ok=True)
    store = await Store.open(settings, embedding_mode="bulk")  # an eval is waited on, like a backfill
    try:
        paths = [path.resolve() for path in files.values()]
        filled = await backfill(store, paths, settings, model_name, progress)
        key_of_path = {str(path.resolve()): key for key, path in files.items()}
        searching = time.perf_counter()
        scored = await score_questions(
            store,
            bm25,
            questions,
            key_of_path,
            modes=modes,
            kinds=kinds,
            tolerance=tolerance,
            min_score=min_score,
            progress=progress,
        )
        search_seconds = time.perf_counter() - searching
    finally:
        bm25.close()
        await store.close()
    categories: dict[str, int] = {}
    for question in questions:
        categories[question.category] = categories.get(question.category, 0) + 1
    return {
        "benchmark": benchmark,
        "dataset": dataset,
        "model": model_name,
        "prompt_version": prompt.id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source_revision(),
        "tolerance": tolerance,
        "k": TOP_K,
        "min_score": min_score,
        "modes": list(modes),
        "kinds": list(kinds),
        "files": len(files),
        "questions": len(questions),
        "categories": dict(sorted(categories.items())),
        **(dict(extra) if extra else {}),
        "retrieval": scored["retrieval"],
        "per_category": scored["per_category"],
        "per_session": scored["per_session"],
        "misses": scored["misses"],
        "ranks": scored["ranks"],
        "first_hit_kinds": scored["first_hit_kinds"],
        "shown": scored["shown"],
        "store": {
            "messages": filled.messages,
            "ideas": filled.ideas,
            "spans": filled.spans,
            "batches": filled.batches,
            "failed_batches": len(filled.errors),
            "bm25_documents": len(bm25),
        },
        "cost": {
            "wall_seconds": round(time.perf_counter() - started, 3),
            "backfill_seconds": round(filled.seconds, 3),
            "search_seconds": round(search_seconds, 3),
            "bm25_index_seconds": round(bm25_seconds, 3),
            "latency_ms": cast(dict[str, Any], scored["latency_ms"]),
        },
        "home": str(home),
    }
