"""The `cairn eval` sub-app: score indexing and retrieval on a labelled dataset, and compare two runs.

The model defaults to `offline` here, unlike `cairn index`: an eval must never spend money unless a paid
model is named with `--model`. Each run indexes into a temporary store, deleted afterwards unless
`--keep-store` names a directory to keep it in (to look at what the indexer did with `CAIRN_HOME=DIR`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from cairn.cli.common import (
    JsonOpt,
    app,
    console,
    err,
    fail,
    key_value_table,
    load_settings,
    print_json,
    progress_bar,
)
from cairn.config import Settings

if TYPE_CHECKING:
    from rich.progress import Progress

    from cairn.evals.dataset import Dataset
    from cairn.evals.indexing import IndexingRun

eval_app = typer.Typer(
    help="Measure indexing and retrieval on a labelled dataset (offline by default) and compare runs.",
    no_args_is_help=True,
)

EvalModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Indexing model: 'offline' (the default: an eval never spends money unless asked) or a model "
        "string such as anthropic:claude-haiku-4-5. With --replay: the recorded model.",
    ),
]
PromptOpt = Annotated[
    str | None, typer.Option("--prompt", help="Indexer prompt version, e.g. v1. Default: the latest.")
]
DatasetOpt = Annotated[
    Path | None,
    typer.Option(
        "--dataset", help="Dataset directory. Default: evals/datasets/core of the cairn repository."
    ),
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Also save the run as JSON in this directory (for `compare`).")
]
KeepOpt = Annotated[
    Path | None,
    typer.Option("--keep-store", help="Build the store in this (new or empty) directory and keep it."),
]
TOLERANCE_HELP = "Lines an idea may sit away from its label."


def _dataset(path: Path | None) -> Dataset:
    from cairn.evals.dataset import DatasetError, load_dataset

    try:
        return load_dataset(path)
    except DatasetError as exc:
        raise fail(str(exc)) from exc


@contextmanager
def _store_home(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="cairn-eval-") as tmp:
        yield Path(tmp) / "store"


def _progress_callback(progress: Progress) -> Any:
    tasks: dict[str, Any] = {}
    names = {
        "capture": "capturing transcripts",
        "index": "indexing batches",
        "embed": "embedding",
        "questions": "searching questions",
    }

    def on_progress(step: str, done: int, total: int | None) -> None:
        if step not in tasks:
            tasks[step] = progress.add_task(names.get(step, step), total=total)
        progress.update(tasks[step], completed=done, total=total)

    return on_progress


def _index(
    settings: Settings,
    dataset: Dataset,
    home: Path,
    *,
    model: str | None,
    prompt: str | None,
    record: Path | None,
    replay: Path | None,
    tolerance: int,
    quiet: bool,
) -> IndexingRun:
    """Run the indexing eval, turning every expected failure into a one-line error."""
    from cairn.agent.models import ModelConfigError
    from cairn.cli.common import run_async
    from cairn.evals.indexing import IndexingStoppedError, run_indexing
    from cairn.evals.record import RecordingError, ReplayMismatchError
    from cairn.pricing import load_prices
    from cairn.prompts import PromptNotFoundError

    try:
        prices = load_prices(settings)
        with progress_bar(disable=quiet) as progress:
            return run_async(
                run_indexing(
                    dataset,
                    home,
                    model=model,
                    prompt_version=prompt,
                    record=record,
                    replay=replay,
                    tolerance=tolerance,
                    base_settings=settings,
                    prices=prices,
                    progress=_progress_callback(progress),
                )
            )
    except (
        ModelConfigError,
        IndexingStoppedError,
        PromptNotFoundError,
        ReplayMismatchError,
        RecordingError,
        ValueError,
    ) as exc:
        raise fail(str(exc)) from exc


def _save(run: dict[str, Any], out: Path | None, quiet: bool) -> None:
    if out is None:
        return
    from cairn.evals.runs import save_run

    path = save_run(run, out)
    if not quiet:
        err.print(f"saved {path}")


def _score(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_run(run: dict[str, Any]) -> None:
    """The run's scores per field, the counts that are not scores, its cost, and where it missed."""
    console.print(
        f"[bold]{run['dataset']}[/]: {len(run['cases'])} cases, model {run['model']}, prompt "
        f"{run['prompt_version']}"
    )
    table = Table(title="extraction", title_justify="left")
    for column in ("field", "precision", "recall", "F1", "tp", "fp", "fn"):
        table.add_column(column, justify="left" if column == "field" else "right")
    for name, value in run["metrics"].items():
        if "f1" in value:
            table.add_row(
                name,
                *(_score(value[k]) for k in ("precision", "recall", "f1")),
                *(str(value[k]) for k in ("tp", "fp", "fn")),
            )
    console.print(table)
    metrics = run["metrics"]
    console.print(
        f"ideas at skip lines: {metrics['skip']['ideas_at_skip_lines']}   secrets leaked: "
        f"{metrics['redaction']['leaked']} of {metrics['redaction']['secrets']}"
    )
    console.print(key_value_table("cost", {k: "-" if v is None else v for k, v in run["cost"].items()}))
    for case, missed in run.get("misses", {}).items():
        keys = ", ".join(f"{m['key']} (line {m['line']}, {m['intent']})" for m in missed)
        console.print(f"[yellow]missed in {case}[/]: {keys}")


