"""`cairn reindex`: rebuild stored sessions' memory with another model, without re-reading transcripts.

The face of `cairn.reindex`: through the daemon when it runs (like `index` and `backfill`), directly
otherwise, with the same progress display. A user who indexed offline and later adds an API key runs
`cairn reindex --model anthropic:…` instead of deleting `~/.cairn`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cairn.cli.common import (
    JsonOpt,
    ModelOpt,
    app,
    console,
    err,
    fail,
    key_value_table,
    load_settings,
    print_json,
    require_known_model,
)
from cairn.cli.safe import plain_text
from cairn.cli.stoppable import printed_dry_run, run_stoppable
from cairn.cli.summaries import elapsed_rows, is_billed, memory_rows, print_failures, run_rows


def reindex_summary(data: dict[str, Any], billed: bool) -> Any:
    """The `reindex` table: sessions swapped, ideas before and after, what else the new memory holds,
    runs (and tokens, for a paid model), times."""
    sessions = data.get("sessions") or []
    done = data["sessions_swapped"] + data["sessions_already_done"]
    status = f"{done} of {data['sessions_total']} swapped to the new generation"
    if data.get("interrupted"):
        status += ", interrupted"
    old = sum(int(s.get("old_ideas") or 0) for s in sessions if s.get("swapped"))
    new = sum(int(s.get("ideas") or 0) for s in sessions if s.get("swapped"))
    messages = sum(int(s.get("messages") or 0) for s in sessions)
    rows = {
        "model": str(data["model"]),
        "sessions": status,
        "ideas": f"{old:,} replaced by {new:,}",
        **memory_rows(data, ideas=False),
        **run_rows(data, billed),
        **elapsed_rows(data, messages),
    }
    # Ideas the person forgot as wrong, made again by the model and left out (by the scratch run's
    # executor, or by the swap for a forget made while the session was re-indexed).
    forgotten = int((data.get("applied") or {}).get("forgotten_skipped") or 0) + sum(
        int(s.get("forgotten_skipped") or 0) for s in sessions
    )
    if forgotten:
        rows["ideas"] += f"; {forgotten:,} you forgot as wrong left out"
    # Corrections (answered, done, declined, open, importance) whose idea the new memory does not hold.
    waiting = sum(int(s.get("corrections_waiting") or 0) for s in sessions if s.get("swapped"))
    if waiting:
        rows["corrections"] = (
            f"{waiting:,} of yours wait for their idea, which this re-index did not make: "
            "kept, and applied when an idea is made at their line"
        )
    return key_value_table("reindex", rows)


@app.command()
def reindex(
    model: ModelOpt = None,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            help="Only this project's sessions: a path inside it, its name or Claude Code directory name "
            "(else a substring of a project's path or name, or a session's cwd).",
        ),
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session (an id or its prefix).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only sessions active on or after: 2025-09-01 (local), yesterday, 3d, 12h, 2w."
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Report the batches, tokens and estimated cost per model; run nothing."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild ideas, topics, entities and links from the stored messages, e.g. with a new model.

    Each session is rebuilt aside and swapped in with one transaction once all of it is indexed, so
    searches see the old memory or the new, never both or neither. Messages are not touched. Ctrl-C
    stops after the current batch (the session in progress keeps its old memory); rerunning the same
    command goes on with the sessions not yet swapped.
    """
    from cairn.backfill import parse_since
    from cairn.dates import empty_range
    from cairn.pricing import load_prices

    settings = load_settings()
    require_known_model(settings, model)
    try:
        since_at = parse_since(since) if since else None
    except ValueError as exc:  # a bad date is a usage error: exit 2
        raise fail(str(exc), 2) from exc
    if not as_json and (empty := empty_range(since)):
        console.print(plain_text(f"Nothing to reindex: {empty}."))
        return
    try:
        load_prices(settings)
    except ValueError as exc:
        raise fail(str(exc)) from exc
    args = {
        "model": model or settings.model,
        "project": project,
        "session": session,
        "since": since_at.isoformat() if since_at else None,  # one instant for CLI and daemon
        "dry_run": dry_run,
    }
    stopped = "Stopped at once; the session in progress keeps its old memory. Rerun to continue."
    data = run_stoppable(settings, "reindex", args, stopped_at_once=stopped)
    if printed_dry_run(data, as_json, settings):
        return
    if as_json:
        print_json(data)
    else:
        console.print(reindex_summary(data, is_billed(data.get("model"), settings)))
        print_failures(data)
    if data["interrupted"]:
        err.print(
            "Interrupted. Run the same `cairn reindex` again to go on with the sessions not swapped yet."
        )
        raise typer.Exit(130)
    if data["runs_failed"] and not data["runs_ok"]:
        raise typer.Exit(1)
