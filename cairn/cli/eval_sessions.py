"""`cairn eval sessions`: what the indexer distils from the labelled real sessions, per split."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from cairn.cli.common import JsonOpt, console, fail, load_settings, print_json, progress_bar
from cairn.cli.eval import (
    BenchKeepOpt,
    BenchModelOpt,
    OutOpt,
    SharedOpt,
    SplitOpt,
    SplitsOpt,
    _bench_home,
    _progress_callback,
    _refuse,
    _save,
    eval_app,
)

SHOWN_MISSES = 8


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(part: int, whole: int) -> str:
    return f"{part}/{whole} ({_share(part / whole if whole else None)})"


def _cover(row: dict[str, Any]) -> str:
    return f"{row['covered']}/{row['labels']} ({_share(row['share'])})"


def _cells(name: str, figures: dict[str, Any], sessions: int) -> list[str]:
    coverage = figures["coverage"]
    links = figures["answered_links"]
    near = figures["near_label"]
    opens = figures["session_start"]["open"]
    per_100 = figures["ideas_per_100_messages"]
    return [
        name,
        str(sessions),
        str(figures["messages"]),
        str(figures["ideas"]),
        "-" if per_100 is None else f"{per_100:.1f}",
        *(_cover(coverage[part]) for part in ("decisions", "fixes", "closed", "open")),
        f"{near['near']}/{near['ideas']} ({_share(near['share'])})",
        f"{links['correct']}/{links['links']} ({_share(links['precision'])})",
        _ratio(opens["correct"], opens["shown"]),
        f"{opens['recalled']}/{opens['labels']}",
        str(opens["wrong_open"]),
    ]


def _render(run: dict[str, Any]) -> None:
    weights = f", weights {run['weights']}" if run.get("weights") else ""
    console.print(
        f"[bold]labelled sessions[/] of {run['splits_file']}: model {run['model']}, prompt "
        f"{run['prompt_version']}, tolerance ±{run['tolerance']} lines{weights}",
        highlight=False,
    )
    for split, figures in run["splits"].items():
        table = Table(
            title=f"{split} ({figures['totals']['sessions']} sessions)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            collapse_padding=True,
            pad_edge=False,
        )
        for column in (
            "split / project / session",
            "sessions",
            "msgs",
            "ideas",
            "ideas/100",
            "decisions",
            "fixes",
            "closed",
            "open",
            "near a label",
            "answered links",
            "SS open prec",
            "SS open rec",
            "wrong open",
        ):
            table.add_column(column, justify="left" if column.startswith("split") else "right", no_wrap=True)
        totals = figures["totals"]
        table.add_row(*_cells(f"[bold]{split}[/]", totals, totals["sessions"]))
        for project, row in figures["projects"].items():
            table.add_row(*_cells(f"  {project}", row, row["sessions"]))
            for session in (s for s in run["sessions"] if s["split"] == split and s["project"] == project):
                name = Path(session["key"]).name[:8]
                table.add_row(*_cells(f"[dim]    {name}[/]", session, 1))
        console.print(table)
    console.print(
        f"decisions, fixes, closed, open: labels with an idea of any kind within ±{run['tolerance']} lines; "
        "near a label: ideas within it of a labelled line; answered links: question and answer both at one "
        "closed item or fix; SS open: SessionStart's open items right / shown, labels found, wrong opens",
        style="dim",
    )
    missed = [
        (Path(s["key"]).name[:8], part, miss)
        for s in run["sessions"]
        for part in ("decisions", "fixes", "closed", "open")
        for miss in s["coverage"][part]["missed"]
    ]
    if missed:
        console.print(
            f"[yellow]{len(missed)} labels with no idea near them[/] "
            f"(first {min(len(missed), SHOWN_MISSES)}; "
            "all of them with --json):"
        )
        for session, part, miss in missed[:SHOWN_MISSES]:
            where = miss.get("line") or "/".join(str(line) for line in miss.get("lines", []))
            console.print(
                f"  {session} {part} line {where}: {miss['text'][:100]}", markup=False, highlight=False
            )


@eval_app.command("sessions")
def sessions(
    split: SplitOpt = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Only the sessions of this project.", show_default=False)
    ] = None,
    splits_file: SplitsOpt = None,
    shared: SharedOpt = None,
    weights: Annotated[
        Path | None,
        typer.Option(
            "--weights",
            help="Run the offline indexer with this learned model: sets CAIRN_OFFLINE_WEIGHTS for the run "
            "(recorded in its output).",
            show_default=False,
        ),
    ] = None,
    tolerance: Annotated[
        int, typer.Option("--tolerance", min=0, max=50, help="Lines an idea may sit from a labelled line.")
    ] = 3,
    model: BenchModelOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    keep_store: BenchKeepOpt = None,
) -> None:
    """Backfill each labelled session alone into a fresh store and score what the indexer kept, per split
    (train, validation, cross), project and session: ideas per 100 messages, labels covered by an idea
    (decisions, fixes, closed and open items), ideas near a label, answered-link precision and SessionStart's
    open items."""
    from cairn.agent.models import ModelConfigError
    from cairn.cli.common import run_async
    from cairn.evals.questions import BenchmarkError
    from cairn.evals.sessions import offline_weights, run_sessions_eval
    from cairn.evals.splits import load_sessions, load_splits, select

    try:
        splits = load_splits(splits_file, shared=shared)
        chosen = load_sessions(splits, select(splits, split, project))
    except BenchmarkError as exc:
        raise _refuse(str(exc)) from exc
    if weights is not None and not weights.is_file():
        raise _refuse(f"{weights}: no such weights file (--weights names a learned model's JSON file)")
    settings = load_settings()
    with _bench_home(keep_store) as home, offline_weights(weights and weights.resolve()) as in_effect:
        about = {
            "splits_file": str(splits.path),
            "shared": str(splits.shared),
            "weights": in_effect,
            "selected": {"splits": split or splits.present(), "project": project},
        }
        try:
            with progress_bar(disable=as_json) as progress:
                run = run_async(
                    run_sessions_eval(
                        chosen,
                        home,
                        model=model,
                        tolerance=tolerance,
                        base_settings=settings,
                        progress=_progress_callback(progress),
                        about=about,
                    )
                )
        except (ModelConfigError, BenchmarkError, ValueError) as exc:
            raise fail(str(exc)) from exc
    _save(run, out, as_json)
    if as_json:
        print_json(run)
        return
    _render(run)
    if keep_store is not None:
        console.print(f"stores kept in {keep_store}/sessions/N (CAIRN_HOME=... cairn ideas)")
