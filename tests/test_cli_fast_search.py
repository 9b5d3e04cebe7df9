"""What keeps `cairn search` quick from a terminal, and what it says when it cannot be.

- Without a daemon a search that loads the store and the embedding model itself (seconds) and kept the
  user waiting says, in one line on stderr, how search gets fast — never on a `--json` stdout. The
  search that answers by keywords instead, without the model, is in `tests/test_cli_cold_search.py`.
- `cairn` imports only the module of the command it runs (`cairn.cli.commands`), so the registry of
  commands must name every command, each by its module, and `cairn --help` must still list them all.

The daemon's side (the same answer through it, nothing of the store imported) is in
`tests/daemon/test_cli_search_daemon.py`.
"""

from __future__ import annotations

import importlib
import inspect
import json
import shutil
from pathlib import Path

import pytest

from cairn.cli import commands
from cairn.cli import search as cli_search
from cairn.cli.common import app
from tests.helpers.cli import cairn


@pytest.fixture
def home(demo_home: Path, cairn_home: Path) -> Path:
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    return cairn_home


def test_a_slow_search_without_the_daemon_says_how_to_make_it_fast(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_SEARCH_WITHOUT_DAEMON", "hybrid")  # the search that loads the model
    monkeypatch.setattr(cli_search, "SLOW_SEARCH_S", 0.0)
    monkeypatch.setattr(cli_search, "_at_terminal", lambda: True)
    table = cairn("search", "database is locked")
    hints = [line for line in table.stderr.splitlines() if "cairn daemon start" in line]
    assert len(hints) == 1 and hints[0].startswith("Searched without the daemon ("), table.stderr
    assert "cairn daemon start" not in table.stdout

    as_json = cairn("search", "database is locked", "--json")
    page = json.loads(as_json.stdout)  # stdout is the JSON alone
    assert page["results"] and "daemon" not in as_json.stdout
    assert "cairn daemon start" in as_json.stderr


def test_a_script_reading_stderr_gets_no_advice(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_search, "SLOW_SEARCH_S", 0.0)
    proc = cairn("search", "database is locked")
    assert " of " in proc.stdout and "daemon" not in proc.stderr


def test_a_quick_search_without_the_daemon_says_nothing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_search, "SLOW_SEARCH_S", 3600.0)
    proc = cairn("search", "database is locked")
    assert "Postgres" in proc.stdout or " of " in proc.stdout
    assert "daemon" not in proc.stderr


def test_a_refused_search_prints_its_error_and_no_hint(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_SEARCH_WITHOUT_DAEMON", "hybrid")
    monkeypatch.setattr(cli_search, "SLOW_SEARCH_S", 0.0)
    monkeypatch.setattr(cli_search, "_at_terminal", lambda: True)
    proc = cairn("search", "--page-token", "not-a-token", check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("error:")
    assert "daemon" not in proc.stderr


def _registered() -> dict[str, str]:
    """Every command and group registered on the app once all command modules are imported, with the
    module that registered it."""
    commands.import_modules()
    found = {}
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")  # type: ignore[union-attr]
        found[name] = inspect.getmodule(info.callback).__name__  # type: ignore[union-attr]
    for group in app.registered_groups:
        found[str(group.name)] = _group_module(group.typer_instance)
    return found


def _group_module(typer_instance: object) -> str:
    for module in {m for ms in commands.COMMANDS.values() for m in ms}:
        if any(v is typer_instance for v in vars(importlib.import_module(f"cairn.cli.{module}")).values()):
            return f"cairn.cli.{module}"
    raise AssertionError(f"no command module defines {typer_instance!r}")


def test_the_registry_names_every_command_by_its_module() -> None:
    registered = _registered()
    assert set(registered) == set(commands.COMMANDS)
    for name, module in registered.items():
        assert module.removeprefix("cairn.cli.") in commands.COMMANDS[name], name


def test_help_lists_every_command_and_a_typo_gets_a_suggestion(cairn_home: Path) -> None:
    listed = cairn("--help", env={"COLUMNS": "120"}).stdout
    for name in commands.COMMANDS:
        assert f"│ {name} " in listed, name
    typo = cairn("serch", "x", check=False, env={"COLUMNS": "120"})
    assert typo.returncode == 2 and "Did you mean 'search'?" in typo.stderr
    assert "recall" in cairn("eval", "--help", env={"COLUMNS": "120"}).stdout
