"""The `cairn` command line: a thin face over the library (rich for people, `--json` for scripts).

The commands live in modules by purpose; `cairn.cli.commands` maps each command to its module, and
the app imports a module only when one of its commands runs (or `cairn --help` lists them all).
`app` is imported at first use, so the entry point (`main`) can send a plain search to the daemon
before typer and rich load, and print its answer without loading typer at all (`cairn.cli.early_search`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """The `cairn` console script and `python -m cairn`."""
    from cairn.cli import early_search

    try:
        early_search.start(sys.argv[1:])
        if early_search.print_answer():
            return
    except KeyboardInterrupt:  # while the daemon searched: no traceback for a change of mind
        raise SystemExit(130) from None
    from cairn.cli.common import app

    app()


def __getattr__(name: str) -> Any:
    if name == "app":
        from cairn.cli.common import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
