"""Where a command that ran an op itself logs a bug: `$CAIRN_HOME/logs/cli.log`.

A bug in an op (an exception outside the error tree, `cairn.errors`) is one line on the terminal, as
the daemon answers it; the trace that a fix needs goes to this log, which the line names. The daemon
logs its own to `daemon.log`. The file is the user's alone (invariant 8) and is started afresh once it
passes `MAX_BYTES`, the old one kept beside it, so no run of bugs fills a disk.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

LOG_NAME = "cli.log"
MAX_BYTES = 1024 * 1024


def log_internal_error(logs_dir: Path, op: str, exc: BaseException) -> Path:
    """Append `exc`'s trace, under `op`, to the CLI's log in `logs_dir`; the log's path. Raises
    `OSError` when the log cannot be written (the caller then shows the trace itself)."""
    path = logs_dir / LOG_NAME
    logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if path.stat().st_size > MAX_BYTES:
            path.replace(path.with_name(f"{LOG_NAME}.1"))
    except FileNotFoundError:
        pass
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    trace = "".join(traceback.format_exception(exc))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as log:
        log.write(f"{stamp} {os.getpid()} ERROR cairn.cli: internal error in {op}\n{trace}")
    return path
