"""What a `claude-code` run may spend: a model that keeps calling tools the CLI refuses is stopped by cairn.

The CLI answers a call of a tool it does not have ("No such tool") and asks the model again by itself,
so such a loop is a string of paid requests that pydantic-ai never sees. The real bundled CLI runs
against the fake Messages API, whose every reply calls the built-in `Bash` tool, with a known usage per
request: the run must stop within one request of its token limit and of what is left of today's
budget, the model must not be asked over and over, and every request the fake answered must be in the
ledger (`index_runs`), failed runs included. The gate every request of the CLI passes answers one over
the caps itself, so it never reaches the API; a stuck model's last request may still leave between its
third refused reply and cairn's interrupt, and is counted like the rest.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from pydantic_ai.models import override_allow_model_requests

from cairn.agent.budget import budget_state
from cairn.agent.claude_code_gate import opened
from cairn.agent.claude_code_session import MAX_REFUSED_REPLIES
from cairn.agent.claude_code_tools import TOOL_PREFIX
from cairn.agent.executor import RunRecord, record_failed_run
from cairn.agent.indexer import INVALID_OUTPUT, USAGE_LIMIT, index_pending
from cairn.agent.spend import RunMeter
from cairn.config import Settings
from cairn.store.store import Store
from tests.agent.claude_code_helpers import cli_processes, descendants, point_cli_at, require_cli
from tests.agent.fake_anthropic import FakeAnthropic, Reply, message, sse
from tests.helpers.indexer import only_batch, run_rows, store

__all__ = ["store"]  # the indexer tests' store: one small transcript, captured, not indexed

PER_REQUEST = {"input_tokens": 4_000, "output_tokens": 50}
TOKENS = PER_REQUEST["input_tokens"] + PER_REQUEST["output_tokens"]


@pytest.fixture
def looping(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeAnthropic]:
    """The fake API answering every request with a call of `Bash`, which the CLI refuses itself."""
    require_cli()
    with FakeAnthropic(tool_prefix=TOOL_PREFIX) as server, override_allow_model_requests(True):
        server.usage = PER_REQUEST
        bash = {"command": "ls"}
        server.responder = lambda body: Reply(200, server.tool_message("Bash", bash, builtin=True))
        point_cli_at(monkeypatch, server, tmp_path / "cli-home")
        yield server
    assert descendants() == []


def answered(fake: FakeAnthropic) -> int:
    """Requests the fake answered (each with `PER_REQUEST` tokens)."""
    return len(fake.requests)


async def recorded(store: Store) -> tuple[int, int]:
    """(input, output) tokens of every run in the ledger."""
    rows = await run_rows(store)
    return sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows)


async def all_recorded(store: Store, fake: FakeAnthropic, before: int = 0) -> int:
    """How many requests the fake answered, once the ledger is checked to hold every one of them (and
    `before` input tokens of earlier runs)."""
    sent = answered(fake)
    assert await recorded(store) == (
        before + sent * PER_REQUEST["input_tokens"],
        sent * PER_REQUEST["output_tokens"],
    )
    return sent


async def test_a_refused_tool_loop_stops_at_the_runs_token_limit_and_every_request_is_recorded(
    store: Store, settings: Settings, looping: FakeAnthropic
) -> None:
    # A run limit that two requests pass: the third must not be sent (the stuck-loop guard would stop
    # the run only at its third refused reply).
    settings = settings.model_copy(update={"run_token_budget": 6_000})
    planned = await only_batch(store)
    cap = settings.run_token_budget + 4 * planned.tokens
    assert TOKENS < cap < 2 * TOKENS

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    [run] = report.runs
    assert run.outcome == USAGE_LIMIT and not run.systemic, run.error
    assert "token limit" in run.error
    sent = await all_recorded(store, looping)
    [row] = await run_rows(store)
    assert row["requests"] == sent
    # Two requests pass the cap; the third never leaves cairn (the gate answers it itself).
    assert sent == 2
    assert cli_processes() == []


async def test_a_refused_tool_loop_stops_at_the_daily_budget_and_the_ledger_holds_the_spend(
    store: Store, settings: Settings, looping: FakeAnthropic
) -> None:
    planned = await only_batch(store)
    # Earlier today other runs spent all but a bit more than one request of a 100,000-token budget.
    settings = settings.model_copy(update={"daily_token_budget": 100_000})
    earlier = RunRecord(model="claude-code:claude-haiku-4-5", prompt_version="v", mode="continuous")
    earlier.input_tokens, earlier.outcome = 100_000 - TOKENS - 1_000, "ok"
    await record_failed_run(store.db, planned, earlier)

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    [run] = report.runs
    assert run.outcome == USAGE_LIMIT, run.error
    assert "today's indexing budget" in run.error
    sent = await all_recorded(store, looping, before=earlier.input_tokens)
    # The second request passed what was left; the third never left cairn.
    assert sent == 2
    state = await budget_state(store.db, settings)
    assert state.exhausted and state.spent == earlier.input_tokens + sent * TOKENS
    # The pass stops for the budget; nothing more is asked of the model today.
    again = await index_pending(store, settings, model="claude-code", mode="continuous")
    assert again.runs == [] and again.stopped is not None and "budget" in again.stopped
    assert answered(looping) == sent


async def test_a_model_stuck_on_refused_tools_is_given_up_after_a_few_replies(
    store: Store, settings: Settings, looping: FakeAnthropic
) -> None:
    """Under every cap, a model that only ever calls tools it does not have ends the run as the batch's
    failure (not a pause of indexing), with every request it cost recorded."""
    settings = settings.model_copy(update={"run_token_budget": 1_000_000})

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    [run] = report.runs
    assert run.outcome == INVALID_OUTPUT and not run.systemic, run.error
    assert "Bash" in run.error
    sent = await all_recorded(store, looping)
    assert MAX_REFUSED_REPLIES <= sent <= MAX_REFUSED_REPLIES + 1


async def test_the_gate_forwards_any_request_and_counts_a_messages_reply_sent_whole() -> None:
    """A plain JSON reply (no stream) and a chunked request body pass the gate as they are, and the
    reply's tokens reach the meter; a request over the cap is answered by the gate, not the API."""
    meter = RunMeter(token_cap=100)
    with FakeAnthropic() as fake:
        fake.text("hello")  # 100 input and 20 output tokens
        async with opened(fake.base_url, meter) as gate, httpx2.AsyncClient() as client:

            async def chunks() -> AsyncIterator[bytes]:
                yield b'{"model": "m", '
                yield b'"messages": []}'

            reply = await client.post(f"{gate.url}/v1/messages", content=chunks(), headers={"x-api-key": "k"})
            assert reply.status_code == 200 and reply.json()["content"][0]["text"] == "hello"
            assert fake.requests == [{"model": "m", "messages": []}]
            assert (meter.input_tokens, meter.output_tokens, meter.requests) == (100, 20, 1)
            again = await client.post(f"{gate.url}/v1/messages", json={"model": "m", "messages": []})
            assert again.status_code == 400 and "token limit" in again.json()["error"]["message"]
            assert len(fake.requests) == 1 and gate.refused is not None
            other = await client.post(f"{gate.url}/v1/messages/count_tokens", json={})
            # Not a Messages request, so not held to the cap: forwarded (the fake serves no such path).
            assert other.status_code == 404 and "count_tokens" in other.json()["error"]["message"]


async def test_the_gate_reads_the_usage_of_a_compressed_stream() -> None:
    """The API may compress an event stream; the gate still counts it, and passes it on decoded."""
    usage = {"input_tokens": 7, "output_tokens": 3}
    reply = sse(message([{"type": "text", "text": "hi"}], "end_turn", "m", usage))

    class Gzipping(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = gzip.compress(reply)
            self.send_response(200)
            for name, value in (("content-type", "text/event-stream"), ("content-encoding", "gzip")):
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Gzipping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    meter = RunMeter()
    try:
        upstream = f"http://127.0.0.1:{server.server_address[1]}"
        async with opened(upstream, meter) as gate, httpx2.AsyncClient() as client:
            got = await client.post(f"{gate.url}/v1/messages?beta=true", json={"stream": True})
    finally:
        server.shutdown()
        server.server_close()
    assert got.status_code == 200 and got.content == reply
    assert (meter.input_tokens, meter.output_tokens, meter.requests) == (7, 3, 1)
