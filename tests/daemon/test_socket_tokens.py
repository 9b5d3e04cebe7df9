"""Hostile continuation tokens sent to a real daemon over its socket (issue 14, item 4).

The daemon must answer each with the same one-line refusal the library raises, keep serving, and the
key it signs with must be the one in CAIRN_HOME: a token it issued continues in a process that opens
the store itself once it has stopped.
"""

from __future__ import annotations

import json

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.config import Settings
from cairn.daemon.client import DaemonRefusal, daemon_request
from cairn.search.paging import DAMAGED
from tests.daemon.helpers import Daemons, alive, cairn
from tests.search.token_attacks import QUERY, REFUSAL, attacks
from tests.tools.memory import seed_closed


@pytest.fixture
async def seeded(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> None:
    await seed_closed(settings, embedding_function)


async def test_the_socket_refuses_every_forged_token_and_keeps_serving(
    seeded: None, daemons: Daemons, settings: Settings
) -> None:
    pid = daemons.start()
    first = await daemon_request(settings, "search", QUERY)
    genuine = first["next_token"]
    assert genuine
    # The full 200 MB bomb: ~270 KB of token, well inside the socket's 1 MiB request line.
    for name, token in attacks(genuine).items():
        with pytest.raises(DaemonRefusal) as raised:
            await daemon_request(settings, "search", {"continuation": token})
        assert raised.value.reason == DAMAGED, name
        with pytest.raises(DaemonRefusal) as raised:
            await daemon_request(settings, "search_content", {"continuation_token": token})
        assert raised.value.reason == DAMAGED, name
    assert alive(pid)
    second = await daemon_request(settings, "search", {"continuation": genuine, "limit": 1})
    assert second["results"][0]["id"] != first["results"][0]["id"]

    through_daemon = cairn("search", "--page-token", attacks(genuine, bomb_bytes=1 << 20)["nested_unsigned"])
    assert through_daemon.returncode == 2 and "Traceback" not in through_daemon.stderr
    assert through_daemon.stderr.strip().splitlines() == [f"error: {DAMAGED}"]
    assert REFUSAL in through_daemon.stderr

    daemons.stop()
    direct = cairn("search", "--page-token", genuine, "--limit", "1", "--json")
    assert direct.returncode == 0, direct.stderr
    ids = [r["id"] for r in json.loads(direct.stdout)["results"]]
    assert ids == [r["id"] for r in second["results"]], "the daemon's token continues without it"
