"""The `cairn` command line: a thin face over the library (rich for people, `--json` for scripts)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cairn import __version__
from cairn.config import Settings

app = typer.Typer(
    name="cairn",
    help="A searchable memory built from your coding agents' transcripts.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

T = TypeVar("T")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")]


def _run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def _settings() -> Settings:
    """Load settings, turning a bad value into a one-line error instead of a traceback."""
    from pydantic import ValidationError

    try:
        return Settings.load()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise _fail(f"invalid cairn setting (CAIRN_* variable or config.toml): {problems}") from exc


def demo_transcript() -> Path:
    """The small demo session cairn ships, used when no Claude Code transcripts exist yet."""
    return Path(str(resources.files("cairn.demo").joinpath("demo-session.jsonl")))


def _version(value: bool) -> None:
    if value:
        console.print(f"cairn {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """cairn reads Claude Code session transcripts and keeps a searchable memory of them.

    State lives in $CAIRN_HOME (default ~/.cairn); settings come from CAIRN_* variables and
    $CAIRN_HOME/config.toml.
    """


async def _open_store(settings: Settings):
    from cairn.store.lock import StoreLockedError
    from cairn.store.store import Store

    try:
        return await Store.open(settings)
    except StoreLockedError as exc:
        raise _fail(str(exc)) from exc


ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Indexing model: 'offline', a pydantic-ai model string such as anthropic:claude-haiku-4-5, or "
        "openai-chat:NAME / ollama:NAME with CAIRN_MODEL_BASE_URL. Default: CAIRN_MODEL, else Claude Haiku "
        "with ANTHROPIC_API_KEY, else offline.",
    ),
]


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
    """
    from cairn.ingest import sync_paths
    from cairn.transcripts.discover import find_transcripts

    settings = _settings()
    if demo:
        roots, source = [demo_transcript()], "the demo session"
    elif paths:
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise _fail(f"no such file or directory: {', '.join(map(str, missing))}")
        roots, source = paths, ", ".join(map(str, paths))
    else:
        roots, source = [settings.projects_dir], str(settings.projects_dir)
    files = list(find_transcripts(roots))
    if not files and not paths and not demo:
        files, source = (
            [demo_transcript()],
            f"the demo session (no transcripts under {settings.projects_dir})",
        )
    if _sync_through_daemon(settings, files, no_vectors or no_index or model is not None, as_json):
        return
    if not as_json:
        console.print(f"Syncing {len(files)} transcript file(s) from {source}")

    async def go() -> dict[str, Any]:
        store = await _open_store(settings)
        try:
            with _progress(disable=as_json) as progress:
                task = progress.add_task("reading transcripts", total=len(files))
                report = await sync_paths(
                    store, files, settings, vectors=False, on_file=lambda _p: progress.advance(task)
                )
                if not no_vectors:
                    vec_task = progress.add_task("embedding", total=None)
                    report.vectors_synced = await store.sync_vectors(
                        progress=lambda done, total: progress.update(vec_task, completed=done, total=total)
                    )
                indexed = None if no_index else await _index(store, settings, model, None, progress)
            stats = await store.stats()
        finally:
            await store.close()
        return {"sync": report, "index": indexed, "stats": stats}

    result = _run(go())
    report, indexed, stats = result["sync"], result["index"], result["stats"]
    if as_json:
        _print_json(
            {
                "sync": {**asdict(report), "messages_added": report.messages_added},
                "index": None if indexed is None else _index_json(indexed),
                "stats": _dump(stats),
            }
        )
        return
    console.print(
        f"Added [bold]{report.messages_added}[/] messages from {len(report.files)} file(s); "
        f"{report.vectors_synced} vectors written; {report.malformed} malformed line(s) skipped."
    )
    for failed in report.errors:
        err.print(f"[yellow]skipped[/] {failed.path}: {failed.error}")
    if indexed is not None:
        _render_index(indexed)
    _render_stats(stats)


