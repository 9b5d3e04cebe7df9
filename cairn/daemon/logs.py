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
# Libraries that log failures of their own: claude-agent-sdk logs a Claude Code CLI that died mid-run
# (`claude-code`; cairn records the same failure as its one line). With no handler configured for them,
# logging's last resort writes those records to stderr, which is the log file: bare lines, without the
# time or the source. They get the log's handlers and format instead, at their own level (warnings up).
LIBRARY_LOGGERS = ("claude_agent_sdk",)


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
    loggers = [root, *(logging.getLogger(name) for name in LIBRARY_LOGGERS)]
    for logger in loggers:
        logger.addHandler(handler)
    if console:
        stream = logging.StreamHandler()
        stream.setFormatter(logging.Formatter(FORMAT))
        for logger in loggers:
            logger.addHandler(stream)
    return handler
