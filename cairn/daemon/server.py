"""The daemon's Unix socket: how every other cairn process reaches the store the daemon owns.

Chroma is not multi-process safe and the store lock admits one owner, so while the daemon runs the
CLI does not open the store itself: it sends one request over `$CAIRN_HOME/cairn.sock` and prints the
answer. The protocol is newline-delimited JSON, one request per line and one response per request:

    → {"op": "ideas", "args": {"limit": 5}}
    ← {"ok": true, "result": [...]}        or        ← {"ok": false, "error": "...", "kind": "refusal"}

An error is one line. `kind` says whose it is (`cairn.errors`): "refusal" for a request that cannot be
done (bad id, bad arguments), "failure" for one the daemon could not answer (a full disk, the model's
configuration, or a bug, whose trace goes to the daemon's log and whose line says so). A response
without `kind` is a refusal, so a client reads any daemon's answer the way it always could.

Why a Unix socket with mode 0600 and no TCP port: the store holds everything the user's sessions
said; only the user's own processes may ask it anything. Requests run as tasks in the daemon's event
loop against its one open `Store`, so their writes are serialised with the loop's own by the writer
lock in `Database.write()`.

`run_op` is also what the CLI calls when no daemon runs, so both paths compute the same JSON and the
user sees the same output either way.

The long ops (`index`, `backfill`, `reindex_vectors`, see `cairn.daemon.jobs`; `redact_rescan`, see
`cairn.rescan`) may answer with any
number of progress lines before the final one:

    ← {"progress": {"step": "index", "advance": 1}}
    ← {"ok": true, "result": {...}}

They hold the daemon's indexing lock, which its loop takes for every cycle, so they never capture or
index the same messages as the loop at the same time. A client that hangs up stops the op at the
next batch boundary; the batch in flight is finished and applied whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.daemon.logs import log_path
from cairn.errors import Failure, Refusal, internal_error_line
from cairn.store.store import Store

log = logging.getLogger("cairn.daemon.server")

MAX_REQUEST_BYTES = 1024 * 1024
# sockaddr_un.sun_path is 108 bytes on Linux, the terminating NUL included.
MAX_SOCKET_PATH_BYTES = 107


class UnknownOpError(Refusal):
    """A request named an operation the daemon does not offer."""


class BadArgumentsError(Refusal):
    """A request's arguments do not fit its operation."""


async def _stats(store: Store) -> Any:
    """The store's statistics, plus the recall hook's drop counts (`recall_drops`, per reason in
    `recall_drops_by_reason`): the hook counts them in a file of the home, since it never opens the store."""
    from dataclasses import asdict

    from cairn.agent.budget import budget_state, utc_now
    from cairn.daemon.recall_drops import read_drops
    from cairn.daemon.status import as_budget, budget_applies, current_pause

    data = (await store.stats()).model_dump(mode="json")
    drops = read_drops(store.settings.home)
    data["recall_drops"] = drops["total"]
    data["recall_drops_by_reason"] = drops["by_reason"]
    # Today's indexing tokens (local day, any model but offline) against the daily budget, and the
    # daemon's pause while it holds (`cairn.daemon.pause`).
    now = utc_now()
    today = as_budget(await budget_state(store.db, store.settings, now))
    data["indexing_today"] = {**asdict(today), "applies": budget_applies(store.settings)}
    pause = await current_pause(store.db, store.settings, now)
    data["indexing_paused"] = pause.line if pause is not None else None
    return data


async def _overview(store: Store, *, limit: int = 100) -> Any:
    """The viewer's home page figures (`cairn.search.overview`), with recall's drops beside its
    injections and hits, as `_stats` adds them."""
    from cairn.daemon.recall_drops import read_drops
    from cairn.search.overview import overview

    data = await overview(store, limit=limit)
    drops = read_drops(store.settings.home)
    data["recall"].update(drops=drops["total"], drops_by_reason=drops["by_reason"], last_drop=drops["last"])
    return data


async def _ideas(
    store: Store,
    *,
    intents: list[str] | None = None,
    session: str | None = None,
    project: str | None = None,
    open_only: bool = False,
    include_superseded: bool = False,
    limit: int = 50,
) -> Any:
    from cairn.search.projects import project_ids
    from cairn.store.memory import list_ideas

    return await list_ideas(
        store.db,
        intents=tuple(intents or ()),
        session=session,
        project_ids=await project_ids(store.db, project),
        open_only=open_only,
        include_superseded=include_superseded,
        limit=limit,
    )


async def _idea_counts(
    store: Store, *, intents: list[str] | None = None, session: str | None = None, project: str | None = None
) -> Any:
    from cairn.search.projects import project_ids
    from cairn.store.memory import count_ideas

    return await count_ideas(
        store.db,
        intents=tuple(intents or ()),
        session=session,
        project_ids=await project_ids(store.db, project),
    )


async def _projects(store: Store, *, limit: int = 100) -> Any:
    from cairn.store.memory import list_projects

    return await list_projects(store.db, limit=limit)


