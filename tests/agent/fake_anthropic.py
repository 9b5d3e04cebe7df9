"""A tiny Anthropic Messages API on 127.0.0.1 that answers from a scripted queue.

It lets the tests drive cairn's real Anthropic path — `AnthropicModel`, the SDK, the retrying
transport, pydantic-ai's tool loop — without a network: each `POST /v1/messages` pops the next
scripted reply (a tool call, the `final_result` output, or an HTTP error) and records the request
body so a test can inspect what the model would have been sent.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from pydantic import BaseModel


@dataclass
class Reply:
    """One scripted HTTP reply."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def _message(content: list[dict[str, Any]], stop_reason: str, model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


class FakeAnthropic:
    """Serve scripted replies; use as a context manager, then point `ANTHROPIC_BASE_URL` at `base_url`."""

    def __init__(self, model: str = "claude-haiku-4-5") -> None:
        self.model = model
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._counter = 0

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # Scripting

    def tool_use(self, name: str, args: dict[str, Any]) -> FakeAnthropic:
        """Queue a reply that calls the tool `name` with `args`."""
        self._counter += 1
        block = {"type": "tool_use", "id": f"toolu_{self._counter:04d}", "name": name, "input": args}
        self.replies.append(Reply(200, _message([block], "tool_use", self.model)))
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
            if not self.replies:
                return Reply(
                    500, {"type": "error", "error": {"type": "api_error", "message": "script exhausted"}}
                )
            return self.replies.popleft()

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
                    reply = fake._next(body)
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests inspect `requests` instead of the server log."""

        return Handler
