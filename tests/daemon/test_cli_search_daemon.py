"""`cairn search` through a real daemon process: the same answer as without one, and fast because the
client path imports nothing of the store (the figures: `benchmarks/cli_search.py`); and the daemon a
search without one starts when that spends nothing (the offline model), and only then.

A search counts its results as used, which ranks them a little higher next time, so the direct and the
daemon's answers are compared on two copies of one store, each asked the same searches in the same order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cairn.cli import app, early_search
from cairn.cli import search as cli_search
from cairn.daemon.hook import STARTING_MARKER
from tests.daemon.helpers import Daemons, alive, cairn, pidfile_pid, wait_for
from tests.helpers.cli import cairn as run_cairn

SEARCHES = [
    ["search", "database is locked"],
    ["search", "busy_timeout", "--mode", "keyword"],
    ["search", "which database for the orders service", "--kind", "ideas", "--limit", "5"],
    ["search", "WAL", "--kind", "messages", "--mode", "semantic"],
]

#: What the daemon's client path must never import: the store, Chroma, the embedding model's runtime,
#: the indexing agent, the settings model. Each is a large share of a cold search's seconds.
HEAVY_MODULES = ("chromadb", "onnxruntime", "pydantic_ai", "numpy", "pydantic_settings", "cairn.store.store")


@pytest.fixture
def homes(demo_home: Path, cairn_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two copies of the indexed demo store: `cairn_home` for the daemon, the returned one for direct
    answers."""
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    direct = tmp_path / "direct-home"
    shutil.copytree(demo_home, direct, symlinks=True)
    return direct


def _ids(page: dict[str, object]) -> list[object]:
    return [result["id"] for result in page["results"]]  # type: ignore[index,union-attr]


def test_search_through_the_daemon_equals_the_direct_answer(
    homes: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_search, "SLOW_SEARCH_S", 0.0)  # any direct search would print the hint
    monkeypatch.setattr(cli_search, "_at_terminal", lambda: True)  # ...to a person at a terminal
    # The direct search that loads the model, as the daemon has it (`search_without_daemon`).
    alone_env = {"CAIRN_HOME": str(homes), "CAIRN_SEARCH_WITHOUT_DAEMON": "hybrid"}
    direct = [cairn(*args, "--json", env=alone_env) for args in SEARCHES]
    daemons.start()
    # The daemon holds the store's lock: these can only have been answered over its socket.
    through_daemon = [cairn(*args, "--json") for args in SEARCHES]
    for args, alone, served in zip(SEARCHES, direct, through_daemon, strict=True):
        assert alone.returncode == served.returncode == 0, (args, alone.stderr, served.stderr)
        alone_page, served_page = json.loads(alone.stdout), json.loads(served.stdout)
        assert _ids(served_page) == _ids(alone_page), args
        assert served_page["total"] == alone_page["total"] and served_page["mode"] == alone_page["mode"]
        assert cli_search.DAEMON_HINT[:20] in alone.stderr
        assert "daemon" not in served.stderr, "no hint when the daemon answered"
    assert any(_ids(json.loads(p.stdout)) for p in direct), "the searches should find something"
    table = cairn("search", "database is locked")
    assert table.returncode == 0 and "#" in table.stdout and "daemon" not in table.stderr


#: `cairn search` as the console script runs it, listing on stderr, as it exits, every module it imported.
LIST_MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
from cairn.cli import app
app(["search", "database is locked"], prog_name="cairn")
"""


def test_the_client_path_imports_nothing_of_the_store(homes: Path, daemons: Daemons) -> None:
    daemons.start()
    proc = subprocess.run(
        [sys.executable, "-c", LIST_MODULES],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\d+ of \d+", proc.stdout), proc.stdout
    imported = set(json.loads(proc.stderr.rpartition("MODULES ")[2]))
    assert {"cairn.cli.search", "cairn.daemon.client"} <= imported
    assert not {m for m in imported if m in HEAVY_MODULES or m.split(".")[0] in HEAVY_MODULES}
    # Nor the other commands' modules (`cairn.cli.commands`), nor asyncio (`ask_daemon`).
    assert not {"cairn.cli.capture", "cairn.cli.eval", "cairn.cli.admin", "asyncio"} & imported


def test_requests_keep_the_daemon_from_idling_out(
    homes: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon started for fast searches stays while they come, and idles out once they stop."""
    idle = 3.0
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", str(idle))
    pid = daemons.start()
    until = time.monotonic() + 2.5 * idle
    while time.monotonic() < until:
        assert alive(pid), "the daemon idled out while it was being asked"
        assert cairn("stats", "--json").returncode == 0
        time.sleep(0.2)
    assert alive(pid) and pidfile_pid(Path(os.environ["CAIRN_HOME"])) == pid
    wait_for(lambda: not alive(pid), 60, "the daemon to idle out once nobody asks")


