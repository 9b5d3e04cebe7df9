"""The in-process MCP server through which Claude Code "calls" the indexing agent's tools.

pydantic-ai runs the indexing agent's tools itself (with its retries, usage limits and output
validation); Claude Code only has to turn the conversation into API requests. So the tools are listed
to the CLI by an MCP server whose handlers run nothing: a call parks on a future until pydantic-ai has
run the real tool and sent its return in its next request (`ParkedCalls.release`). The CLI then sends
that text to the model as the tool's result, exactly as if the handler had produced it.

A handler and the stream reader meet on the call's tool-use id: the CLI puts it in the MCP request's
`_meta["claudecode/toolUseId"]`. Either side may come first (the CLI can start the call before the
SDK has handed over the assistant message that contains it), so whichever does creates the future.
A CLI that sends no id (older than the bundled one) is matched by tool name and arguments instead,
among the calls the reader has announced and no handler has claimed yet; two identical calls in one
turn then get each other's identical answers, which is harmless.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from mcp.server.lowlevel import Server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent, Tool
from pydantic_ai.tools import ToolDefinition

SERVER_NAME = "cairn"
# How Claude Code names a tool of an MCP server, in requests and in `allowed_tools`.
TOOL_PREFIX = f"mcp__{SERVER_NAME}__"
TOOL_USE_ID_META = "claudecode/toolUseId"

Answer = tuple[str, bool]  # (the tool's return as the model reads it, whether it is an error)


def _key(name: str, args: dict[str, Any]) -> str:
    return name + "\0" + json.dumps(args, sort_keys=True)


@dataclass
class ParkedCalls:
    """The calls of one Claude Code session waiting for pydantic-ai's tool results, by tool-use id."""

    _futures: dict[str, asyncio.Future[Answer]] = field(default_factory=dict)
    # Calls announced by the reader, by name and arguments, for a CLI that sends no tool-use id.
    _unclaimed: dict[str, list[str]] = field(default_factory=dict)
    _announced: asyncio.Event = field(default_factory=asyncio.Event)

    def _future(self, tool_use_id: str) -> asyncio.Future[Answer]:
        if tool_use_id not in self._futures:
            self._futures[tool_use_id] = asyncio.get_running_loop().create_future()
        return self._futures[tool_use_id]

    def announce(self, tool_use_id: str, name: str, args: dict[str, Any]) -> None:
        """The model asked for this call: pydantic-ai will answer it in its next request."""
        self._future(tool_use_id)
        self._unclaimed.setdefault(_key(name, args), []).append(tool_use_id)
        self._announced.set()

    def waiting(self, tool_use_id: str) -> bool:
        """Whether a call with this id is parked (so a retry or return for it goes to the CLI)."""
        future = self._futures.get(tool_use_id)
        return future is not None and not future.done()

    def release(self, tool_use_id: str, text: str, is_error: bool) -> None:
        """Hand pydantic-ai's result of a call to its parked handler."""
        future = self._futures.get(tool_use_id)
        if future is not None and not future.done():
            future.set_result((text, is_error))

    def cancel_all(self) -> None:
        """End every parked handler: the session is closing."""
        for future in self._futures.values():
            future.cancel()

    async def answer(self, tool_use_id: str | None, name: str, args: dict[str, Any]) -> Answer:
        """Wait for pydantic-ai's result of the call `tool_use_id` (else the call `name(args)`)."""
        if tool_use_id is None:
            tool_use_id = await self._claim(_key(name, args))
        else:
            ids = self._unclaimed.get(_key(name, args), [])
            if tool_use_id in ids:
                ids.remove(tool_use_id)
        return await self._future(tool_use_id)

    async def _claim(self, key: str) -> str:
        while not self._unclaimed.get(key):
            self._announced.clear()
            await self._announced.wait()
        return self._unclaimed[key].pop(0)


def tool_server(tools: list[ToolDefinition], calls: ParkedCalls) -> Server:
    """An MCP server listing `tools` whose calls wait on `calls` for pydantic-ai's results."""
    listed = [
        Tool(name=tool.name, description=tool.description or "", input_schema=tool.parameters_json_schema)
        for tool in tools
    ]

    async def list_tools(_ctx: Any, _params: Any) -> ListToolsResult:
        return ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        tool_use_id = dict(params.meta or {}).get(TOOL_USE_ID_META)
        text, is_error = await calls.answer(
            tool_use_id if isinstance(tool_use_id, str) else None, params.name, params.arguments or {}
        )
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)

    return Server(SERVER_NAME, version="1", on_list_tools=list_tools, on_call_tool=call_tool)
