"""A tiny Anthropic Messages API on 127.0.0.1 that answers from a scripted queue.

It lets the tests drive cairn's real Anthropic path — `AnthropicModel`, the SDK, the retrying
transport, pydantic-ai's tool loop — without a network: each `POST /v1/messages` pops the next
scripted reply (a tool call, the `final_result` output, or an HTTP error) and records the request
body so a test can inspect what the model would have been sent.

The Claude Code CLI (`cairn.agent.claude_code`) is a client too. It always asks for a stream, so a
request with `"stream": true` is answered as server-sent events; it merges replies that share a
message id, so every reply gets its own; and it names cairn's tools `mcp__cairn__NAME`, which
`tool_prefix` adds to scripted calls (`builtin=True` scripts one of the CLI's own tools instead).
`responder` answers a request the queue has nothing for (e.g. computed from the batch it carries), and
`before_reply` runs in the server's thread just before a reply is sent (e.g. to kill the client).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from pydantic import BaseModel

from cairn.agent.schema import IndexBatch, SessionUpdate


@dataclass
class Reply:
    """One scripted HTTP reply."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    # Sent as it is instead of `body` (e.g. a malformed reply), with this content type.
    raw: bytes | None = None
    content_type: str = "application/json"


_MESSAGE_IDS = itertools.count(1)


def message(
    content: list[dict[str, Any]], stop_reason: str, model: str, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """A Messages API reply holding `content`."""
    return {
        "id": f"msg_fake_{next(_MESSAGE_IDS)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 100, "output_tokens": 20},
    }


class FakeAnthropic:
    """Serve scripted replies; use as a context manager, then point `ANTHROPIC_BASE_URL` at `base_url`."""

    def __init__(self, model: str = "claude-haiku-4-5", tool_prefix: str = "") -> None:
        self.model = model
        self.tool_prefix = tool_prefix
        self.replies: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.before_reply: Callable[[dict[str, Any]], None] | None = None
        self.usage: dict[str, int] | None = None  # every scripted reply's, e.g. with cache tokens
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each Messages request's headers, names lower-cased
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._counter = 0

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # Scripting

    def tool_use(self, name: str, args: dict[str, Any], *, builtin: bool = False) -> FakeAnthropic:
        """Queue a reply that calls the tool `name` with `args` (`builtin`: a tool of the client's own)."""
        self.replies.append(Reply(200, self.tool_message(name, args, builtin=builtin)))
        return self

    def tool_message(self, name: str, args: dict[str, Any], *, builtin: bool = False) -> dict[str, Any]:
        """A reply calling the tool `name` with `args`, with the next tool-use id."""
        with self._lock:
            self._counter += 1
            tool_id = f"toolu_{self._counter:04d}"
        block = {
            "type": "tool_use",
            "id": tool_id,
            "name": name if builtin else self.tool_prefix + name,
            "input": args,
        }
        return message([block], "tool_use", self.model, self.usage)

    def text(self, text: str) -> FakeAnthropic:
        """Queue a plain text answer (no tool call)."""
        self.replies.append(Reply(200, message([{"type": "text", "text": text}], "end_turn", self.model)))
        return self

    def final(self, result: BaseModel | dict[str, Any]) -> FakeAnthropic:
        """Queue the structured answer: a call of the `final_result` output tool."""
        args = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        return self.tool_use("final_result", args)

    def error(self, status: int, error_type: str, message: str = "", **headers: str) -> FakeAnthropic:
        """Queue an API error, e.g. `error(529, "overloaded_error", retry_after="0")`."""
        body = {"type": "error", "error": {"type": error_type, "message": message or error_type}}
        self.replies.append(Reply(status, body, {k.replace("_", "-"): v for k, v in headers.items()}))
        return self

    # Inspection

    def tool_names(self, request: dict[str, Any]) -> set[str]:
        return {tool["name"] for tool in request.get("tools", [])}

    def system_text(self, request: dict[str, Any]) -> str:
        system = request.get("system", "")
        if isinstance(system, str):
            return system
        return "\n".join(block.get("text", "") for block in system)

    def blocks(self, request: dict[str, Any], kind: str) -> Iterator[dict[str, Any]]:
        """Every content block of `kind` in the request's messages."""
        for message in request["messages"]:
            content = message["content"]
            if isinstance(content, str):
                if kind == "text":
                    yield {"type": "text", "text": content}
                continue
            for block in content:
                if block.get("type") == kind:
                    yield block

    # Lifecycle

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "script exhausted"}})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.split("?")[0] != "/v1/messages":
                    reply = Reply(
                        404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
                    )
                else:
                    with fake._lock:
                        fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    reply = fake._next(body)
                    if fake.before_reply is not None:
                        fake.before_reply(body)
                data, kind = json.dumps(reply.body).encode(), reply.content_type
                if reply.raw is not None:
                    data = reply.raw
                elif body.get("stream") and reply.status == 200:
                    data, kind = sse(reply.body), "text/event-stream"
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client is gone (a test killed it): nobody to answer
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests inspect `requests` instead of the server log."""

        return Handler


def sse(reply: dict[str, Any]) -> bytes:
    """`reply` as the Messages API streams it: start, each block's start/delta/stop, delta, stop."""
    usage = reply["usage"]
    start = dict(reply, content=[], stop_reason=None, usage={**usage, "output_tokens": 0})
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(reply["content"]):
        if block["type"] == "text":
            first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            first = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": first},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events).encode()


def idea_per_update(batch: IndexBatch, content: Callable[[SessionUpdate], str]) -> list[dict[str, Any]]:
    """One conclusion per session update of `batch`, at its first message: what the scripted models of
    the daemon, budget and Claude Code tests answer, each saying `content(update)`."""
    return [
        {
            "session": update.session,
            "source_file": update.file_path,
            "source_line": update.messages[0].line,
            "content": content(update),
            "intent": "conclusion",
            "confidence": 0.9,
            "importance": 0.5,
        }
        for update in batch.updates
        if update.messages
    ]
