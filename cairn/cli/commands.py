"""Which module defines each `cairn` command, and the group that imports a module only when it runs.

A command module imports what its commands need at the top (rich tables, progress bars, the date
parser), and typer turns every registered command into a click command, signature and all, on every
start. Done for all thirty of them, that was a large share of what `cairn search` spent before it
could even ask the daemon (`benchmarks/cli_search.py`). So `cairn` imports the module of the command
it runs, and all of them only when it needs all: `cairn --help`, a mistyped command name (to suggest
the right one), shell completion. This is click's documented "lazily loading subcommands" pattern.

`COMMANDS` is also the order `cairn --help` lists the commands in: by workflow, not by module.
A test checks it names every command the modules register, and each by the module that registers it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    import typer
    from rich.console import RenderableType
    from typer._click import Command, Context, HelpFormatter
    from typer.models import CommandInfo

#: Each command or command group, in `cairn --help` order, and the `cairn.cli` modules that define it
#: (`eval recall` and `eval sessions` live apart from the other `eval` commands).
COMMANDS: dict[str, tuple[str, ...]] = {
    "sync": ("capture",),
    "index": ("capture",),
    "backfill": ("capture",),
    "reindex": ("reindex",),
    "stats": ("memory",),
    "status": ("admin",),
    "inspect": ("capture",),
    "doctor": ("admin",),
    "reindex-vectors": ("admin",),
    "redact": ("redact",),
    "forget": ("lifecycle",),
    "correct": ("lifecycle",),
    "export": ("lifecycle",),
    "import": ("lifecycle",),
    "ideas": ("memory",),
    "questions": ("memory",),
    "todos": ("memory",),
    "projects": ("memory",),
    "topics": ("memory",),
    "entities": ("memory",),
    "search": ("search",),
    "content": ("search",),
    "show": ("search",),
    "timeline": ("search",),
    "files": ("learn",),
    "config": ("admin",),
    "hook": ("admin",),
    "install": ("admin",),
    "mcp": ("admin",),
    "ui": ("ui",),
    "daemon": ("daemon",),
    "eval": ("eval", "eval_recall", "eval_sessions"),
    "learn": ("learn",),
}


def import_modules(name: str | None = None) -> None:
    """Import the modules that register command `name` on the app, or every command module."""
    modules = COMMANDS[name] if name is not None else {m: None for ms in COMMANDS.values() for m in ms}
    for module in modules:
        importlib.import_module(f"cairn.cli.{module}")


def _registered_name(info: CommandInfo) -> str:
    """The name typer gives a registered command: its own, else its function's, dashed."""
    from typer.main import get_command_name

    return info.name or get_command_name(getattr(info.callback, "__name__", ""))


class LazyCommands(TyperGroup):
    """The `cairn` group: knows every command by name, builds a command when it is first asked for.

    The app whose registrations it builds from comes from `typer_app`, which the module that creates the
    app provides in a subclass, so this module never imports the app's."""

    def typer_app(self) -> typer.Typer:
        """The typer app the commands are registered on."""
        raise NotImplementedError

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import_modules(cmd_name)
            self._build(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        if args and args[0] not in COMMANDS:  # a typo: every name, for "Did you mean …?"
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def _build(self, cmd_name: str) -> None:
        """Turn the app's registration of `cmd_name` into a click command or group, as typer would."""
        from typer.main import get_command_from_info, get_group_from_info

        app = self.typer_app()
        for info in app.registered_commands:
            if _registered_name(info) == cmd_name:
                _fold_help_of_command(info)
                self.commands[cmd_name] = get_command_from_info(
                    info,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                )
                return
        for group in app.registered_groups:
            if group.name == cmd_name:
                _fold_help_of(group.typer_instance)
                self.commands[cmd_name] = get_group_from_info(
                    group,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                    suggest_commands=app.suggest_commands,
                )
                return


class FoldingHelpCommand(TyperCommand):
    """A command whose `--help` folds an option's help rather than cutting it.

    typer draws each option's help in the last column of a table whose columns cut what does not fit
    with `…`; on an 80-column terminal a default path (`tests/fixtures/transcripts`) is longer than
    that column, and the end of it, what the user came for, was cut off. Folded, it is all there.
    """

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        _fold_option_help()
        super().format_help(ctx, formatter)


def _fold_help_of(typer_app: typer.Typer | None) -> None:
    """Give every command of a command group (and of its groups) the folding `--help`."""
    if typer_app is None:
        return
    for info in typer_app.registered_commands:
        _fold_help_of_command(info)
    for group in typer_app.registered_groups:
        _fold_help_of(group.typer_instance)


def _fold_help_of_command(info: CommandInfo) -> None:
    """The folding `--help` for a command registered with typer's own command class."""
    if info.cls is None or info.cls is TyperCommand:
        info.cls = FoldingHelpCommand


def _fold_option_help() -> None:
    """Make typer's option help `Text` fold at the column's edge (once a process).

    typer builds that help in a private function; should a typer release rename it or change what it
    returns, help is cut with `…` as before rather than failing (tests/test_cli_listings.py notices)."""
    from rich.text import Text
    from typer import rich_utils

    original = getattr(rich_utils, "_get_parameter_help", None)
    if original is None or getattr(original, "folds", False):
        return

    def folded(**kwargs: object) -> RenderableType:
        columns = original(**kwargs)
        for item in getattr(columns, "renderables", ()):
            if isinstance(item, Text):
                item.overflow = "fold"
        return columns

    folded.folds = True  # type: ignore[attr-defined]
    rich_utils._get_parameter_help = folded  # type: ignore[assignment]