def _sync_through_daemon(settings: Settings, files: list[Path], custom: bool, as_json: bool) -> bool:
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
        raise _fail(
            f"the cairn daemon (pid {info.pid}) owns the store and indexes with its own settings; "
            "stop it with `cairn daemon stop` to sync with --no-vectors, --no-index or --model"
        )
    paths = [str(f.resolve()) for f in files]
    try:
        queued = _run(daemon_request(settings, "enqueue", {"paths": paths}))
    except NoDaemon:
        return False
    except DaemonRequestError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        _print_json({"daemon": {"pid": info.pid, **queued}})
    else:
        console.print(
            f"Queued {len(paths)} transcript file(s) for the cairn daemon (pid {info.pid}), which reads "
            "and indexes them now; `cairn stats` shows the result."
        )
    return True


async def _index(
    store: Any, settings: Settings, model: str | None, paths: list[str] | None, progress: Progress
) -> Any:
    """Run the indexer over what is stored but not indexed yet; a model that cannot be set up is an error."""
    from cairn.agent.indexer import index_pending
    from cairn.agent.models import ModelConfigError

    task = progress.add_task("indexing", total=None)
    try:
        return await index_pending(
            store, settings, model=model, paths=paths, on_batch=lambda _planned, _run: progress.advance(task)
        )
    except ModelConfigError as exc:
        raise _fail(str(exc)) from exc


def _index_json(report: Any) -> dict[str, Any]:
    from cairn.daemon.jobs import index_json

    return index_json(report)


def _render_index(report: Any) -> None:
    """Render an `IndexReport`, or the JSON of one (as `index_json` builds it; extra keys are ignored)."""
    data = dict(report) if isinstance(report, dict) else _index_json(report)
    data.pop("messages_added", None)
    applied = data.pop("applied")
    failures = data.pop("failures")
    applied.pop("run_id", None)
    console.print(_key_value_table("indexed", {**applied, **data}))
    for failure in failures:
        err.print(f"[yellow]run {failure['run_id']} {failure['outcome']}[/]: {failure['error']}")


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

    settings = _settings()
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise _fail(f"no such file or directory: {', '.join(map(str, missing))}")
    files = list(find_transcripts(paths))
    if not files:
        raise _fail("no Claude Code transcripts among the given paths")

    with _progress(disable=as_json) as progress:
        tasks: dict[str, Any] = {}

        def on_progress(event: dict[str, Any]) -> None:
            step = event.get("step")
            if step == "read":
                if "read" not in tasks:
                    tasks["read"] = progress.add_task("reading transcripts", total=len(files))
                progress.advance(tasks["read"], event.get("advance", 0))
            elif step == "index":
                if "index" not in tasks:
                    tasks["index"] = progress.add_task("indexing", total=None)
                progress.advance(tasks["index"], event.get("advance", 1))

        args = {"paths": [str(f.resolve()) for f in files], "model": model or settings.model}
        data = _interruptible(lambda: _long_request(settings, "index", args, on_progress), "index")
    if as_json:
        _print_json(data)
    else:
        console.print(f"Read {data['messages_added']} new message(s) from {len(files)} file(s).")
        _render_index(data)
    if data["runs_failed"] and not data["runs_ok"]:
        raise typer.Exit(1)


def _interruptible(make: Callable[[], Coroutine[Any, Any, T]], command: str) -> T:
    """Run `make()`; Ctrl-C ends the command (a daemon finishes the batch in flight and stops there)."""
    try:
        return _run(make())
    except KeyboardInterrupt:
        err.print(f"Interrupted; nothing is half-applied. Rerun `cairn {command}` to continue.")
        raise typer.Exit(130) from None


