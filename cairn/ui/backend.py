"""How the viewer asks the store: the MCP server's route (`cairn.memory.AsyncMemory`, through
`cairn.mcp.backend.Backend`), with its failures turned into a `Refusal` a page can show.

The viewer is long-lived like the MCP server while the daemon comes and goes, so it takes the same
route per request: through the daemon's socket when it runs (it owns Chroma; invariant 2), else a store
opened here. One difference: opening a store costs little, but its first semantic search loads the
vector index (~0.3 s on a small store), and a person searching clicks on. So after a search (or opening
a result) the direct store is kept open for `LINGER_SECONDS` (`AsyncMemory`'s `linger`); other ops use
it while it is open but do not keep it open (the feed polls every 2 s and must not hold the lock for
ever). The lock is therefore held at most a few seconds after a person's last search: a daemon the hook
starts meanwhile finds the store busy and the next hook call starts it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from cairn.config import Settings
from cairn.errors import CairnError
from cairn.mcp.backend import Backend
from cairn.memory import AsyncMemory

LINGER_SECONDS = 3.0


class Refusal(CairnError):
    """An op the store refused or could not answer, with the one line that says why (either branch)."""


class Ops:
    """`call(op, args)` → the op's JSON, the same whichever process answered."""

    def __init__(self, settings: Settings, linger: float = LINGER_SECONDS) -> None:
        self.settings = settings
        self._backend = Backend(settings, memory=AsyncMemory(settings, linger=linger))

    async def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        try:
            return await self._backend.call(op, args or {})
        except ToolError as exc:
            raise Refusal(str(exc)) from exc

    async def close(self) -> None:
        await self._backend.close()
