"""Running a long, resumable job (`backfill`, `reindex`) from the CLI: progress, two-step Ctrl-C, dry runs.

Both commands run their job in the daemon when it runs, else here; both stop after the batch in flight
on the first Ctrl-C and at once on the second (a crash the store survives); both print a dry run's
estimate instead of a summary, and report the whole command's wall time, not only the job's.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from cairn.cli.common import console, err, interruptible, long_request, print_json
from cairn.cli.progress import JobProgress
from cairn.clock import process_seconds
from cairn.config import Settings


def run_stoppable(
    settings: Settings, op: str, args: dict[str, Any], *, stopped_at_once: str
) -> dict[str, Any]:
    """Run the long op `op` under one progress display and return its data.

    Run here (no daemon), the first SIGINT/SIGTERM asks the job to stop after the batch in flight and
    the second exits with 130 at once, printing `stopped_at_once`. A dry run takes no signals over.
    """
    stop_requests = 0

    def on_signal() -> None:
        nonlocal stop_requests
        stop_requests += 1
        if stop_requests == 1:
            err.print("Stopping after the current batch… (press Ctrl-C again to stop at once)")
            return
        err.print(stopped_at_once)
        os._exit(130)

    def take_over_signals() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal)

    with JobProgress(err) as progress:
        return interruptible(
            lambda: long_request(
                settings,
                op,
                args,
                progress,
                should_stop=lambda: stop_requests > 0,
                on_direct=None if args.get("dry_run") else take_over_signals,
            ),
            op,
        )


def printed_dry_run(data: dict[str, Any], as_json: bool, settings: Settings) -> bool:
    """Print a dry run's estimate per model and say True; for a real run stamp its wall time and say False.

    A dry run gains `spend`: who pays its tokens and how many days of the daily budget they take
    (`cairn.backfill.spend`). `wall_seconds` becomes what the user waited — interpreter, imports,
    store, every phase — and the job's own time moves to `job_seconds`.
    """
    from cairn.backfill import estimate_tables, spend

    if data.get("dry_run"):
        data["spend"] = spend(data, settings)
        if as_json:
            print_json(data)
        else:
            for renderable in estimate_tables(data):
                console.print(renderable)
        return True
    data["job_seconds"], data["wall_seconds"] = data["wall_seconds"], round(process_seconds(), 3)
    return False
