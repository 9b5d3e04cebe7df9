"""The `cairn` command line: a thin face over the library (rich for people, `--json` for scripts).

Importing this package registers every command on `app`, then puts them in the order `cairn --help` lists.
"""

from __future__ import annotations

from typer.models import CommandInfo

from cairn.cli import (  # noqa: F401  (registers the commands)
    admin,
    capture,
    daemon,
    eval,
    eval_recall,
    learn,
    lifecycle,
    memory,
    redact,
    reindex,
    search,
    ui,
)
from cairn.cli.common import app

__all__ = ["app"]

# The modules group commands by purpose; `cairn --help` lists them by workflow instead.
_HELP_ORDER = (
    "sync",
    "index",
    "backfill",
    "reindex",
    "stats",
    "status",
    "inspect",
    "doctor",
    "reindex-vectors",
    "redact",
    "forget",
    "export",
    "import",
    "ideas",
    "questions",
    "todos",
    "projects",
    "topics",
    "entities",
    "search",
    "content",
    "show",
    "timeline",
    "files",
    "eval",
    "config",
    "hook",
    "install",
    "mcp",
    "ui",
)


def _help_position(command: CommandInfo) -> int:
    name = command.name or getattr(command.callback, "__name__", "")
    return _HELP_ORDER.index(name) if name in _HELP_ORDER else len(_HELP_ORDER)


app.registered_commands.sort(key=_help_position)