async def _topics(store: Store, *, session: str | None = None, limit: int = 100) -> Any:
    from cairn.store.memory import list_topics

    return await list_topics(store.db, session=session, limit=limit)


async def _entities(store: Store, *, type: str | None = None, limit: int = 100) -> Any:
    from cairn.store.memory import list_entities

    return await list_entities(store.db, type=type, limit=limit)


async def _enqueue(store: Store, *, paths: list[str], event: str = "sync") -> Any:
    """Hand transcript files to the daemon's queue, as the hook does; how many were newly queued."""
    from cairn.daemon import queue

    # A string is iterable too: unchecked, "abc" would queue one item per character.
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        raise BadArgumentsError(
            f"bad arguments for 'enqueue': paths must be a list of strings, not {type(paths).__name__}"
            if not isinstance(paths, list)
            else "bad arguments for 'enqueue': paths must be a list of strings"
        )
    if not isinstance(event, str):
        raise BadArgumentsError("bad arguments for 'enqueue': event must be a string")
    added = 0
    for path in paths:
        added += await queue.enqueue(store.db, str(path), None, event)
    return {"queued": len(paths), "added": added}


Op = Callable[..., Awaitable[Any]]

# `questions` and `todos` are `ideas` with fixed intents: the CLI sends them as `ideas`. An op that
# lives in another module is named by its import path and imported at its first call (`op_function`):
# a search run without the daemon must not import forget, import and recall, a tenth of a second of
# its time (`benchmarks/cli_search.py`).
OPS: dict[str, Op | str] = {
    "stats": _stats,
    "overview": _overview,
    "ideas": _ideas,
    "idea_counts": _idea_counts,
    "projects": _projects,
    "topics": _topics,
    "entities": _entities,
    "enqueue": _enqueue,
    "search": "cairn.search.ops:search",
    "search_content": "cairn.search.ops:search_content",
    "show": "cairn.search.ops:show",
    "timeline": "cairn.search.ops:timeline",
    "open_questions": "cairn.search.ops:open_questions",
    "learner_stats": "cairn.search.ops:learner_stats",
    "learn_associations": "cairn.search.ops:learn_associations",
    "learn_forget": "cairn.search.ops:learn_forget",
    "forget": "cairn.lifecycle.ops:forget_op",
    "import": "cairn.lifecycle.ops:import_op",
    "files": "cairn.search.ops:files",
    "recall": "cairn.recall.ops:recall_op",
    "feed": "cairn.search.browse:feed",
    "project_timeline": "cairn.search.browse:project_timeline",
    "source_context": "cairn.search.browse:source_context",
    "neighbourhood": "cairn.search.graph:neighbourhood",
    "supersede": "cairn.lifecycle.supersede:supersede_op",
    "correct": "cairn.lifecycle.correct:correct_op",
}

#: The ops above that write. The others also answer, by keyword, from a store another process is
#: writing (`Store.open(busy_ok=True)`); these wait for it instead.
WRITING_OPS = frozenset({"enqueue", "learn_forget", "forget", "import", "supersede", "correct"})


def _long_ops() -> dict[str, Op]:
    from cairn.daemon import jobs
    from cairn.rescan import redact_rescan_job

    return {
        "index": jobs.index_job,
        "backfill": jobs.backfill_job,
        "reindex_vectors": jobs.reindex_vectors_job,
        "reindex": jobs.reindex_job,
        "redact_rescan": redact_rescan_job,
    }


LONG_OPS = ("backfill", "index", "reindex", "reindex_vectors", "redact_rescan")


def long_op_function(op: str) -> Op:
    """The job function of a long op (`LONG_OPS`), imported now; another op is a refusal."""
    if op not in LONG_OPS:
        raise UnknownOpError(f"{op!r} is not a long op; the long ops are {', '.join(LONG_OPS)}")
    return _long_ops()[op]


#: Ops besides the long ones that embed much while a client waits: they embed with every CPU
#: (`SocketServer._bulk`), as they would without the daemon.
BULK_OPS = frozenset({"import"})


def to_json(value: Any) -> Any:
    """`value` as it comes out of a JSON round trip, so a direct result equals one from the socket."""
    return json.loads(json.dumps(value, default=str))


def op_function(op: str) -> Op:
    """The function that answers `op`, imported now if it is named by its path; an unknown op is a
    refusal that lists the ops there are."""
    fn = OPS.get(op)
    if fn is None:
        offered = ", ".join(sorted([*OPS, *LONG_OPS]))
        raise UnknownOpError(f"unknown op {op!r}; the daemon offers {offered}")
    if isinstance(fn, str):
        module, name = fn.split(":")
        fn = OPS[op] = getattr(importlib.import_module(module), name)
    return fn