@eval_app.command("indexing")
def indexing(
    model: EvalModelOpt = None,
    prompt: PromptOpt = None,
    dataset: DatasetOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    record: Annotated[
        Path | None, typer.Option("--record", help="Write the model's requests and responses to this file.")
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option("--replay", help="Answer from a recording instead of a model: no key, no cost."),
    ] = None,
    keep_store: KeepOpt = None,
    tolerance: Annotated[int, typer.Option("--tolerance", min=0, max=20, help=TOLERANCE_HELP)] = 2,
) -> None:
    """Index a labelled dataset into a fresh store and score ideas, relations, topics, entities and cost."""
    if record is not None and replay is not None:
        raise fail("--record and --replay exclude each other")
    settings = load_settings()
    data = _dataset(dataset)
    with _store_home(keep_store) as home:
        run = _index(
            settings,
            data,
            home,
            model=model,
            prompt=prompt,
            record=record,
            replay=replay,
            tolerance=tolerance,
            quiet=as_json,
        )
    result = run.model_dump(mode="json")
    _save(result, out, as_json)
    if as_json:
        print_json(result)
        return
    render_run(result)
    if keep_store is not None:
        console.print(f"store kept in {keep_store} (CAIRN_HOME={keep_store} cairn ideas)")


def _render_retrieval(results: dict[str, Any]) -> None:
    table = Table(title="retrieval", title_justify="left")
    columns = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
    table.add_column("mode")
    table.add_column("queries", justify="right")
    for column in columns:
        table.add_column(column, justify="right")
    for mode, values in results.items():
        table.add_row(mode, str(values.get("queries", 0)), *(_score(values.get(c)) for c in columns))
    console.print(table)


async def _retrieve(
    run: IndexingRun, dataset: Dataset, settings: Settings, modes: list[str]
) -> dict[str, Any]:
    from cairn.evals.indexing import eval_settings
    from cairn.evals.retrieval import evaluate_retrieval
    from cairn.store.store import Store

    store = await Store.open(eval_settings(run.home, settings))
    try:
        return await evaluate_retrieval(store, dataset, run.idea_map, run.case_of_file, modes)
    finally:
        await store.close()


@eval_app.command("retrieval")
def retrieval(
    mode: Annotated[
        list[str] | None,
        typer.Option("--mode", help="keyword, semantic or hybrid; repeat for several. Default: all three."),
    ] = None,
    dataset: DatasetOpt = None,
    model: EvalModelOpt = None,
    prompt: PromptOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    keep_store: KeepOpt = None,
) -> None:
    """Index the dataset (offline by default), then score its queries: recall@1/5/10, MRR, nDCG@10."""
    from cairn.cli.common import run_async
    from cairn.evals.retrieval import DEFAULT_MODES

    modes = list(dict.fromkeys(mode)) if mode else list(DEFAULT_MODES)
    if unknown := [m for m in modes if m not in DEFAULT_MODES]:
        raise fail(f"unknown --mode {', '.join(unknown)}: use {', '.join(DEFAULT_MODES)}")
    settings = load_settings()
    data = _dataset(dataset)
    if not data.queries:
        raise fail(f"{data.root}: the dataset has no queries (queries.json)")
    with _store_home(keep_store) as home:
        run = _index(
            settings,
            data,
            home,
            model=model,
            prompt=prompt,
            record=None,
            replay=None,
            tolerance=2,
            quiet=as_json,
        )
        run.retrieval = run_async(_retrieve(run, data, settings, modes))
    result = run.model_dump(mode="json")
    _save(result, out, as_json)
    if as_json:
        print_json(result)
        return
    console.print(f"[bold]{run.dataset}[/]: {len(data.queries)} queries, indexed by {run.model}")
    _render_retrieval(run.retrieval)


