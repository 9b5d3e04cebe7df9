"""How the viewer asks the store: the MCP server's per-call route (daemon socket, else a store opened
directly), with its failures turned into a `Refusal` a page can show.

The viewer is long-lived like the MCP server while the daemon comes and goes, so it takes the same
route per request: through the daemon's socket when it runs (it owns Chroma; invariant 2), else a store
opened here. One difference: opening a store costs little, but its first semantic search loads the
vector index (~0.3 s on a small store), and a person searching clicks on. So after a search (or opening
a result) the direct store is kept open for `LINGER_SECONDS`; other ops use it while it is open but do
not keep it open (the feed polls every 2 s and must not hold the lock for ever). The lock is therefore
held at most a few seconds after a person's last search: a daemon the hook starts meanwhile finds the
store busy and the next hook call starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from cairn.config import Settings
from cairn.errors import CairnError
from cairn.mcp.backend import Backend

if TYPE_CHECKING:
    from cairn.store.store import Store

log = logging.getLogger("cairn.ui")

LINGER_SECONDS = 3.0
# What a person does in a row: search, open a result, look at what was said around it.
WARM_OPS = frozenset({"search", "show", "source_context", "timeline"})


class Refusal(CairnError):
    """An op the store refused or could not answer, with the one line that says why."""


class _LingeringBackend(Backend):
    """`Backend`, except that a direct store stays open `linger` seconds after a `WARM_OPS` call."""

    def __init__(self, settings: Settings, linger: float) -> None:
        super().__init__(settings)
        self.linger = linger
        self._warm: Store | None = None
        self._closer: asyncio.Task[None] | None = None

    async def _direct_call(self, op: str, args: dict[str, Any]) -> Any:
        from cairn.daemon.server import WRITING_OPS, run_op
        from cairn.errors import Refusal as OpRefusal

        if op in WRITING_OPS or (self._warm is None and op not in WARM_OPS):
            async with self._direct:  # a write must not meet a warm store: close it first
                await self._close_warm()
            return await super()._direct_call(op, args)
        async with self._direct:
            if self._warm is None:
                self._warm = await self._open()
            try:
                return await run_op(self._warm, op, args)
            except OpRefusal as exc:  # bad id, bad token: the page says why; anything else is a bug
                raise ToolError(str(exc)) from exc
            except Exception as exc:
                log.exception("%s failed", op)
                await self._close_warm()
                raise ToolError(f"cairn could not answer {op}: {type(exc).__name__}: {exc}") from exc
            finally:
                if op in WARM_OPS and self._warm is not None:
                    self._rearm()

    async def _open(self) -> Store:
        from cairn.store.store import Store
        from cairn.store.vectors import VectorIndex

        try:
            return await Store.open(
                self.settings,
                vectors=VectorIndex(self.settings, self.embedding_function()),
                read_only_ok=True,
                busy_ok=True,
            )
        except Exception as exc:
            from cairn.store.lock import StoreLockedError

            if isinstance(exc, StoreLockedError):
                raise
            raise ToolError(f"cannot open the cairn store at {self.settings.home}: {exc}") from exc

    def _rearm(self) -> None:
        if self._closer is not None:
            self._closer.cancel()
        self._closer = asyncio.create_task(self._close_later())

    async def _close_later(self) -> None:
        await asyncio.sleep(self.linger)
        async with self._direct:
            self._closer = None
            await self._close_warm()

    async def _close_warm(self) -> None:
        store, self._warm = self._warm, None
        if store is not None:
            await store.close()

    async def close(self) -> None:
        if self._closer is not None:
            self._closer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._closer
        async with self._direct:
            await self._close_warm()


class Ops:
    """`call(op, args)` → the op's JSON, the same whichever process answered."""

    def __init__(self, settings: Settings, linger: float = LINGER_SECONDS) -> None:
        self.settings = settings
        self._backend = _LingeringBackend(settings, linger)

    async def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        try:
            return await self._backend.call(op, args or {})
        except ToolError as exc:
            raise Refusal(str(exc)) from exc

    async def close(self) -> None:
        await self._backend.close()