async def run_op(store: Store, op: str, args: dict[str, Any] | None = None) -> Any:
    """Run one operation on `store` and return its JSON-able result (the same in and out of the daemon)."""
    fn = op_function(op)
    args = args or {}
    try:
        inspect.signature(fn).bind(store, **args)
    except TypeError as exc:
        raise BadArgumentsError(f"bad arguments for {op!r}: {exc}") from exc
    return to_json(await fn(store, **args))


def _parse(line: bytes) -> tuple[str, dict[str, Any]]:
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refusal(f"bad request: not JSON ({exc})") from exc
    if not isinstance(request, dict) or not isinstance(request.get("op"), str):
        raise Refusal('bad request: expected {"op": "...", "args": {...}}')
    args = request.get("args") or {}
    if not isinstance(args, dict):
        raise Refusal("bad request: args must be an object")
    return request["op"], args


class SocketServer:
    """The daemon's listening socket and the requests in flight on it.

    Connections are tracked so `close()` can end them before the store they use is closed.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        index_lock: asyncio.Lock | None = None,
        on_request: Callable[[bool], None] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.index_lock = index_lock or asyncio.Lock()
        # Called with True when a request is read and with False when it is answered or abandoned (the
        # daemon's loop: not idle meanwhile).
        self.on_request = on_request
        self.path = settings.socket_path
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Listen on the socket path, owner-only; a file left there by a dead daemon is replaced.

        Only the store lock's holder calls this, so whatever is at the path is stale.
        """
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH_BYTES:
            raise OSError(f"socket path {self.path} is too long for a Unix socket; use a shorter CAIRN_HOME")
        _remove_socket(self.path)
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._handle, path=str(self.path), limit=MAX_REQUEST_BYTES
            )
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        log.info("listening on %s", self.path)

    async def close(self) -> None:
        """Stop listening, cancel the requests in flight, remove the socket file."""
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            if self._connections:
                await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        _remove_socket(self.path)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection
                except asyncio.LimitOverrunError:
                    await _send(writer, {"ok": False, "error": "bad request: line too long"})
                    return
                if self.on_request is not None:
                    self.on_request(True)
                try:
                    await _send(writer, await self._respond(line, reader, writer))
                finally:
                    if self.on_request is not None:  # idle from the answer on, however long it took
                        self.on_request(False)
        except ConnectionError:
            return
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _respond(
        self, line: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> dict[str, Any]:
        from cairn.store.failures import describe_write_failure

        op = "request"
        try:
            op, args = _parse(line)
            if op in LONG_OPS:
                return {"ok": True, "result": await self._run_long(op, args, reader, writer)}
            if op in BULK_OPS:
                log.info("running %s for a socket client", op)
                with self._bulk():
                    return {"ok": True, "result": await run_op(self.store, op, args)}
            return {"ok": True, "result": await run_op(self.store, op, args)}
        except Refusal as exc:
            return {"ok": False, "error": str(exc), "kind": "refusal"}
        except Exception as exc:
            if (full := describe_write_failure(exc, self.settings.home)) is not None:
                log.warning("request failed: %s", full)  # a full disk is the user's to fix, not a bug
                return {"ok": False, "error": full, "kind": "failure"}
            if isinstance(exc, Failure):  # the model's configuration, a store it cannot use: said, not a bug
                log.warning("%s failed: %s", op, exc)
                return {"ok": False, "error": str(exc), "kind": "failure"}
            log.exception("%s failed", op)
            return {
                "ok": False,
                "error": internal_error_line(op, exc, log_path(self.settings)),
                "kind": "failure",
            }

    async def _run_long(
        self, op: str, args: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Any:
        """Run a long op under the indexing lock, streaming its progress to the client."""
        fn = long_op_function(op)
        for reserved in ("emit", "should_stop"):
            args.pop(reserved, None)
        try:
            inspect.signature(fn).bind(self.store, self.settings, **args)
        except TypeError as exc:
            raise BadArgumentsError(f"bad arguments for {op!r}: {exc}") from exc

        def gone() -> bool:
            return reader.at_eof() or writer.is_closing()

        def emit(event: dict[str, Any]) -> None:
            if not gone():
                writer.write(json.dumps({"progress": event}, default=str).encode() + b"\n")

        async with self.index_lock:
            log.info("running %s for a socket client", op)
            with self._bulk():
                result = await fn(self.store, self.settings, **args, emit=emit, should_stop=gone)
        return to_json(result)

    def _bulk(self) -> contextlib.AbstractContextManager[None]:
        """A client waits on this op: the store embeds with every CPU meanwhile, not the daemon's few."""
        vectors = self.store.vectors_or_none
        return contextlib.nullcontext() if vectors is None else vectors.embedding_mode("bulk")


async def _send(writer: asyncio.StreamWriter, response: dict[str, Any]) -> None:
    writer.write(json.dumps(response, default=str).encode() + b"\n")
    await writer.drain()


def _remove_socket(path: Path) -> None:
    """Remove a socket file at `path`; anything else there is left alone and reported by the bind."""
    try:
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()
    except FileNotFoundError:
        pass
