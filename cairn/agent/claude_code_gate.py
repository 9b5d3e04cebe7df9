"""A loopback gate between a Claude Code session's CLI and the Messages API: every request the CLI sends
passes the run's meter before it leaves, and every token it is answered with is counted.

The CLI sends API requests of its own: when the model calls a tool the session does not have, the CLI
answers "No such tool" and asks the model again by itself, with no hook or callback in between. Read
from the CLI's output, such a loop can only be stopped after the fact, and a request the CLI sent just
before an interrupt reached it is never seen. So the session's CLI is pointed at this gate
(`ANTHROPIC_BASE_URL`); the gate forwards each request to where the CLI would have sent it (the
environment's `ANTHROPIC_BASE_URL`, else the API), streams the reply back as it comes, and reads the
tokens of its `message_start` and `message_delta` events (or of a JSON reply) into the run's meter as
they pass. A Messages request that would pass the run's caps (its token limit, what is left of today's
budget, its request limit) is not forwarded: the gate answers it with a 400 error itself, the CLI ends
its turn on it, and the session reports the stop (`refused`).

Only the CLI talks to the gate: it listens on 127.0.0.1 on a port of the system's choosing, for the
life of one session. One request per connection (`Connection: close`), which Node's fetch handles.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx2

from cairn.agent.spend import RunMeter, SpendLimitReached

log = logging.getLogger(__name__)

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# Headers that belong to one hop, or that the gate sets itself.
_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}
)
# A reply is passed on decoded (its usage is read on the way), so it no longer has its encoding.
_DECODED = _HOP | {"content-encoding"}
_HEAD_LIMIT = 1 << 16
# Generous: a streamed reply may pause between events while the model thinks; the CLI has its own.
_TIMEOUT = httpx2.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)
_INPUT_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass
class Gate:
    """The gate of one session: where the CLI is pointed, and the stop it made, if any."""

    upstream: str
    meter: RunMeter | None
    refused: SpendLimitReached | None = None
    _server: asyncio.Server | None = None
    _client: httpx2.AsyncClient = field(default_factory=lambda: httpx2.AsyncClient(timeout=_TIMEOUT))

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=_HEAD_LIMIT)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
        await self._client.aclose()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, target, headers = await _read_head(reader)
            body = await _read_body(reader, headers)
            if method == "POST" and _is_messages(target):
                try:
                    if self.meter is not None:
                        self.meter.before_request()
                except SpendLimitReached as stop:
                    self.refused = stop
                    await _answer_error(writer, str(stop))
                    return
            await self._forward(writer, method, target, headers, body)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass  # a client gone mid-request, or one that is not speaking HTTP: nothing to answer
        except httpx2.HTTPError as exc:
            log.warning("Claude Code gate: the API could not be reached: %s", exc)
            with contextlib.suppress(Exception):
                await _answer(writer, 502, _error("api_error", str(exc)))
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _forward(
        self,
        writer: asyncio.StreamWriter,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        url = self.upstream.rstrip("/") + target
        sent = [(k, v) for k, v in headers if k.lower() not in _HOP]
        request = self._client.build_request(method, url, headers=sent, content=body)
        response = await self._client.send(request, stream=True)
        try:
            kind = response.headers.get("content-type", "")
            counting = _is_messages(target) and self.meter is not None and response.status_code == 200
            head = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}"]
            head += [f"{k}: {v}" for k, v in response.headers.items() if k.lower() not in _DECODED]
            head += ["transfer-encoding: chunked", "connection: close", "", ""]
            writer.write("\r\n".join(head).encode("latin-1"))
            events = _SseUsage(self.meter) if counting and "event-stream" in kind else None
            whole = bytearray() if counting and events is None else None
            try:
                # Decoded: the gate reads the usage in it, so it passes the reply on uncompressed.
                async for chunk in response.aiter_bytes():
                    if not chunk:
                        continue  # an empty chunk would end the chunked body
                    if events is not None:
                        events.feed(chunk)
                    elif whole is not None:
                        whole += chunk
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
            except httpx2.HTTPError as exc:
                # The reply has begun: no error reply can follow it. The cut stream is the CLI's to report.
                log.warning("Claude Code gate: the API's reply broke off: %s", exc)
                return
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            if whole is not None and self.meter is not None:
                _count_json(bytes(whole), self.meter)
        finally:
            await response.aclose()


def _is_messages(target: str) -> bool:
    """A Messages API request (what is paid for), not a token count or anything else."""
    return target.split("?", 1)[0].rstrip("/") == "/v1/messages"


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, list[tuple[str, str]]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return method, target, headers


async def _read_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]]) -> bytes:
    values = {k.lower(): v for k, v in headers}
    if values.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return bytes(body)
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    length = int(values.get("content-length", "0") or 0)
    return await reader.readexactly(length) if length else b""


async def _answer(writer: asyncio.StreamWriter, status: int, body: dict[str, object]) -> None:
    data = json.dumps(body).encode()
    head = f"HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
    writer.write(head.encode() + b"connection: close\r\n\r\n" + data)
    await writer.drain()


async def _answer_error(writer: asyncio.StreamWriter, message: str) -> None:
    """The gate's own refusal: an invalid request, which the CLI does not retry."""
    await _answer(writer, 400, _error("invalid_request_error", message))


def _error(kind: str, message: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class _SseUsage:
    """Reads `message_start` / `message_delta` usage out of a server-sent event stream as it passes."""

    def __init__(self, meter: RunMeter | None) -> None:
        self.meter = meter
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and self.meter is not None:
                with contextlib.suppress(ValueError):
                    count_event(json.loads(line[5:]), self.meter)


def count_event(event: object, meter: RunMeter) -> None:
    """Add one streamed event's tokens to `meter`: a request's input at its start, output as it grows."""
    if not isinstance(event, dict):
        return
    kind = event.get("type")
    if kind == "message_start":
        meter.add(input_tokens=_input_tokens(event.get("message", {}).get("usage") or {}), requests=1)
    elif kind == "message_delta":
        meter.add(output_tokens=(event.get("usage") or {}).get("output_tokens") or 0)


def _input_tokens(usage: dict[str, int]) -> int:
    """Input as pydantic-ai's Anthropic model counts it: fresh, cache reads and cache writes."""
    return sum(usage.get(k) or 0 for k in _INPUT_KEYS)


def _count_json(body: bytes, meter: RunMeter) -> None:
    with contextlib.suppress(ValueError):
        reply = json.loads(body)
        usage = reply.get("usage") if isinstance(reply, dict) else None
        if isinstance(usage, dict):
            output = usage.get("output_tokens") or 0
            meter.add(input_tokens=_input_tokens(usage), output_tokens=output, requests=1)


@contextlib.asynccontextmanager
async def opened(upstream: str, meter: RunMeter | None) -> AsyncIterator[Gate]:
    """A started gate, closed on the way out."""
    gate = Gate(upstream, meter)
    await gate.start()
    try:
        yield gate
    finally:
        await gate.close()
