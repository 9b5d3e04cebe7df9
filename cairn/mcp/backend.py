"""How an MCP tool call is answered: `cairn.memory.AsyncMemory` routes it, and every failure becomes a
`ToolError` with a message the model can act on — the server must answer the next call, whatever this
one did.

The MCP server lives as long as the Claude Code session that started it — hours — while the daemon
comes and goes; `AsyncMemory` chooses the route per call (the daemon's socket, else a store opened for
that call alone) and keeps one embedding function for the process's life, so its ONNX model loads once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from cairn.config import Settings
from cairn.memory import AsyncMemory

if TYPE_CHECKING:
    from chromadb.api.types import Documents, EmbeddingFunction

    from cairn.store.lock import StoreLockedError

log = logging.getLogger("cairn.mcp")


class Backend:
    """Answers ops (`cairn.daemon.server.OPS`) for one `CAIRN_HOME` through `memory`."""

    def __init__(
        self,
        settings: Settings,
        embedding_function: EmbeddingFunction[Documents] | None = None,
        *,
        memory: AsyncMemory | None = None,
    ) -> None:
        self.settings = settings
        self.memory = memory or AsyncMemory(settings, embedding_function=embedding_function)

    async def call(self, op: str, args: dict[str, Any]) -> Any:
        """The JSON result of `op`, from the daemon or directly; `ToolError` for any failure."""
        from cairn.daemon.client import DaemonFailure, DaemonRequestError
        from cairn.errors import Failure, Refusal
        from cairn.store.failures import describe_write_failure
        from cairn.store.lock import StoreLockedError

        try:
            return await self.memory.call(op, args)
        except Refusal as exc:  # bad id, unknown item, bad token, bad arguments: the reason alone
            raise ToolError(str(exc)) from exc
        except DaemonFailure as exc:  # worded as the direct path words it; the daemon logged it
            raise ToolError(exc.reason) from exc
        except DaemonRequestError as exc:
            raise ToolError(str(exc)) from exc
        except StoreLockedError as exc:
            raise ToolError(_busy(exc)) from exc
        except Failure as exc:  # an unusable database, a schema from a newer cairn, a read-only home
            log.warning("%s failed: %s", op, exc)
            raise ToolError(str(exc)) from exc
        except Exception as exc:
            if (full := describe_write_failure(exc, self.settings.home)) is not None:
                log.warning("%s failed: %s", op, full)
                raise ToolError(full) from exc
            log.exception("%s failed", op)
            raise ToolError(f"cairn could not answer {op}: {type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        await self.memory.aclose()


def _busy(exc: StoreLockedError) -> str:
    who = "another process"
    if exc.pid:
        who = f"pid {exc.pid}" + (f": {exc.description}" if exc.description else "")
    return (
        f"cairn store is busy ({who}); try again in a moment. A long job started while the daemon runs "
        "(`cairn daemon start`) does not block searches."
    )
