"""`CAIRN_HOME` and where the daemon is found in it, with the standard library alone.

The settings (`cairn.config`) are a pydantic-settings model: importing it and validating every setting
costs a command about a tenth of a second before it does anything. A command that only asks the running
daemon needs none of that — the daemon answers with its own settings — and where it listens follows
from `CAIRN_HOME` alone. So `cairn search` finds the daemon from here and loads the settings only when
it has to answer by itself (`cairn.cli.common.request`).
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = Path("~/.cairn")

#: The daemon's files in the home: its pidfile (pid, start time) and its Unix socket.
PIDFILE_NAME = "daemon.pid"
SOCKET_NAME = "cairn.sock"


def resolve_home(value: str | os.PathLike[str] | None = None) -> Path:
    """The state directory: an explicit value, else `$CAIRN_HOME`, else `~/.cairn`.

    Resolved before the other settings because the optional config file lives inside it.
    """
    raw = value if value is not None else os.environ.get("CAIRN_HOME") or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


class DaemonAddress:
    """Where the daemon of a home names itself and listens: what a client needs of `Settings`."""

    __slots__ = ("home",)

    def __init__(self, home: Path) -> None:
        self.home = home

    @classmethod
    def here(cls) -> DaemonAddress:
        """The address for this process's `CAIRN_HOME`."""
        return cls(resolve_home())

    @property
    def pid_path(self) -> Path:
        return self.home / PIDFILE_NAME

    @property
    def socket_path(self) -> Path:
        return self.home / SOCKET_NAME

    def config_changed_since_start(self) -> bool:
        """Whether `config.toml` changed after the daemon started (wrote its pidfile): the daemon answers
        with the settings it read then, so a value broken since would go unsaid. Two `stat`s."""
        try:
            return (self.home / "config.toml").stat().st_mtime >= self.pid_path.stat().st_mtime
        except OSError:
            return False
