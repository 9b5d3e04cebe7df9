"""The `cairn` command line: a thin face over the library (rich for people, `--json` for scripts).

The commands live in modules by purpose; `cairn.cli.commands` maps each command to its module, and
the app imports a module only when one of its commands runs (or `cairn --help` lists them all).
"""

from __future__ import annotations

from cairn.cli.common import app

__all__ = ["app"]
