"""The `cairn daemon` sub-app: run, start, stop and query cairn's background process."""

from __future__ import annotations

import io
import logging
import os
import stat
import sys
from dataclasses import asdict
from typing import TextIO

import typer

from cairn.cli.common import JsonOpt, app, console, fail, load_settings, print_json, run_async, uptime

daemon_app = typer.Typer(
    help="cairn's background process: it captures and indexes your sessions as you work and makes "
    "search fast. One per CAIRN_HOME; Claude Code's hooks start it.",
    no_args_is_help=True,
)


@daemon_app.command("run")
def daemon_run() -> None:
    """Run the daemon in the foreground until Ctrl-C, SIGTERM or its idle timeout."""
    from cairn.daemon.logs import setup_logging
    from cairn.daemon.loop import run_daemon
    from cairn.daemon.process import running_pid

    settings = load_settings(log_as="cairn-daemon")
    if (current := running_pid(settings)) is not None:
        # Said at once, on a terminal too: waiting out the store's lock only to log why helps nobody.
        raise fail(
            f"the store is in use by process {current.pid}, the cairn daemon already running for "
            f"{settings.home}; `cairn daemon stop` stops it"
        )
    setup_logging(settings, console=sys.stderr.isatty())
    if not sys.stderr.isatty() and not _writes_to_a_file(sys.stderr):
        # Run from a script or another program: why it stopped (the store held by another daemon...)
        # belongs on stderr too, not only in daemon.log. `daemon start` points stderr at that log.
        errors = logging.StreamHandler()
        errors.setLevel(logging.ERROR)
        errors.setFormatter(logging.Formatter("error: %(message)s"))
        logging.getLogger("cairn").addHandler(errors)
    raise typer.Exit(run_async(run_daemon(settings)))


def _writes_to_a_file(stream: TextIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


@daemon_app.command("start")
def daemon_start() -> None:
    """Start the daemon detached and return once it owns the store."""
    from cairn.daemon.process import DaemonError, start

    settings = load_settings(log_as="cairn-daemon")
    try:
        pid = start(settings)
    except DaemonError as exc:
        raise fail(str(exc)) from exc
    console.print(f"cairn daemon started (pid {pid})")


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon: it finishes its current run, then exits."""
    from cairn.daemon.process import DaemonError, stop

    settings = load_settings()
    try:
        pid = stop(settings)
    except DaemonError as exc:
        raise fail(str(exc)) from exc
    console.print("cairn daemon is not running" if pid is None else f"cairn daemon stopped (pid {pid})")


@daemon_app.command("status")
def daemon_status(as_json: JsonOpt = False) -> None:
    """Whether the daemon runs, since when, and what its queue holds."""
    from cairn.daemon.process import status

    state = status(load_settings())
    if as_json:
        print_json({**asdict(state), "depth": state.depth, "parked": state.parked})
        return
    if state.running and state.pid is not None and state.uptime_seconds is not None:
        console.print(f"cairn daemon running (pid {state.pid}, up {uptime(state.uptime_seconds)})")
    else:
        console.print("cairn daemon not running")
    console.print(f"queue: {state.depth} waiting, {state.parked} parked · log: {state.log}")


app.add_typer(daemon_app, name="daemon")
