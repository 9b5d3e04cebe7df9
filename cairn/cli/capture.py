"""Commands that read transcripts: sync, index and backfill store and index them, inspect only reports."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from cairn.cli.common import (
    JsonOpt,
    ModelOpt,
    app,
    console,
    demo_transcript,
    dump,
    err,
    fail,
    index_json,
    interruptible,
    key_value_table,
    load_settings,
    long_request,
    open_store,
    plural,
    print_json,
    render_stats,
    require_known_model,
    run_async,
)
from cairn.cli.progress import JobProgress, duration
from cairn.cli.safe import plain_text
from cairn.cli.stoppable import printed_dry_run, run_stoppable
from cairn.cli.summaries import backfill_summary, elapsed_rows, is_billed, print_failures, render_index
from cairn.clock import process_seconds
from cairn.config import Settings
from cairn.progress import Phases


@app.command()
def sync(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Transcript files or directories. Default: every transcript under "
            "~/.claude/projects (CAIRN_CLAUDE_PROJECTS_DIR), or the demo session when there is none."
        ),
    ] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="Sync only the demo session that ships with cairn.")
    ] = False,
    no_vectors: Annotated[
        bool, typer.Option("--no-vectors", help="Store messages but do not embed them yet.")
    ] = False,
    no_index: Annotated[
        bool, typer.Option("--no-index", help="Store messages but do not run the indexer.")
    ] = False,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Read what is new in your transcripts, index it into ideas, topics and entities, show statistics.

    Safe to run any time: each file is read from where the last run stopped, each message is indexed
    once, and nothing is stored twice. Without ANTHROPIC_API_KEY the offline indexer is used.

    Paths that are not transcripts are listed with the reason they were skipped; when none of the
    given paths holds one, nothing is synced and the exit code is 1.
    """
    from cairn.daemon.jobs import capture_phase, embed_phase
    from cairn.transcripts.discover import scan_transcripts

    settings = load_settings()
    if not no_index:
        require_known_model(settings, model)
    if demo:
        roots, source = [demo_transcript()], "the demo session"
    elif paths:
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise fail(f"no such file or directory: {', '.join(map(str, missing))}")
        roots, source = paths, ", ".join(map(str, paths))
    else:
        roots, source = [settings.projects_dir], str(settings.projects_dir)
    scan = scan_transcripts(roots)
    files, skipped = scan.files, [{"path": str(s.path), "reason": s.reason} for s in scan.skipped]
    if not files and not paths and not demo:
        files, skipped, source = (
            [demo_transcript()],
            [],  # an empty or missing default directory is what the demo fallback is for
            f"the demo session (no transcripts under {settings.projects_dir})",
        )
    if not as_json:
        print_skipped(skipped)
    if paths and not files:
        if as_json:
            print_json({"sync": None, "index": None, "stats": None, "skipped": skipped})
        raise fail(
            f"nothing to sync: none of the {plural(len(paths), 'given path')} holds a Claude Code transcript"
        )
    if _sync_through_daemon(settings, files, skipped, no_vectors or no_index or model is not None, as_json):
        return
    if not as_json:
        console.print(
            plain_text(
                f"Syncing {plural(len(files), 'transcript file')} from {source}"
                + (f" ({len(skipped)} skipped)" if skipped else "")
            )
        )

    async def go() -> dict[str, Any]:
        store = await open_store(settings, embedding_mode="bulk")  # the user waits: every CPU embeds
        try:
            with JobProgress(err) as progress:
                phases = Phases(progress)
                report = await capture_phase(store, files, settings, phases)
                if not no_vectors:
                    report.vectors_synced = await embed_phase(store, phases)
                indexed = None if no_index else await _index(store, settings, model, phases)
            stats = await store.stats()
        finally:
            await store.close()
        return {"sync": report, "index": indexed, "stats": stats}

    result = run_async(go())
    report, indexed, stats = result["sync"], result["index"], result["stats"]
    wall = round(process_seconds(), 3)
    if as_json:
        print_json(
            {
                "sync": {**asdict(report), "messages_added": report.messages_added},
                "index": None if indexed is None else index_json(indexed),
                "stats": dump(stats),
                "skipped": skipped,
                "wall_seconds": wall,
            }
        )
        return
    console.print(
        f"Added [bold]{report.messages_added}[/] messages from {len(report.files)} file(s) "
        f"in {duration(wall)} (the whole command); "
        f"{report.vectors_synced} vectors written; {report.malformed} malformed line(s) skipped"
        + (f"; {report.oversized} line(s) over max_line_bytes skipped" if report.oversized else "")
        + (f"; {plural(report.messages_cut, 'long message')} stored cut" if report.messages_cut else "")
        + (f"; {plural(len(skipped), 'path')} skipped (not transcripts)." if skipped else ".")
    )
    for failed in report.errors:
        err.print(Text("skipped ", style="yellow") + plain_text(f"{failed.path}: {failed.error}"))
    if indexed is not None:
        from cairn.agent.model_names import default_model

        render_index(index_json(indexed), is_billed(model or settings.model or default_model(), settings))
    render_stats(stats)