def _started_daemon(home: Path, daemons: Daemons) -> int:
    """The daemon a search started, once it listens (its pidfile names it) and its starter is gone;
    remembered for the fixture's clean-up."""
    wait_for(lambda: pidfile_pid(home) is not None, 120, "the daemon the search started to write its pidfile")
    pid = pidfile_pid(home)
    assert pid is not None
    daemons.pids.append(pid)
    wait_for(lambda: not (home / STARTING_MARKER).exists(), 120, "the starter to finish")
    return pid


def test_a_search_starts_the_daemon_when_the_model_is_offline(
    homes: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["CAIRN_HOME"])
    monkeypatch.setenv("CAIRN_SEARCH_STARTS_DAEMON", "true")
    monkeypatch.setattr(cli_search, "_at_terminal", lambda: True)  # a person's search
    first = cairn("search", "database is locked", "--json")
    assert first.returncode == 0, first.stderr
    page = json.loads(first.stdout)
    assert page["results"] and cli_search.NEXT_STARTED in page["vectors_unavailable"]
    assert cli_search.DAEMON_STARTED in first.stderr
    pid = _started_daemon(home, daemons)
    assert alive(pid)
    second = cairn("search", "database is locked", "--json")
    assert second.returncode == 0, second.stderr
    served = json.loads(second.stdout)
    assert served["results"] and served["vectors_unavailable"] is None, "the daemon searched meaning too"
    assert "daemon" not in second.stderr and pidfile_pid(home) == pid, "asked, not started again"


@pytest.mark.parametrize(
    ("settings", "at_terminal"),
    [
        ({"CAIRN_MODEL": "anthropic:claude-haiku-4-5"}, True),
        ({"CAIRN_MODEL": "claude-code"}, True),
        ({"CAIRN_SEARCH_STARTS_DAEMON": "false"}, True),
        ({}, False),
    ],
    ids=["paid-model", "claude-code", "turned-off", "a-script"],
)
def test_no_daemon_is_started_when_it_would_spend_or_is_turned_off(
    homes: Path,
    daemons: Daemons,
    monkeypatch: pytest.MonkeyPatch,
    settings: dict[str, str],
    at_terminal: bool,
) -> None:
    """The start is launched before the command exits (its marker is made then): none made, none runs."""
    home = Path(os.environ["CAIRN_HOME"])
    monkeypatch.setenv("CAIRN_SEARCH_STARTS_DAEMON", "true")
    monkeypatch.setattr(cli_search, "_at_terminal", lambda: at_terminal)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    proc = cairn("search", "database is locked", "--json")
    assert proc.returncode == 0, proc.stderr
    page = json.loads(proc.stdout)
    assert page["results"] and cli_search.NEXT_START_IT in page["vectors_unavailable"]
    assert cli_search.DAEMON_STARTED not in proc.stderr
    assert not (home / STARTING_MARKER).exists() and pidfile_pid(home) is None


def test_a_plain_search_is_sent_before_the_command_line_loads(homes: Path, daemons: Daemons) -> None:
    """`cairn search WORDS` sends its search as the process starts (`cairn.cli.early_search`) and the
    command takes that answer when it asks the very same: one search, its results counted once."""
    daemons.start()
    query = "database is locked"
    early_search.start(["search", "--json", query])
    sent = early_search.take("search", early_search.search_args(query))
    assert sent is not None, "the plain form is sent early while a daemon listens"
    assert sent.answer()["results"]
    assert early_search.take("search", early_search.search_args(query)) is None, "taken once"
    early_search.start(["search", query])
    assert early_search.take("search", early_search.search_args(query, limit=5)) is None, "not what was sent"
    for not_plain in (["search", query, "--limit", "5"], ["search", "-x"], ["show", "#1"], ["search"]):
        early_search.start(not_plain)
        assert early_search.take("search", early_search.search_args(query)) is None, not_plain

    # A user's process: the early answer is the one shown, and the search ran once (its results'
    # usage counts rose by one each, not two).
    first = json.loads(cairn("search", query, "--json").stdout)["results"][0]["id"]
    usage = json.loads(cairn("show", first, "--json").stdout)["usage_count"]
    shown = json.loads(run_cairn("search", query, "--json", real_process=True).stdout)["results"]
    assert first in [result["id"] for result in shown]
    assert json.loads(cairn("show", first, "--json").stdout)["usage_count"] == usage + 1


