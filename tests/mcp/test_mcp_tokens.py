"""Hostile continuation tokens sent to a real stdio MCP server (issue 14, item 4).

Each must come back as a tool error with the one-line refusal — not an internal exception's text —
and the server must keep answering afterwards.
"""

from __future__ import annotations

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from mcp import Client

from cairn.config import Settings
from cairn.search.paging import DAMAGED
from tests.mcp.helpers import _server, call, error
from tests.search.token_attacks import QUERY, attacks
from tests.tools.memory import seed_closed

pytestmark = pytest.mark.process


@pytest.fixture
async def seeded(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> None:
    await seed_closed(settings, embedding_function)


async def test_the_mcp_server_answers_every_forged_token_with_a_clean_tool_error(
    seeded: None, settings: Settings
) -> None:
    async with Client(_server(settings.home)) as connected:
        first = await call(connected, "search", QUERY)
        genuine = first["next_cursor"]
        assert genuine
        for name, token in attacks(genuine).items():
            message = await error(connected, "search", {"cursor": token})
            assert message == f"Error executing tool search: {DAMAGED}", name
            message = await error(connected, "search_content", {"cursor": token})
            assert message == f"Error executing tool search_content: {DAMAGED}", name
        second = await call(connected, "search", {"cursor": genuine, "limit": 1})
        assert second["results"][0]["id"] != first["results"][0]["id"]
