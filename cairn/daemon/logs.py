"""The daemon's log: `$CAIRN_HOME/logs/daemon.log`, rotated so months of running never fill a disk.

The daemon runs detached, so the log is the only place its errors can be seen; stray output (a
library printing to stdout, a traceback on stderr) is sent to the same file by `start`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `log_path` is read by every client that finds the daemon: logging is not needed there
    import logging

    from cairn.config import Settings

LOG_NAME = "daemon.log"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3
FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def log_path(settings: Settings) -> Path:
    return settings.logs_dir / LOG_NAME


def setup_logging(settings: Settings, *, console: bool = False) -> logging.Handler:
    """Send cairn's log records to the rotating daemon log (and to stderr too when `console`).

    Returns the file handler so the caller can remove it again; a foreground `run` keeps its
    stderr, where a person watching sees the same lines.
    """
    import logging
    import logging.handlers

    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        log_path(settings), maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger("cairn")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    if console:
        stream = logging.StreamHandler()
        stream.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(stream)
    return handler
