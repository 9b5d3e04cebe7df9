"""Where an MCP tool call is answered: by the daemon over its socket, else by a store opened for that call.

The MCP server lives as long as the Claude Code session that started it — hours — while the daemon
comes and goes (the hook starts it, it exits when idle). So the route is chosen per call, never once:

- a daemon runs for this `CAIRN_HOME`: the op goes over the socket, since the daemon owns Chroma and
  nobody else may open the store (invariant 2);
- none runs: the store is opened for this one call and closed right after, so the lock is never held
  between calls and a daemon the hook starts meanwhile can take the store over. Direct calls are
  serialised (one process can hold one store lock at a time), and one embedding function is kept for
  the process's life so its ONNX model loads once, not per call.

A store held by another process that is not answering (a daemon still starting up, or a direct
`cairn` command) is waited for briefly, then reported as busy. Every failure becomes a `ToolError`
with a message the model can act on: the server must answer the next call, whatever this one did.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from cairn.config import Settings

if TYPE_CHECKING:
    from chromadb.api.types import Documents, EmbeddingFunction

    from cairn.store.lock import StoreLockedError

log = logging.getLogger("cairn.mcp")

# How long a call waits for a store held by a process that does not answer on the socket: a daemon
# takes the lock a moment before it listens, and a short CLI command finishes within this.
BUSY_WAIT_SECONDS = 3.0
BUSY_POLL_SECONDS = 0.1


class Backend:
    """Answers ops (`cairn.daemon.server.OPS`) for one `CAIRN_HOME`, routing each call anew."""

    def __init__(
        self, settings: Settings, embedding_function: EmbeddingFunction[Documents] | None = None
    ) -> None:
        self.settings = settings
        self._embedding_function = embedding_function
        self._direct = asyncio.Lock()

    def embedding_function(self) -> EmbeddingFunction[Documents]:
        """The embedding function direct calls use: made at the first one, kept for the process's life."""
        if self._embedding_function is None:
            from cairn.store.embeddings import make_embedding_function

            self._embedding_function = make_embedding_function(self.settings)
        return self._embedding_function

    async def call(self, op: str, args: dict[str, Any]) -> Any:
        """The JSON result of `op`, from the daemon or directly; `ToolError` for any failure."""
        from cairn.daemon.client import (
            DaemonFailure,
            DaemonRefusal,
            DaemonRequestError,
            NoDaemon,
            daemon_request,
        )
        from cairn.daemon.process import running_pid
        from cairn.store.lock import StoreLockedError

        deadline = time.monotonic() + BUSY_WAIT_SECONDS
        retried = False
        while True:
            try:
                return await daemon_request(self.settings, op, args)
            except NoDaemon:
                pass
            except (DaemonRefusal, DaemonFailure) as exc:  # the reason only, worded as the direct path's
                raise ToolError(exc.reason) from exc
            except DaemonRequestError as exc:
                if retried or running_pid(self.settings) is not None:
                    raise ToolError(str(exc)) from exc
                retried = True  # the daemon exited (idle, stopped) while answering: ask again
                continue
            try:
                return await self._direct_call(op, args)
            except StoreLockedError as exc:
                if time.monotonic() >= deadline:
                    raise ToolError(_busy(exc)) from exc
            await asyncio.sleep(BUSY_POLL_SECONDS)

    async def _direct_call(self, op: str, args: dict[str, Any]) -> Any:
        """Open the store, run `op`, close it: the lock is held for this call only."""
        from cairn.daemon.server import WRITING_OPS, run_op
        from cairn.errors import Refusal
        from cairn.store.failures import describe_write_failure
        from cairn.store.lock import StoreLockedError
        from cairn.store.store import Store
        from cairn.store.vectors import VectorIndex

        async with self._direct:
            try:
                store = await Store.open(
                    self.settings,
                    vectors=VectorIndex(self.settings, self.embedding_function()),
                    read_only_ok=True,  # a read-only home still answers searches; writes say why not
                    busy_ok=op not in WRITING_OPS,  # a store a backfill is writing answers by keyword
                )
            except StoreLockedError:
                raise
            except Exception as exc:  # unusable database, schema from a newer cairn, missing model files
                log.exception("cannot open the store for %s", op)
                raise ToolError(f"cannot open the cairn store at {self.settings.home}: {exc}") from exc
            try:
                return await run_op(store, op, args)
            except Refusal as exc:  # bad id, unknown item, bad token, bad arguments
                raise ToolError(str(exc)) from exc
            except Exception as exc:
                if (full := describe_write_failure(exc, self.settings.home)) is not None:
                    log.warning("%s failed: %s", op, full)
                    raise ToolError(full) from exc
                log.exception("%s failed", op)
                raise ToolError(f"cairn could not answer {op}: {type(exc).__name__}: {exc}") from exc
            finally:
                await store.close()


def _busy(exc: StoreLockedError) -> str:
    who = "another process"
    if exc.pid:
        who = f"pid {exc.pid}" + (f": {exc.description}" if exc.description else "")
    return (
        f"cairn store is busy ({who}); try again in a moment. A long job started while the daemon runs "
        "(`cairn daemon start`) does not block searches."
    )
