"""Who embeds in which mode: the commands a user waits on open the store for bulk embedding (every CPU),
the daemon for steady embedding (a few threads, the machine stays the user's) and switches to bulk for
the jobs a client waits on. Checked where each opens its store, by recording what it asks `Store.open`
for and stopping it there, and in the daemon's dispatch of a client's request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.daemon import server as daemon_server
from cairn.daemon.loop import run_daemon
from cairn.daemon.server import SocketServer
from cairn.lifecycle.tables import FORMAT, FORMAT_VERSION
from cairn.store import cpus
from cairn.store.store import Store
from tests.helpers import inprocess
from tests.helpers.paths import DEMO


class _Opened(Exception):
    """Raised by the spy in place of opening the store: what was asked is all the test needs."""


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every `Store.open` call; each call then raises `_Opened`."""
    calls: list[dict[str, Any]] = []

    async def spy(cls: type[Store], settings: Settings, **kwargs: Any) -> Store:
        calls.append(kwargs)
        raise _Opened

    monkeypatch.setattr(Store, "open", classmethod(spy))
    return calls


@pytest.mark.parametrize(
    "args",
    [
        ["backfill", "--model", "offline"],
        ["reindex", "--model", "offline"],
        ["reindex-vectors"],
        ["index", "DEMO", "--model", "offline"],
        ["sync"],
        ["import", "EXPORT"],
    ],
    ids=lambda args: args[0],
)
def test_commands_a_user_waits_on_embed_in_bulk(
    args: list[str], asked: list[dict[str, Any]], cairn_home: Path, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text(f'{{"format": "{FORMAT}", "version": {FORMAT_VERSION}}}\n')
    env = {"CAIRN_HOME": str(cairn_home), "CAIRN_CLAUDE_PROJECTS_DIR": str(tmp_path / "projects")}
    proc = inprocess.run([{"EXPORT": str(export), "DEMO": str(DEMO)}.get(a, a) for a in args], env)
    assert "_Opened" in proc.stderr, proc.stderr  # it did reach the store, through the spy
    assert asked and asked[-1].get("embedding_mode") == "bulk", asked


async def test_the_daemon_embeds_steady(asked: list[dict[str, Any]], settings: Settings) -> None:
    with pytest.raises(_Opened):
        await run_daemon(settings)
    assert asked == [{"embedding_mode": "steady"}]


def test_a_search_without_the_daemon_stays_steady(
    asked: list[dict[str, Any]], cairn_home: Path, tmp_path: Path
) -> None:
    """A query embeds one text: it gains nothing from every core and leaves them to the user."""
    env = {"CAIRN_HOME": str(cairn_home), "CAIRN_CLAUDE_PROJECTS_DIR": str(tmp_path / "projects")}
    proc = inprocess.run(["search", "flaky tests"], env)
    assert "_Opened" in proc.stderr, proc.stderr
    assert asked and asked[-1].get("embedding_mode", "steady") == "steady", asked


class _Client:
    """The socket client's reader and writer, as a job sees them: connected, its progress dropped."""

    def at_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return False

    def write(self, data: bytes) -> None:
        pass


async def test_the_daemon_embeds_in_bulk_while_a_client_waits(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cpus, "available_cpus", lambda: 6)
    threads: list[int] = []

    def record(store: Store) -> None:
        threads.append(store.vectors.embedding_function.threads)  # type: ignore[attr-defined]

    async def job(store: Store, settings: Settings, *, emit: Any = None, should_stop: Any = None) -> Any:
        record(store)
        return {}

    async def importing(store: Store, *, path: str) -> Any:
        record(store)
        return {}

    monkeypatch.setattr(daemon_server, "_long_ops", lambda: {"backfill": job})
    monkeypatch.setitem(daemon_server.OPS, "import", importing)
    store = await Store.open(settings, embedding_mode="steady")
    server = SocketServer(settings, store)
    client = _Client()
    try:
        for op, args in (("backfill", {}), ("import", {"path": "x"}), ("stats", {})):
            line = json.dumps({"op": op, "args": args}).encode()
            reply = await server._respond(line, client, client)  # type: ignore[arg-type]
            assert reply["ok"], reply
        assert threads == [6, 6]
        assert store.vectors.embedding_function.threads == 3  # type: ignore[attr-defined]
    finally:
        await store.close()


async def test_an_eval_backfills_in_bulk(asked: list[dict[str, Any]], tmp_path: Path) -> None:
    from cairn.evals.benchmark import run_benchmark

    with pytest.raises(_Opened):
        await run_benchmark(benchmark="b", dataset="d", files={}, questions=[], home=tmp_path / "eval")
    assert asked == [{"embedding_mode": "bulk"}]