def _load_run(path: Path) -> dict[str, Any]:
    from cairn.evals.runs import RunFileError, load_run

    try:
        return load_run(path)
    except RunFileError as exc:
        raise fail(str(exc)) from exc


@eval_app.command("compare")
def compare(
    run_a: Annotated[Path, typer.Argument(help="The baseline run JSON (from --out).")],
    run_b: Annotated[Path, typer.Argument(help="The run to compare with it.")],
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Also write the comparison as Markdown to this file.")
    ] = None,
    chart: Annotated[
        Path | None,
        typer.Option("--chart", help="Also draw per-field F1 of both runs as a PNG (needs the plot extra)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare two saved runs metric by metric: B - A, regressions marked."""
    from cairn.evals.compare import (
        ChartUnavailableError,
        compare_runs,
        render_chart,
        render_markdown,
        render_table,
    )

    a, b = _load_run(run_a), _load_run(run_b)
    comparison = compare_runs(a, b)
    if markdown is not None:
        markdown.write_text(render_markdown(comparison), encoding="utf-8")
    if chart is not None:
        try:
            render_chart([a, b], chart)
        except ChartUnavailableError as exc:
            raise fail(str(exc)) from exc
    if as_json:
        print_json(comparison)
        return
    console.print(render_table(comparison))
    for path in (markdown, chart):
        if path is not None:
            err.print(f"wrote {path}")


# Public benchmarks: `cairn eval qa` and `cairn eval locomo` (cairn.evals.benchmark).

BenchModeOpt = Annotated[
    list[str] | None,
    typer.Option("--mode", help="keyword, semantic or hybrid; repeat for several. Default: all three."),
]
BenchKindOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--kind",
        help="What to search: ideas, spans, messages or all; repeat for several. "
        "Default: messages, ideas, all.",
    ),
]
BenchModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Indexing model for the backfill: 'offline' (the default: an eval never spends money unless "
        "asked) or a model string such as anthropic:claude-haiku-4-5.",
    ),
]
MinScoreOpt = Annotated[
    float,
    typer.Option(
        "--min-score",
        min=0.0,
        max=1.0,
        help="Drop results scoring below this. "
        "Default 0: measure the ranking, not the user-facing threshold.",
    ),
]
BenchKeepOpt = Annotated[
    Path | None,
    typer.Option(
        "--keep-store",
        help="Build the store in this (new or empty) directory and keep it, to look at misses with "
        "CAIRN_HOME=DIR cairn search ...",
    ),
]
SplitsOpt = Annotated[
    Path | None,
    typer.Option(
        "--splits",
        help="The splits file (which labelled session is train, validation or cross). "
        "Default: the repository's evals/datasets/splits.json.",
        show_default=False,
    ),
]
SharedOpt = Annotated[
    Path | None,
    typer.Option(
        "--shared",
        help="The shared folder `{shared}` means in the splits file. Default: $CAIRN_SHARED, else the "
        "folder `shared` beside the repository.",
        show_default=False,
    ),
]
SplitOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--split",
        help="A split of the splits file: train, validation or cross (repeatable). Without it `eval "
        "sessions` runs every split the file has; with it `eval recall` scores SessionStart on the "
        "split's sessions instead of --truth.",
        show_default=False,
    ),
]
MISSES_SHOWN = 20
# Where `cairn eval locomo` writes the converted transcripts, next to the store it builds from them.
LOCOMO_TRANSCRIPTS = "sessions"


