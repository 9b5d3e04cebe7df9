"""`cairn eval recall`: what recall injects (per prompt, off topic, at SessionStart), next to a baseline."""

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

SHOWN_MISSES = 12


def _figure(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _render_prompts(run: dict[str, Any]) -> None:
    prompts, off = run["prompts"], run["off_topic"]
    table = Table(
        title=f"per-prompt recall: {prompts['recall']['prompts']} questions of {run['dataset']} "
        f"(a hit is an injected item within {run['tolerance']} lines of an evidence line), "
        f"{off['prompts']} off-topic prompts",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    for column in (
        "",
        "fired",
        "hit rate",
        "precision",
        "items",
        "tokens",
        "false fires",
        "p50 ms",
        "p95 ms",
    ):
        table.add_column(column, justify="left" if not column else "right", no_wrap=True)
    for name, figures, false_fire in (
        (
            "recall",
            prompts["recall"],
            off["recall"]["false_fire"],
        ),
        ("[dim]baseline[/]", prompts["baseline"], off["baseline"]["false_fire"]),
    ):
        latency = figures["latency_ms"] or {"p50": None, "p95": None}
        table.add_row(
            name,
            _figure(figures["fired"]),
            _figure(figures["hit_rate"]),
            _figure(figures["precision"]),
            _figure(figures["items_per_fired"], 1),
            _figure(figures["tokens_per_fired"], 0),
            _figure(false_fire),
            _figure(latency["p50"], 1),
            _figure(latency["p95"], 1),
        )
    console.print(table)
    console.print(f"[dim]baseline: {run['baseline']}[/]")
    if off["recall"]["by_source"]:
        sources = ", ".join(f"{name} {_figure(rate)}" for name, rate in off["recall"]["by_source"].items())
        console.print(f"false fires by source: {sources}")
    settings = run["settings"]
    console.print(
        f"recall: min score {settings['recall_min_score']}, min specificity "
        f"{settings['recall_min_specificity']}, at most {settings['recall_prompt_lines']} lines"
    )
    for over, other in (("min_specificity", "min_score"), ("min_score", "min_specificity")):
        curve = Table(
            title=f"what a {over.replace('_', ' ')} would do ({other.replace('_', ' ')} "
            f"{settings['recall_' + other]})",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            collapse_padding=True,
            pad_edge=False,
        )
        for column in (over.replace("_", " "), "fired", "hit rate", "precision", "false fires"):
            curve.add_column(column, justify="right")
        for row in run["curve"][over]:
            curve.add_row(
                _figure(row[over]),
                _figure(row["fired"]),
                _figure(row["hit_rate"]),
                _figure(row["precision"]),
                _figure(row["false_fire"]),
            )
        console.print(curve)


def _render_session_start(run: dict[str, Any]) -> None:
    session_start = run["session_start"]
    if session_start is None:
        return
    against = f"{run['truth']} {'+'.join(run['split'])}" if run.get("split") else run["truth"]
    table = Table(
        title=f"SessionStart against {against} ({session_start['sessions']} sessions, each backfilled alone)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    for column in (
        "section",
        "shown",
        "right",
        "prec",
        "labels",
        "found",
        "recall",
        "declined",
        "wrong open",
    ):
        table.add_column(column, justify="left" if column == "section" else "right", no_wrap=True)
    for section, row in session_start["totals"].items():
        table.add_row(
            section,
            str(row["shown"]),
            str(row["correct"]),
            _figure(row["precision"]),
            str(row.get("labels", "-")),
            str(row.get("recalled", "-")),
            _figure(row.get("recall")),
            str(row["declined_shown"]),
            str(row.get("wrong_open", "-")),
        )
    console.print(table)
    indexer = session_start["indexer"]["totals"]
    stored = Table(
        title="the indexer itself: labels with an idea of their kind within the tolerance (captured), "
        "and in the right state (open: unsettled; closed: answered or done)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    for column in ("labels", "count", "captured", "state right"):
        stored.add_column(column, justify="left" if column == "labels" else "right", no_wrap=True)
    for part in ("open", "closed", "decisions", "fixes"):
        row = indexer[part]
        stored.add_row(
            part,
            str(row["labels"]),
            _figure(row["captured_share"]),
            _figure(row.get("state_right_share")),
        )
    console.print(stored)
    console.print(f"declined suggestions stored as a live decision or fix: {indexer['declined_as_fact']}")
    wrong = [
        (key.rsplit("/", 1)[-1][:8], section, miss)
        for key, figures in session_start["per_session"].items()
        for section in ("open", "decisions", "fixes", "conclusions")
        for miss in figures[section]["misses"]
    ]
    if wrong:
        console.print(
            f"[yellow]{len(wrong)} shown items match no label[/] (first {min(len(wrong), SHOWN_MISSES)}):"
        )
        for session, section, miss in wrong[:SHOWN_MISSES]:
            console.print(
                f"  {session} {section} #{miss['idea']} line {miss['lines'][0]}: {miss['text'][:110]}",
                markup=False,
                highlight=False,
            )


@eval_app.command("recall")
def recall(
    qa_file: Annotated[
        Path | None,
        typer.Argument(
            help="Prompts that should recall: a QA file (the format of coding-qa-dev/qa.json). "
            "Default: the repository's evals/datasets/coding-qa-dev/qa.json.",
            show_default=False,
        ),
    ] = None,
    transcripts: Annotated[
        Path | None,
        typer.Option(
            "--transcripts",
            help="The directory the QA and truth files' paths are relative to (required with QA_FILE; "
            "default with none: the repository's tests/fixtures/transcripts).",
            show_default=False,
        ),
    ] = None,
    truth: Annotated[
        Path | None,
        typer.Option(
            "--truth",
            help="Score SessionStart against this session-truth file (the format of session-truth-dev/"
            "truth.json). Default with no QA_FILE: the repository's session-truth-dev.",
            show_default=False,
        ),
    ] = None,
    locomo: Annotated[
        list[Path] | None,
        typer.Option(
            "--locomo",
            help="LoCoMo conversation files whose questions are asked as off-topic prompts inside the coding "
            "projects (repeatable; e.g. locomo-dev/26.json).",
            show_default=False,
        ),
    ] = None,
    everyday: Annotated[
        Path | None,
        typer.Option(
            "--everyday",
            help="Everyday off-topic prompts: a JSON list of strings. "
            "Default: the repository's evals/datasets/recall/everyday.json.",
            show_default=False,
        ),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score", min=0.0, max=1.0, help="Try this recall_min_score instead of the default."
        ),
    ] = None,
    min_specificity: Annotated[
        float | None,
        typer.Option(
            "--min-specificity",
            min=0.0,
            max=100.0,
            help="Try this recall_min_specificity instead of the default.",
        ),
    ] = None,
    tolerance: Annotated[
        int,
        typer.Option("--tolerance", min=0, max=50, help="Lines an injected item may sit from its evidence."),
    ] = 3,
    split: SplitOpt = None,
    splits_file: SplitsOpt = None,
    shared: SharedOpt = None,
    model: BenchModelOpt = None,
    as_json: JsonOpt = False,
    out: OutOpt = None,
    keep_store: BenchKeepOpt = None,
) -> None:
    """Score what recall injects into the coding agent, next to a baseline of the top 3 search results:
    per-prompt recall on QA questions (fired, hit rate, precision, tokens, latency), false fires on off-topic
    prompts, the curve a score floor draws, and SessionStart against session-truth labels (a truth file, or
    with --split the labelled sessions of that split in splits.json)."""
    from cairn.agent.models import ModelConfigError
    from cairn.cli.common import run_async
    from cairn.evals.locomo import load_conversation
    from cairn.evals.qa import load_qa, resolve_qa
    from cairn.evals.questions import BenchmarkError
    from cairn.evals.recall import DEFAULT_EVERYDAY, OffTopic, load_prompts, run_recall_eval
    from cairn.evals.splits import as_truth_set, load_sessions, load_splits, select
    from cairn.evals.truth import DEFAULT_TRUTH, load_truth

    if split and truth is not None:
        raise _refuse("--truth and --split exclude each other: SessionStart is scored against one of them")
    try:
        if truth is None and qa_file is None and not split:
            truth = DEFAULT_TRUTH
        qa_file, transcripts = resolve_qa(qa_file, transcripts)
        data = load_qa(qa_file, transcripts)
        truth_set = None if truth is None else load_truth(truth, transcripts)
        if split:
            splits = load_splits(splits_file, shared=shared)
            truth_set = as_truth_set(splits, load_sessions(splits, select(splits, split)))
        off_topic = [OffTopic("everyday", p) for p in load_prompts(everyday or DEFAULT_EVERYDAY)]
        for path in locomo or []:
            conversation = load_conversation(path)
            off_topic += [OffTopic("locomo", q.question) for q in conversation.qa if q.question.strip()]
    except BenchmarkError as exc:
        raise _refuse(str(exc)) from exc
    settings = load_settings()
    overrides = {
        name: value
        for name, value in (("recall_min_score", min_score), ("recall_min_specificity", min_specificity))
        if value is not None
    }
    with _bench_home(keep_store) as home:
        try:
            with progress_bar(disable=as_json) as progress:
                run = run_async(
                    run_recall_eval(
                        qa=data,
                        truth=truth_set,
                        off_topic=off_topic,
                        home=home,
                        model=model,
                        tolerance=tolerance,
                        base_settings=settings,
                        overrides=overrides,
                        progress=_progress_callback(progress),
                    )
                )
        except (ModelConfigError, BenchmarkError, ValueError) as exc:
            raise fail(str(exc)) from exc
    if split:
        run["split"] = list(dict.fromkeys(split))  # SessionStart's sessions: this split of the splits file
    _save(run, out, as_json)
    if as_json:
        print_json(run)
        return
    _render_prompts(run)
    _render_session_start(run)
    if keep_store is not None:
        console.print(f"stores kept in {keep_store} (CAIRN_HOME={keep_store}/prompts cairn search ...)")
