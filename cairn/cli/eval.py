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
    names = {"capture": "capturing transcripts", "index": "indexing batches"}

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
    from cairn.evals.indexing import run_indexing
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
    except (ModelConfigError, PromptNotFoundError, ReplayMismatchError, RecordingError, ValueError) as exc:
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


app.add_typer(eval_app, name="eval")
