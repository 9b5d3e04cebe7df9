"""`cairn redact`: show what the redaction rules do to a text, or re-apply them to the whole store.

`--rescan` writes the store, so it follows the single-writer rule like `cairn reindex-vectors`: when a
daemon runs, it asks the daemon over the socket (the daemon runs it under its indexing lock and
streams progress); otherwise it opens the store itself, which takes the store lock.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from cairn.cli.common import (
    JsonOpt,
    app,
    console,
    err,
    fail,
    interruptible,
    load_settings,
    open_store,
    print_json,
    progress_bar,
)
from cairn.config import Settings


@app.command("redact")
def redact_command(
    rescan: Annotated[
        bool,
        typer.Option(
            "--rescan",
            help="Re-apply the current redaction rules to everything stored (messages, passages, ideas, "
            "topics, file chunks, learning tables) and to their full-text and vector indexes. Resumes "
            "where an interrupted rescan stopped.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Redact stdin to stdout with the rules capture uses; with --rescan, redact what is already stored."""
    if not rescan:
        from cairn.transcripts.redact import redact_with_count

        text, count = redact_with_count(sys.stdin.read())
        if as_json:
            print_json({"text": text, "replaced": count})
        else:
            sys.stdout.write(text)
        return
    settings = load_settings()
    show = not as_json and err.is_terminal
    with progress_bar(disable=not show) as progress:
        tasks: dict[str, Any] = {}

        def on_progress(event: dict[str, Any]) -> None:
            step = str(event.get("step", ""))
            if step not in tasks:
                tasks[step] = progress.add_task(step.replace("_", " "), total=event.get("total"))
            progress.update(tasks[step], completed=event.get("completed", 0), total=event.get("total"))

        data = interruptible(lambda: _rescan(settings, on_progress), "redact --rescan")
    if as_json:
        print_json(data)
        return
    table = Table(title="redaction rescan", title_justify="left")
    for column in ("table", "rows scanned", "rows changed"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for name, count in data["tables"].items():
        table.add_row(name, f"{count['scanned']:,}", f"{count['changed']:,}")
    console.print(table)
    resumed = " (resumed an interrupted rescan)" if data["resumed"] else ""
    console.print(f"{data['changed']:,} of {data['scanned']:,} rows changed{resumed}.")
    if data.get("vectors_error"):
        err.print(
            f"[yellow]vectors not updated yet[/]: {data['vectors_error']}; the next daemon run or "
            "`cairn reindex-vectors` finishes them."
        )
    elif data["finished"]:
        console.print(f"{data['vectors_synced']:,} vectors re-embedded.")


async def _rescan(settings: Settings, on_progress: Any) -> dict[str, Any]:
    """The rescan by the daemon when one runs (it owns the store), else here under the store lock."""
    from cairn.daemon.client import DaemonRequestError, NoDaemon, daemon_request
    from cairn.daemon.server import to_json
    from cairn.rescan import redact_rescan_job

    try:
        result: dict[str, Any] = await daemon_request(
            settings, "redact_rescan", {}, timeout=None, on_progress=on_progress
        )
        return result
    except NoDaemon:
        pass
    except DaemonRequestError as exc:
        raise fail(str(exc)) from exc
    store = await open_store(settings, embedding_mode="bulk")  # a long job the user waits on
    try:
        return dict(to_json(await redact_rescan_job(store, settings, emit=on_progress)))
    finally:
        await store.close()