#: Skipped paths listed one per line; past this many, a count (--json lists them all).
MAX_SKIPPED_SHOWN = 20


def print_skipped(skipped: list[dict[str, str]]) -> None:
    """One line per path `sync` passed over, saying why: never a silent "0 files"."""
    for item in skipped[:MAX_SKIPPED_SHOWN]:
        err.print(
            Text("skipped ", style="yellow") + plain_text(f"{item['path']}: {item['reason']}"), soft_wrap=True
        )
    if len(skipped) > MAX_SKIPPED_SHOWN:
        err.print(
            Text(
                f"… and {len(skipped) - MAX_SKIPPED_SHOWN} more skipped (--json lists them all)",
                style="yellow",
            )
        )


def _sync_through_daemon(
    settings: Settings, files: list[Path], skipped: list[dict[str, str]], custom: bool, as_json: bool
) -> bool:
    """Queue `files` for the running daemon, as its hook does; False when no daemon runs.

    The daemon owns the store, so `sync` cannot read the files itself; the daemon captures and
    indexes them with its own model and settings, which is why options that change how would be
    silently ignored and are refused instead.
    """
    from cairn.daemon.client import DaemonRequestError, NoDaemon, daemon_request
    from cairn.daemon.process import running_pid

    info = running_pid(settings)
    if info is None:
        return False
    if custom:
        raise fail(
            f"the cairn daemon (pid {info.pid}) owns the store and indexes with its own settings; "
            "stop it with `cairn daemon stop` to sync with --no-vectors, --no-index or --model"
        )
    paths = [str(f.resolve()) for f in files]
    try:
        queued = run_async(daemon_request(settings, "enqueue", {"paths": paths}))
    except NoDaemon:
        return False
    except DaemonRequestError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print_json({"daemon": {"pid": info.pid, **queued}, "skipped": skipped})
    else:
        console.print(
            f"Queued {len(paths)} transcript file(s) for the cairn daemon (pid {info.pid}), which reads "
            "and indexes them now; `cairn stats` shows the result."
        )
    return True


async def _index(store: Any, settings: Settings, model: str | None, phases: Phases) -> Any:
    """Run the indexer over what is stored but not indexed yet; a model that cannot be set up is an error."""
    from cairn.agent.models import ModelConfigError
    from cairn.daemon.jobs import index_phase

    try:
        return await index_phase(store, settings, model, None, phases)
    except ModelConfigError as exc:
        raise fail(str(exc)) from exc


