"""Shared by the MCP server's tests: tool calls and their errors through a client, and a stdio server's
parameters."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers.paths import REPO_ROOT


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> Any:
    """A tool's JSON answer; fails the test on a tool error."""
    result = await client.call_tool(tool, args or {})
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def error(client: Client, tool: str, args: dict[str, Any]) -> str:
    """A tool error's message; fails the test when the call succeeds."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.content
    return result.content[0].text


def _server(home: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cairn", "mcp"],
        env={"CAIRN_HOME": str(home), "CAIRN_MODEL": "offline", **env},
        cwd=str(REPO_ROOT),
    )