#: `cairn search ARGS` as the entry point runs it, listing on stderr, as it exits, every module it imported.
MAIN_LISTING_MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["cairn", "search", *json.loads(sys.argv[1])]
from cairn.cli import main
main()
"""


def _main_search(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", MAIN_LISTING_MODULES, json.dumps(args)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    stderr, _, modules = proc.stderr.rpartition("MODULES ")
    proc.stderr = stderr
    return proc, set(json.loads(modules))


def test_a_page_the_daemon_answered_is_printed_without_loading_the_command_line(
    homes: Path, daemons: Daemons
) -> None:
    """A plain search's page of results is printed by `early_search.print_answer`, typer never loaded,
    the same table and JSON the command prints; a page with nothing in it goes to the command, whose
    advice asks the store more."""
    daemons.start()
    table, imported = _main_search("database is locked")
    assert table.returncode == 0, table.stderr
    assert "typer" not in imported and "cairn.cli.common" not in imported
    assert re.search(r"\d+ of \d+ · hybrid", table.stdout) and "database" in table.stdout.lower()
    assert table.stderr == ""

    as_json, imported = _main_search("--json", "database is locked")
    assert as_json.returncode == 0 and "typer" not in imported, as_json.stderr
    page = json.loads(as_json.stdout)
    assert page["results"] and page["mode"] == "hybrid"
    # The command's own rendering (an option keeps it from the early path) ends the same way.
    by_command = cairn("search", "database is locked", "--limit", "10")
    assert by_command.returncode == 0, by_command.stderr
    footers = [re.sub(r" · \d+ ms", "", p.stdout.splitlines()[-1]) for p in (table, by_command)]
    assert footers[0] == footers[1], footers

    nothing, imported = _main_search("zzqxv nowhere")
    assert nothing.returncode == 0, nothing.stderr
    assert "No matches for 'zzqxv nowhere'" in nothing.stdout and "typer" in imported
    nothing_json, imported = _main_search("zzqxv nowhere", "--json")
    assert json.loads(nothing_json.stdout)["results"] == [] and "typer" not in imported


def test_an_early_answer_that_failed_is_said_by_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure met reading the early answer is not printed early: the command takes it and says it in
    one line, as it says any daemon failure."""
    from cairn.daemon.client import DaemonRequestError

    class Lost:
        def answer(self) -> object:
            raise DaemonRequestError("the cairn daemon (pid 1) closed the connection")

        def close(self) -> None:
            pass

    args = early_search.search_args("hook latency")
    monkeypatch.setattr(early_search, "_sent", early_search._Sent("search", args, False, Lost()))  # type: ignore[arg-type]
    monkeypatch.setattr("cairn.home.DaemonAddress.config_changed_since_start", lambda self: False)
    assert early_search.print_answer() is False
    result = CliRunner().invoke(app, ["search", "hook latency"])
    assert result.exit_code == 1
    assert "error: the cairn daemon (pid 1) closed the connection" in result.output


def test_the_plain_search_sent_early_is_the_one_the_command_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The early request is built by the command's own `search_args`; were a default to change in one
    place only, the early answer would never be taken (and each plain search would run twice)."""
    asked: list[tuple[str, dict[str, object]]] = []

    def ask(op: str, args: dict[str, object], **_: object) -> dict[str, object]:
        asked.append((op, args))
        return {"results": [], "total": 0, "notices": []} if op == "search" else {"messages": 1}

    monkeypatch.setattr(cli_search, "ask", ask)
    for argv in (["search", "hook latency"], ["search", "--json", "hook latency"]):
        asked.clear()
        assert early_search.plain_query(argv) == "hook latency"
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 0, result.output
        assert asked[0] == ("search", early_search.search_args("hook latency"))