@app.command()
def index(
    paths: Annotated[list[Path], typer.Argument(help="Transcript files or directories to index.")],
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the indexing agent over transcripts, from where each was last indexed.

    New bytes are read and stored first; then the stored, not-yet-indexed messages go to the agent in
    token-bounded batches (one session each) and its results are applied. Running it again adds nothing.
    """
    from cairn.transcripts.discover import find_transcripts

    settings = load_settings()
    require_known_model(settings, model)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise fail(f"no such file or directory: {', '.join(map(str, missing))}")
    files = list(find_transcripts(paths))
    if not files:
        raise fail("no Claude Code transcripts among the given paths")

    with JobProgress(err) as progress:
        args = {"paths": [str(f.resolve()) for f in files], "model": model or settings.model}
        data = interruptible(lambda: long_request(settings, "index", args, progress), "index")
    data["job_seconds"], data["wall_seconds"] = data.get("wall_seconds"), round(process_seconds(), 3)
    if as_json:
        print_json(data)
    else:
        console.print(
            f"Read {data['messages_added']} new message(s) from {len(files)} file(s); "
            f"{data.get('vectors_written', 0)} message vectors written."
        )
        render_index(data, is_billed(data.get("model"), settings))
        console.print(key_value_table("time", elapsed_rows(data, int(data["messages_added"]))))
    if data["runs_failed"] and not data["runs_ok"]:
        raise typer.Exit(1)


@app.command()
def backfill(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Transcript files or directories. Default: every transcript under ~/.claude/projects "
            "(CAIRN_CLAUDE_PROJECTS_DIR), or the demo session when there is none."
        ),
    ] = None,
    model: ModelOpt = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only sessions active on or after: 2025-09-01 (local), yesterday, 3d, 12h, 2w."
        ),
    ] = None,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            help="Only sessions of Claude Code projects whose directory or cwd has this, or of the "
            "repository holding this directory (any worktree).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Capture messages, then report the batches, tokens and estimated cost per model "
            "without running the model.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Index your whole transcript history: one session at a time, oldest first, in large batches.

    Each run gets one session's consecutive messages up to the backfill budget. Ctrl-C stops after the
    current batch (twice: at once); a rerun continues from the stored offsets and cursors, with nothing
    indexed twice. Use --dry-run first to see what it would cost.
    """

    from cairn.agent.model_names import default_model
    from cairn.backfill import (
        discover_sessions,
        parse_since,
        select_sessions,
    )
    from cairn.dates import empty_range
    from cairn.pricing import load_prices

    settings = load_settings()
    require_known_model(settings, model)
    missing = [p for p in paths or [] if not p.exists()]
    if missing:
        raise fail(f"no such file or directory: {', '.join(map(str, missing))}")
    try:
        since_at = parse_since(since) if since else None
    except ValueError as exc:  # a bad date is a usage error: exit 2
        raise fail(str(exc), 2) from exc
    if not as_json and (empty := empty_range(since)):
        console.print(plain_text(f"Nothing to backfill: {empty}."))
        return
    try:
        load_prices(settings)  # a bad price file is reported before any work
    except ValueError as exc:
        raise fail(str(exc)) from exc
    roots = paths or [settings.projects_dir]
    sessions = select_sessions(discover_sessions(roots), since=since_at, project=project)
    if not paths and not sessions and not since and not project:
        # A new user with no Claude Code history yet still sees cairn work, on the session it ships.
        if not as_json:
            console.print(f"No transcripts under {settings.projects_dir}: backfilling the demo session.")
        roots = [demo_transcript()]
        sessions = select_sessions(discover_sessions(roots))
    files = [f for s in sessions for f in s.files]
    model_name = (model or settings.model or default_model()).strip()
    if not as_json:
        console.print(
            f"Backfilling {len(sessions)} session(s) ({len(files)} file(s)) from "
            f"{', '.join(map(str, roots))}{' — dry run' if dry_run else f' with {model_name}'}"
        )
    args = {
        "paths": [str(p.resolve()) for p in roots],
        "model": model or settings.model,
        "since": since_at.isoformat() if since_at else None,  # one instant for CLI and daemon
        "project": project,
        "dry_run": dry_run,
    }
    stopped = "Stopped at once; the batch in progress was not applied. Rerun `cairn backfill` to continue."
    data = run_stoppable(settings, "backfill", args, stopped_at_once=stopped)
    if printed_dry_run(data, as_json, settings):
        return
    if as_json:
        print_json(data)
    else:
        console.print(backfill_summary(data, is_billed(data.get("model"), settings)))
        print_failures(data)
    if data["interrupted"]:
        err.print(
            f"Interrupted after {data['sessions_done']} of {data['sessions_total']} session(s). Run "
            "`cairn backfill` again to continue where it stopped; nothing is indexed twice."
        )
        raise typer.Exit(130)
    if data["runs_failed"] and not data["runs_ok"]:
        raise typer.Exit(1)


@app.command()
def inspect(
    paths: Annotated[list[Path], typer.Argument(help="Transcript JSONL files or directories to read.")],
    as_json: JsonOpt = False,
) -> None:
    """Read transcripts without storing anything and report what is in them.

    Entries by type, messages by role, tool calls by tool, malformed lines, bytes left unread as a
    half-written last line, sessions with their cwd and git branch, first and last timestamp.
    """
    from cairn.transcripts.inspect import inspect_files

    files: list[Path] = []
    for path in paths:
        if not path.exists():
            raise fail(f"no such file or directory: {path}")
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    report = inspect_files(files)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    _render_inspect(report)


def _render_inspect(report: Any) -> None:
    data = report.model_dump(mode="json")
    if len(data["files"]) > 1:
        files = Table(title="files", title_justify="left")
        for col in ("file", "entries", "messages", "tool calls", "malformed", "partial bytes"):
            files.add_column(col, justify="left" if col == "file" else "right")
        for f in data["files"]:
            files.add_row(
                plain_text(Path(f["path"]).name),
                str(f["entries"]),
                str(sum(f["messages_by_role"].values())),
                str(sum(f["tool_calls_by_name"].values())),
                str(f["malformed_lines"]),
                str(f["partial_bytes"]),
            )
        console.print(files)
    total = data["total"]
    sessions = total.pop("sessions")
    console.print(
        key_value_table("transcripts" if len(data["files"]) > 1 else data["files"][0]["path"], total)
    )
    if sessions:
        table = Table(title="sessions", title_justify="left")
        for col in ("session", "cwd", "git branch", "entries", "first", "last"):
            table.add_column(col)
        for sess in sessions:
            table.add_row(  # every cell but the count is the transcript's text
                plain_text(sess["session_id"]),
                plain_text(sess["cwd"] or "—"),
                plain_text(sess["git_branch"] or "—"),
                str(sess["entries"]),
                plain_text(sess["first_timestamp"] or "—"),
                plain_text(sess["last_timestamp"] or "—"),
            )
        console.print(table)
    for f in data["files"]:
        for line, reason in f.get("malformed_samples", []):
            err.print(Text("malformed ", style="yellow") + plain_text(f"{f['path']}:{line}: {reason}"))