async def _long_request(
    settings: Settings,
    op: str,
    args: dict[str, Any],
    on_progress: Callable[[dict[str, Any]], None],
    *,
    should_stop: Callable[[], bool] | None = None,
    on_direct: Callable[[], Any] | None = None,
) -> Any:
    """A long store operation (`cairn.daemon.jobs`): run by the daemon when it runs, else here.

    Both paths run the same job function and return its JSON, streaming the same progress events;
    `on_direct` is called before the direct path starts (e.g. to take over Ctrl-C), and `should_stop`
    is that path's batch-boundary stop.
    """
    from cairn.agent.models import ModelConfigError
    from cairn.daemon import jobs
    from cairn.daemon.client import DaemonRequestError, NoDaemon, daemon_request
    from cairn.daemon.server import to_json

    try:
        return await daemon_request(settings, op, args, timeout=None, on_progress=on_progress)
    except NoDaemon:
        pass
    except DaemonRequestError as exc:
        raise _fail(str(exc)) from exc
    fn = {
        "index": jobs.index_job,
        "backfill": jobs.backfill_job,
        "reindex_vectors": jobs.reindex_vectors_job,
    }[op]
    store = await _open_store(settings)
    try:
        if on_direct is not None:
            on_direct()
        return to_json(
            await fn(store, settings, **args, emit=on_progress, should_stop=should_stop or (lambda: False))
        )
    except ModelConfigError as exc:
        raise _fail(str(exc)) from exc
    finally:
        await store.close()


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
            "--since", help="Only sessions active on or after this ISO date (UTC), e.g. 2025-09-01."
        ),
    ] = None,
    project: Annotated[
        str | None,
        typer.Option(
            "--project", help="Only sessions of Claude Code projects whose directory or cwd has this."
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
    import os
    import signal

    from rich.progress import TimeRemainingColumn

    from cairn.backfill import (
        discover_sessions,
        estimate_tables,
        parse_since,
        select_sessions,
    )
    from cairn.doctor import default_model
    from cairn.pricing import load_prices

    settings = _settings()
    missing = [p for p in paths or [] if not p.exists()]
    if missing:
        raise _fail(f"no such file or directory: {', '.join(map(str, missing))}")
    try:
        since_at = parse_since(since) if since else None
        load_prices(settings)  # a bad price file is reported before any work
    except ValueError as exc:
        raise _fail(str(exc)) from exc
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
    interactive = err.is_terminal and not as_json
    if not as_json:
        console.print(
            f"Backfilling {len(sessions)} session(s) ({len(files)} file(s)) from "
            f"{', '.join(map(str, roots))}{' — dry run' if dry_run else f' with {model_name}'}"
        )
    stop_requests = 0

    def on_signal() -> None:
        nonlocal stop_requests
        stop_requests += 1
        if stop_requests == 1:
            err.print("Stopping after the current batch… (press Ctrl-C again to stop at once)")
            return
        # Equivalent to a crash, which the store survives: the batch in flight is simply not applied.
        err.print(
            "Stopped at once; the batch in progress was not applied. Rerun `cairn backfill` to continue."
        )
        os._exit(130)

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("sessions {task.fields[sessions]}/{task.fields[of]}"),
        MofNCompleteColumn(),
        TextColumn("messages · {task.fields[ideas]} ideas · {task.fields[tokens]:,} tokens"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not interactive,
    )
    counters = {"sessions": 0, "ideas": 0, "tokens": 0}
    tasks: dict[str, Any] = {}

    def on_progress(event: dict[str, Any]) -> None:
        step = event.get("step")
        if step == "start":
            tasks["backfill"] = progress.add_task(
                "backfill", total=event["total"], sessions=0, of=event["sessions"], ideas=0, tokens=0
            )
            return
        task = tasks.get("backfill")
        if task is None:
            return
        if step == "batch":
            counters["ideas"] += event["ideas"]
            counters["tokens"] += event["tokens"]
            progress.update(
                task, advance=event["messages"], ideas=counters["ideas"], tokens=counters["tokens"]
            )
        elif step == "session":
            counters["sessions"] += 1
            progress.update(task, sessions=counters["sessions"])
            if interactive or as_json:
                return
            failed = f", {event['failures']} failed run(s)" if event["failures"] else ""
            sys.stdout.write(
                f"[{counters['sessions']}/{len(sessions)}] {event['session']} ({event['project']}): "
                f"{event['batches']} batch(es), {event['messages']} messages, {event['ideas']} ideas, "
                f"{event['input_tokens'] + event['output_tokens']} tokens, {event['elapsed']:.1f}s "
                f"elapsed{failed}\n"
            )
            sys.stdout.flush()

    def take_over_signals() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal)

    args = {
        "paths": [str(p.resolve()) for p in roots],
        "model": model or settings.model,
        "since": since,
        "project": project,
        "dry_run": dry_run,
    }
    with progress:
        data = _interruptible(
            lambda: _long_request(
                settings,
                "backfill",
                args,
                on_progress,
                should_stop=lambda: stop_requests > 0,
                on_direct=None if dry_run else take_over_signals,
            ),
            "backfill",
        )
    if data.get("dry_run"):
        if as_json:
            _print_json(data)
        else:
            for renderable in estimate_tables(data):
                console.print(renderable)
        return

    if as_json:
        _print_json(data)
    else:
        summary = {
            key: data[key]
            for key in ("sessions_total", "sessions_done", "interrupted", "messages_added", "wall_seconds")
        }
        console.print(_key_value_table("backfill", summary))
        _render_index(data)
    if data["interrupted"]:
        err.print(
            f"Interrupted after {data['sessions_done']} of {data['sessions_total']} session(s). Run "
            "`cairn backfill` again to continue where it stopped; nothing is indexed twice."
        )
        raise typer.Exit(130)
    if data["runs_failed"] and not data["runs_ok"]:
        raise typer.Exit(1)


@app.command()
def stats(as_json: JsonOpt = False) -> None:
    """Show what the store holds: projects, sessions, messages, ideas, vectors, queue."""
    data = _run(_request(_settings(), "stats"))
    if as_json:
        _print_json(data)
    else:
        _render_stats(data)


@app.command()
def status(
    as_json: JsonOpt = False,
    runs: Annotated[int, typer.Option("--runs", min=0, help="How many recent index runs to list.")] = 10,
) -> None:
    """Show the daemon, its queue, parked items, recent index runs and today's token spend.

    Reads the store read-only, so it works the same whether or not the daemon owns the store.
    """
    from cairn.daemon.status import read_status

    state = read_status(_settings(), recent=runs)
    if as_json:
        _print_json({**asdict(state), "depth": state.depth})
        return
    daemon = state.daemon
    if daemon.running and daemon.pid is not None and daemon.uptime_seconds is not None:
        console.print(f"cairn daemon running (pid {daemon.pid}, up {_uptime(daemon.uptime_seconds)})")
    else:
        console.print("cairn daemon not running")
    if not state.store:
        console.print(f"no cairn store at {state.home} yet: `cairn install` or `cairn sync` creates one")
        return
    if state.error:
        err.print(f"[bold red]error:[/] {state.error}")
        raise typer.Exit(1)
    today = state.today
    summary: dict[str, Any] = {
        "queue": f"{state.depth} waiting ({_counts(state.queue)})",
        "ideas": state.ideas,
        "messages": state.messages,
    }
    if today is not None:
        summary[f"today ({today.date} UTC)"] = (
            f"{today.runs} run(s), {today.failed_runs} failed, "
            f"{today.input_tokens:,} tokens in, {today.output_tokens:,} out"
        )
    summary["log"] = daemon.log
    console.print(_key_value_table("cairn status", summary))
    if state.parked:
        table = Table(title="parked (failed too often, no longer retried)", title_justify="left")
        for col in ("id", "path", "attempts", "error"):
            # Fold, never cut: a parked item's path and error are what the user came to read.
            table.add_column(col, justify="right" if col in {"id", "attempts"} else "left", overflow="fold")
        for item in state.parked:
            table.add_row(str(item.id), item.path, str(item.attempts), item.last_error or "—")
        console.print(table)
    if state.retrying:
        table = Table(title="retrying", title_justify="left")
        for col in ("id", "path", "attempts", "next try", "error"):
            table.add_column(col, justify="right" if col in {"id", "attempts"} else "left", overflow="fold")
        for retry in state.retrying:
            table.add_row(
                str(retry.id),
                retry.path,
                str(retry.attempts),
                retry.next_try_at or "—",
                retry.last_error or "—",
            )
        console.print(table)
    if state.recent_runs:
        table = Table(title="recent index runs", title_justify="left")
        for col in ("started", "model", "mode", "outcome", "tokens in", "tokens out", "ideas"):
            table.add_column(col, justify="right" if col.startswith(("tokens", "ideas")) else "left")
        for run in state.recent_runs:
            table.add_row(
                run.started_at,
                run.model,
                run.mode,
                run.outcome or "—",
                f"{run.input_tokens:,}",
                f"{run.output_tokens:,}",
                str(run.ideas_applied),
            )
        console.print(table)


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
            raise _fail(f"no such file or directory: {path}")
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    report = inspect_files(files)
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    _render_inspect(report)


@app.command()
def doctor(as_json: JsonOpt = False) -> None:
    """Check every component (SQLite, store, Chroma, embeddings, tokenizer, model) and say how to fix it."""
    from cairn.doctor import run_checks

    checks = run_checks(_settings())
    ok = all(c.ok for c in checks)
    if as_json:
        _print_json({"ok": ok, "checks": [c.as_dict() for c in checks]})
    else:
        table = Table(show_header=True, header_style="bold")
        for col in ("component", "status", "detail"):
            table.add_column(col)
        for c in checks:
            status = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
            detail = c.detail + (f"\n[dim]→ {c.fix}[/]" if c.fix and not c.ok else "")
            table.add_row(c.name, status, detail)
        console.print(table)
    if not ok:
        raise typer.Exit(1)


@app.command("reindex-vectors")
def reindex_vectors() -> None:
    """Rebuild every Chroma collection from SQLite, the source of truth."""
    settings = _settings()

    with _progress() as progress:
        task = progress.add_task("re-embedding", total=None)

        def on_progress(event: dict[str, Any]) -> None:
            progress.update(task, completed=event["completed"], total=event["total"])

        data = _run(_long_request(settings, "reindex_vectors", {}, on_progress))
    console.print(f"Rebuilt {data['vectors']} vectors from SQLite.")


async def _request(settings: Settings, op: str, args: dict[str, Any] | None = None) -> Any:
    """One store operation as JSON-able data: asked of the daemon when it runs, else run here directly.

    Both paths run the same `run_op`, so what a command prints does not depend on which one answered.
    """
    from cairn.daemon.client import DaemonRequestError, NoDaemon, daemon_request
    from cairn.daemon.server import run_op

    try:
        return await daemon_request(settings, op, args)
    except NoDaemon:
        pass
    except DaemonRequestError as exc:
        raise _fail(str(exc)) from exc
    store = await _open_store(settings)
    try:
        return await run_op(store, op, args)
    finally:
        await store.close()


def _print_rows(title: str, rows: list[dict[str, Any]], columns: list[str], as_json: bool) -> None:
    if as_json:
        _print_json(rows)
        return
    if not rows:
        console.print(f"No {title} stored yet. Run `cairn sync` (or `cairn index PATH`) first.")
        return
    table = Table(title=f"{title} ({len(rows)})", title_justify="left")
    for col in columns:
        table.add_column(col.replace("_", " "), overflow="fold")
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    console.print(table)


SessionOpt = Annotated[str | None, typer.Option("--session", help="Only this session id.")]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Only this project (name or path).")]
LimitOpt = Annotated[int, typer.Option("--limit", min=1, max=10_000, help="At most this many rows.")]


@app.command()
def ideas(
    intent: Annotated[
        list[str] | None,
        typer.Option(
            "--intent",
            help="decision, conclusion, question, problem, solution, todo or context; repeat for several.",
        ),
    ] = None,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    superseded: Annotated[bool, typer.Option("--superseded", help="Include superseded ideas.")] = False,
    limit: LimitOpt = 50,
    as_json: JsonOpt = False,
) -> None:
    """List stored ideas, newest first (superseded ones left out unless asked for)."""
    from cairn.agent.schema import INTENTS

    unknown = sorted(set(intent or ()) - set(INTENTS))
    if unknown:
        raise _fail(f"unknown intent {', '.join(unknown)}; choose from {', '.join(INTENTS)}")
    rows = _run(
        _request(
            _settings(),
            "ideas",
            {
                "intents": list(intent or ()),
                "session": session,
                "project": project,
                "include_superseded": superseded,
                "limit": limit,
            },
        )
    )
    _print_rows(
        "ideas", rows, ["id", "intent", "content", "importance", "project", "topic", "superseded_by"], as_json
    )


OpenOpt = Annotated[bool, typer.Option("--open", help="Only those not yet resolved.")]


def _list_tracked(
    kind: str,
    intents: tuple[str, ...],
    done_column: str,
    open_only: bool,
    session: str | None,
    project: str | None,
    limit: int,
    as_json: bool,
) -> None:
    rows = _run(
        _request(
            _settings(),
            "ideas",
            {
                "intents": list(intents),
                "session": session,
                "project": project,
                "open_only": open_only,
                "limit": limit,
            },
        )
    )
    _print_rows(kind, rows, ["id", "content", "project", done_column, "resolution"], as_json)


@app.command()
def questions(
    open_only: OpenOpt = False,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    limit: LimitOpt = 50,
    as_json: JsonOpt = False,
) -> None:
    """List questions and problems the indexer found, and the answers it linked to them."""
    _list_tracked(
        "questions", ("question", "problem"), "answered_at", open_only, session, project, limit, as_json
    )


@app.command()
def todos(
    open_only: OpenOpt = False,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    limit: LimitOpt = 50,
    as_json: JsonOpt = False,
) -> None:
    """List todos the indexer found, and whether each was completed."""
    _list_tracked("todos", ("todo",), "completed_at", open_only, session, project, limit, as_json)


@app.command()
def topics(session: SessionOpt = None, limit: LimitOpt = 100, as_json: JsonOpt = False) -> None:
    """List topic spans per session, in order, with their idea counts."""
    rows = _run(_request(_settings(), "topics", {"session": session, "limit": limit}))
    _print_rows(
        "topics", rows, ["id", "project", "name", "start_line", "end_line", "ideas", "summary"], as_json
    )


@app.command()
def entities(
    type: Annotated[
        str | None, typer.Option("--type", help="project, technology, concept, person or file.")
    ] = None,
    limit: LimitOpt = 100,
    as_json: JsonOpt = False,
) -> None:
    """List entities (technologies, files, concepts, …) with their aliases and idea counts."""
    rows = _run(_request(_settings(), "entities", {"type": type, "limit": limit}))
    _print_rows("entities", rows, ["id", "name", "type", "aliases", "ideas"], as_json)


@app.command("config")
def show_config(as_json: JsonOpt = False) -> None:
    """Show the effective settings and the paths derived from CAIRN_HOME."""
    settings = _settings()
    data = {
        **settings.model_dump(mode="json"),
        "config_file": str(settings.config_path),
        "config_file_exists": settings.config_path.exists(),
        "db_path": str(settings.db_path),
        "chroma_dir": str(settings.chroma_dir),
        "logs_dir": str(settings.logs_dir),
        "lock_path": str(settings.lock_path),
    }
    if as_json:
        _print_json(data)
        return
    table = Table(show_header=False)
    for key, value in data.items():
        table.add_row(key, str(value))
    console.print(table)


def _progress(disable: bool = False) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=disable,
    )