def _refuse(message: str) -> typer.Exit:
    """Bad input: one line on stderr (never wrapped, so it stays one line in a log) and exit code 2."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(2)


def _choices(
    values: list[str] | None, allowed: tuple[str, ...], default: tuple[str, ...], option: str
) -> list[str]:
    chosen = list(dict.fromkeys(values)) if values else list(default)
    if unknown := [v for v in chosen if v not in allowed]:
        raise _refuse(f"unknown {option} {', '.join(unknown)}: use {', '.join(allowed)}")
    return chosen


@contextmanager
def _bench_home(keep: Path | None) -> Iterator[Path]:
    if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise _refuse(f"{keep}: --keep-store needs a new or empty directory")
    with _store_home(keep) as home:
        yield home


def _run_benchmark(quiet: bool, **kwargs: Any) -> dict[str, Any]:
    """Run a benchmark with a progress display, turning expected failures into one-line errors."""
    from cairn.agent.models import ModelConfigError
    from cairn.cli.common import run_async
    from cairn.evals.benchmark import BenchmarkError, run_benchmark

    try:
        with progress_bar(disable=quiet) as progress:
            return run_async(run_benchmark(progress=_progress_callback(progress), **kwargs))
    except (ModelConfigError, BenchmarkError, ValueError) as exc:
        raise fail(str(exc)) from exc


def _figure(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_benchmark(run: dict[str, Any]) -> None:
    """The benchmark's figures per mode x kind next to the BM25 baseline, per category, and the misses."""
    store, cost = run["store"], run["cost"]
    console.print(
        f"[bold]{run['dataset']}[/]: {run['questions']} questions over {run['files']} transcript files "
        f"({store['messages']:,} messages, {store['ideas']:,} ideas, {store['spans']:,} spans; indexed by "
        f"{run['model']}, {run['prompt_version']}); backfill {cost['backfill_seconds']:.0f} s, searches "
        f"{cost['search_seconds']:.0f} s"
    )
    tolerance = run["tolerance"]
    near = "at an evidence line" if tolerance == 0 else f"within {tolerance} lines of an evidence line"
    table = Table(
        title=f"recall_any / recall_all @k, MRR, latency in ms (top {run['k']}; a hit is a result {near})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    table.add_column("search", no_wrap=True)
    columns = [f"{how}@{k}" for how in ("any", "all") for k in (1, 5, 10)]
    for column in (*columns, "MRR", "p50", "p95"):
        table.add_column(column, justify="right", no_wrap=True)
    for group, values in run["retrieval"].items():
        latency = cost["latency_ms"][group]
        table.add_row(
            f"[dim]{group}[/]" if group == "bm25" else group,
            *(_figure(values[f"recall_{c}"]) for c in columns),
            _figure(values["mrr"]),
            f"{latency['p50']:.1f}",
            f"{latency['p95']:.1f}",
        )
    console.print(table)
    categories = run["categories"]
    per_category = Table(
        title="recall_any@10 per category (questions)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    per_category.add_column("search")
    for category, count in categories.items():
        per_category.add_column(f"{category} ({count})", justify="right")
    for group, by_category in run["per_category"].items():
        per_category.add_row(
            group, *(_figure(by_category.get(c, {}).get("recall_any@10")) for c in categories)
        )
    console.print(per_category)
    if run.get("shown"):
        console.print(shown_table(run["shown"], run["k"]))
    headline = "hybrid/all" if "hybrid/all" in run["misses"] else list(run["retrieval"])[-1]
    misses = run["misses"][headline]
    console.print(f"[yellow]{len(misses)} misses[/] in {headline} (no evidence in the top {run['k']}):")
    for miss in misses[:MISSES_SHOWN]:
        first = miss["first"]
        instead = "nothing" if first is None else f"{first['id']} {first['at']} {first['preview']!r}"
        console.print(
            f"  {miss['id']} [{miss['category']}] {miss['question']}\n"
            f"    evidence {', '.join(miss['evidence'])}; first: {instead}",
            markup=False,
            highlight=False,
        )
    if len(misses) > MISSES_SHOWN:
        console.print(f"  ... {len(misses) - MISSES_SHOWN} more (--json lists every group's misses)")


def shown_table(shown: dict[str, dict[str, Any]], k: int) -> Table:
    """What a person sees in each group's top k (`cairn.evals.shown`): repeats and unreadable snippets."""
    table = Table(
        title=f"what a person sees in the top {k}: results repeating a higher one, snippets with "
        "escapes or raw tool JSON the text does not hold (as written: the text's own)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    for column in ("search", "results", "repeats", "unreadable", "escapes", "raw JSON", "as written"):
        table.add_column(column, justify="left" if column == "search" else "right", no_wrap=True)
    for group, figures in shown.items():
        table.add_row(
            group,
            f"{figures['results']:,}",
            *(
                f"{figures.get(name, 0):,} ({figures.get(f'{name}_share', 0.0):.0%})"
                for name in ("repeats", "unreadable", "escapes", "raw_json", "as_written")
            ),
        )
    return table


def _finish(run: dict[str, Any], out: Path | None, as_json: bool, keep: Path | None) -> None:
    _save(run, out, as_json)
    if as_json:
        print_json(run)
        return
    render_benchmark(run)
    if keep is not None:
        console.print(f"store kept in {keep} (CAIRN_HOME={keep} cairn search ...)")


@eval_app.command("qa")
def qa(
    qa_file: Annotated[
        Path | None,
        typer.Argument(
            help="The questions: a JSON list of {id, session, question, answer, category, "
            "evidence: [{file, line}]} (the format of coding-qa-dev/qa.json). "
            "Default: the repository's evals/datasets/coding-qa-dev/qa.json.",
            show_default=False,
        ),
    ] = None,
    transcripts: Annotated[
        Path | None,
        typer.Option(
            "--transcripts",
            help="The directory the questions' session and evidence files are relative to "
            "(required with QA_FILE; default with none: the repository's tests/fixtures/transcripts).",
            show_default=False,
        ),
    ] = None,
    tolerance: Annotated[
        int,
        typer.Option(
            "--tolerance",
            min=0,
            max=50,
            help="Lines a result may sit away from an evidence line and count as a hit.",
        ),
    ] = 3,
    mode: BenchModeOpt = None,
    kind: BenchKindOpt = None,
    model: BenchModelOpt = None,
    min_score: MinScoreOpt = 0.0,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    keep_store: BenchKeepOpt = None,
) -> None:
    """Backfill the transcripts a QA set names into a fresh store and score its questions per search mode and
    kind (recall_any/recall_all@1/5/10, MRR, latency), next to BM25 over the same transcript lines."""
    from cairn.evals.qa import load_qa, resolve_qa
    from cairn.evals.questions import DEFAULT_KINDS, DEFAULT_MODES, KINDS, BenchmarkError

    modes = _choices(mode, DEFAULT_MODES, DEFAULT_MODES, "--mode")
    kinds = _choices(kind, KINDS, DEFAULT_KINDS, "--kind")
    try:
        qa_file, transcripts = resolve_qa(qa_file, transcripts)
        data = load_qa(qa_file, transcripts)
    except BenchmarkError as exc:
        raise _refuse(str(exc)) from exc
    settings = load_settings()
    with _bench_home(keep_store) as home:
        run = _run_benchmark(
            as_json,
            benchmark="qa",
            dataset=qa_file.name,
            files=data.files,
            questions=data.questions,
            home=home,
            model=model,
            modes=modes,
            kinds=kinds,
            tolerance=tolerance,
            min_score=min_score,
            base_settings=settings,
        )
    _finish(run, out, as_json, keep_store)


@eval_app.command("locomo")
def locomo(
    files: Annotated[
        list[Path],
        typer.Argument(help="LoCoMo conversation files (one conversation each, e.g. locomo-dev/26.json)."),
    ],
    mode: BenchModeOpt = None,
    kind: BenchKindOpt = None,
    model: BenchModelOpt = None,
    min_score: MinScoreOpt = 0.0,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    keep_store: BenchKeepOpt = None,
) -> None:
    """Convert LoCoMo conversations to Claude Code transcripts, backfill them into a fresh store and score
    categories 1-4 at the turn level (recall_any/recall_all@1/5/10, MRR), next to BM25 over the turns."""
    from cairn.evals.locomo import conversation_names, convert, load_conversation
    from cairn.evals.questions import DEFAULT_KINDS, DEFAULT_MODES, KINDS, BenchmarkError

    modes = _choices(mode, DEFAULT_MODES, DEFAULT_MODES, "--mode")
    kinds = _choices(kind, KINDS, DEFAULT_KINDS, "--kind")
    try:
        conversations = [load_conversation(path) for path in files]
    except BenchmarkError as exc:
        raise _refuse(str(exc)) from exc
    settings = load_settings()
    converted = [
        convert(conversation, name)
        for conversation, name in zip(conversations, conversation_names(files), strict=True)
    ]
    questions = [q for c in converted for q in c.questions]
    if not questions:
        names = ", ".join(f.name for f in files)
        raise _refuse(f"{names}: no scorable question (categories 1-4 with evidence)")
    with _bench_home(keep_store) as home:
        for conversation_files in converted:
            conversation_files.write(home / LOCOMO_TRANSCRIPTS)
        run = _run_benchmark(
            as_json,
            benchmark="locomo",
            dataset="locomo:" + ",".join(f.stem for f in files),
            files={key: path for c in converted for key, path in c.files.items()},
            questions=questions,
            home=home,
            model=model,
            modes=modes,
            kinds=kinds,
            tolerance=0,
            min_score=min_score,
            base_settings=settings,
            extra={
                "conversations": {
                    c.name: {
                        "file": str(path),
                        "sessions": len(c.entries),
                        "turns": len(c.line_of),
                        "questions": len(c.questions),
                        "skipped": c.skipped,
                    }
                    for c, path in zip(converted, files, strict=True)
                },
                "unknown_evidence": [u for c in converted for u in c.unknown_evidence],
            },
        )
    _finish(run, out, as_json, keep_store)


app.add_typer(eval_app, name="eval")