def _dump(data: Any) -> Any:
    if isinstance(data, dict):
        return dict(data)
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    return asdict(data)


def _counts(value: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in value.items()) or "—"


def _key_value_table(title: str, rows: dict[str, Any]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows.items():
        table.add_row(key.replace("_", " "), _counts(value) if isinstance(value, dict) else str(value))
    return table


def _render_stats(stats: Any) -> None:
    data = _dump(stats)
    if not data.get("vectors_error"):
        data.pop("vectors_error", None)
    data["db_size"] = f"{data.pop('db_size_bytes', 0) / 1_048_576:.1f} MiB"
    console.print(_key_value_table("cairn stats", data))


def _render_inspect(report: Any) -> None:
    data = report.model_dump(mode="json")
    if len(data["files"]) > 1:
        files = Table(title="files", title_justify="left")
        for col in ("file", "entries", "messages", "tool calls", "malformed", "partial bytes"):
            files.add_column(col, justify="left" if col == "file" else "right")
        for f in data["files"]:
            files.add_row(
                Path(f["path"]).name,
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
        _key_value_table("transcripts" if len(data["files"]) > 1 else data["files"][0]["path"], total)
    )
    if sessions:
        table = Table(title="sessions", title_justify="left")
        for col in ("session", "cwd", "git branch", "entries", "first", "last"):
            table.add_column(col)
        for sess in sessions:
            table.add_row(
                sess["session_id"],
                sess["cwd"] or "—",
                sess["git_branch"] or "—",
                str(sess["entries"]),
                sess["first_timestamp"] or "—",
                sess["last_timestamp"] or "—",
            )
        console.print(table)
    for f in data["files"]:
        for line, reason in f.get("malformed_samples", []):
            err.print(f"[yellow]malformed[/] {f['path']}:{line}: {reason}")


daemon_app = typer.Typer(
    help="The background indexer: one per CAIRN_HOME, fed by Claude Code's hooks.",
    no_args_is_help=True,
)


def _uptime(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


@daemon_app.command("run")
def daemon_run() -> None:
    """Run the daemon in the foreground until Ctrl-C, SIGTERM or its idle timeout."""
    from cairn.daemon.logs import setup_logging
    from cairn.daemon.loop import run_daemon

    settings = _settings()
    setup_logging(settings, console=sys.stderr.isatty())
    raise typer.Exit(_run(run_daemon(settings)))


@daemon_app.command("start")
def daemon_start() -> None:
    """Start the daemon detached and return once it owns the store."""
    from cairn.daemon.process import DaemonError, start

    settings = _settings()
    try:
        pid = start(settings)
    except DaemonError as exc:
        raise _fail(str(exc)) from exc
    console.print(f"cairn daemon started (pid {pid})")


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon: it finishes its current run, then exits."""
    from cairn.daemon.process import DaemonError, stop

    settings = _settings()
    try:
        pid = stop(settings)
    except DaemonError as exc:
        raise _fail(str(exc)) from exc
    console.print("cairn daemon is not running" if pid is None else f"cairn daemon stopped (pid {pid})")


@daemon_app.command("status")
def daemon_status(as_json: JsonOpt = False) -> None:
    """Whether the daemon runs, since when, and what its queue holds."""
    from cairn.daemon.process import status

    state = status(_settings())
    if as_json:
        _print_json({**asdict(state), "depth": state.depth, "parked": state.parked})
        return
    if state.running and state.pid is not None and state.uptime_seconds is not None:
        console.print(f"cairn daemon running (pid {state.pid}, up {_uptime(state.uptime_seconds)})")
    else:
        console.print("cairn daemon not running")
    console.print(f"queue: {state.depth} waiting, {state.parked} parked · log: {state.log}")


app.add_typer(daemon_app, name="daemon")


@app.command()
def hook() -> None:
    """Run cairn's Claude Code hook on the JSON payload on stdin (always exits 0).

    For debugging: `cairn install` wires up the faster `hook.sh`, which honours the same contract.
    """
    from cairn.daemon.hook import main as hook_main

    raise typer.Exit(hook_main())


@app.command()
def install(
    settings_file: Annotated[
        Path | None,
        typer.Option(
            "--settings", help="Claude Code settings file to edit (default ~/.claude/settings.json)."
        ),
    ] = None,
    uninstall: Annotated[bool, typer.Option("--uninstall", help="Remove cairn's hooks instead.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add cairn's hook to Claude Code's settings (idempotent, with a backup), or remove it."""
    from cairn.daemon import install as installer
    from cairn.store.lock import StoreLockedError
    from cairn.store.store import Store

    settings = _settings()
    path = settings_file if settings_file is not None else installer.DEFAULT_SETTINGS
    try:
        if uninstall:
            report = installer.uninstall(path)
        else:
            command, kind = installer.hook_command(settings)
            report = installer.install(path, command, kind)
    except (installer.SettingsFileError, OSError) as exc:
        raise _fail(str(exc)) from exc
    store_note = None
    if not uninstall and not settings.db_path.exists():
        # The hook never creates the store (a hook must not migrate a database), so create it now.
        async def create() -> None:
            try:
                store = await Store.open(settings)
            except StoreLockedError:
                return
            await store.close()

        _run(create())
        store_note = f"created the cairn store at {settings.db_path}"
    if as_json:
        _print_json({**asdict(report), "store_created": store_note is not None})
        return
    verb = {"installed": "installed cairn's hook in", "uninstalled": "removed cairn's hook from"}
    if report.action == "unchanged":
        console.print(
            f"{report.settings_path}: already {'clean' if uninstall else 'up to date'}, not changed"
        )
    else:
        console.print(f"{verb[report.action]} {report.settings_path} ({', '.join(report.events)})")
        if report.backup:
            console.print(f"previous settings saved as {report.backup}")
    if report.hook == "python":
        err.print("[yellow]note:[/] no sqlite3 CLI (3.32+) on PATH: installed the slower Python hook")
    if store_note:
        console.print(store_note)
