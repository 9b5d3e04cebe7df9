"""One Claude Code session of the `claude-code` model: pydantic-ai's requests in, its responses out.

Each pydantic-ai request is one step of the session. The first sends the batch as the user's turn;
later ones release the parked tool calls with pydantic-ai's results (`deliver`), which lets the CLI
send its next API request. `read_response` then reads the CLI's messages up to the end of the next
API reply that is for pydantic-ai: one that calls cairn's tools, or answers in text. A reply that only
called the CLI's own tools (which do not exist for this session) is not: the CLI refuses those calls
itself and asks the model again, so reading goes on. The tokens of every reply read are counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeSDKClient,
    RateLimitEvent,
    ResultMessage,
    StreamEvent,
    TextBlock,
    ToolUseBlock,
)
from claude_agent_sdk.types import Message
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.messages import (
    ERROR_OUTCOMES,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from cairn.agent import claude_code_errors as errors
from cairn.agent.claude_code_gate import Gate
from cairn.agent.claude_code_tools import TOOL_PREFIX, ParkedCalls
from cairn.agent.spend import SpendLimitReached

# Seconds an interrupt may take before the CLI is stopped anyway.
INTERRUPT_TIMEOUT = 5.0
# The CLI's last stderr lines kept, to say why it exited.
STDERR_LINES = 20
# Replies in a row that call only tools the session does not have before the run is given up: the CLI
# refuses each and asks again by itself, so a model stuck on one would spend to the run's cap.
MAX_REFUSED_REPLIES = 3


@dataclass
class Session:
    """One agent run's Claude Code session and what it is waiting for."""

    model_name: str
    client: ClaudeSDKClient
    calls: ParkedCalls
    scratch: tempfile.TemporaryDirectory[str]
    stream: AsyncIterator[Message] | None = None
    resets_at: int | None = None  # a rate limit's reset, as the CLI reported it
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_LINES))
    gate: Gate | None = None  # what the CLI's API requests pass through (`cairn.agent.claude_code_gate`)

    async def close(self) -> None:
        """Stop the turn (so no further request is sent), then the CLI, then its gate (which counts a
        reply still streaming to the end). Never raises but a cancellation, and even a cancellation
        during the interrupt still stops the CLI."""
        try:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.interrupt(), INTERRUPT_TIMEOUT)
        finally:
            # Disconnecting cancels the parked handlers the MCP way; cancelling their futures first
            # would tear the server down from inside and log it as a failure.
            with contextlib.suppress(Exception):
                await self.client.disconnect()
            self.calls.cancel_all()
            if self.gate is not None:
                await self.gate.close()
            self.scratch.cleanup()

    def last_stderr(self) -> str:
        """The CLI's last non-empty line on stderr, if any."""
        return next((line.strip() for line in reversed(self.stderr) if line.strip()), "")

    async def deliver(self, request: ModelMessage) -> None:
        """Hand pydantic-ai's tool results to the parked calls; anything else is a new user turn."""
        assert isinstance(request, ModelRequest)
        turn: list[str] = []
        for part in request.parts:
            if isinstance(part, ToolReturnPart) and self.calls.waiting(part.tool_call_id):
                # A failed or retried call goes back as an MCP error, which the CLI sends as `is_error`.
                text = part.model_response_str(wrap_if_error=False)
                self.calls.release(part.tool_call_id, text, part.outcome in ERROR_OUTCOMES)
            elif isinstance(part, RetryPromptPart) and self.calls.waiting(part.tool_call_id):
                self.calls.release(part.tool_call_id, part.model_response(), True)
            elif isinstance(part, RetryPromptPart):  # e.g. text where the output tool was due
                turn.append(part.model_response())
            elif isinstance(part, UserPromptPart) and isinstance(part.content, str):
                turn.append(part.content)
        if turn:
            await self.client.query("\n\n".join(turn))

    async def read_response(self) -> ModelResponse:
        """The model's next answer, as pydantic-ai parts, with the tokens it cost."""
        assert self.stream is not None
        parts: list[ModelResponsePart] = []
        usage = RequestUsage()
        own_tools = refused_tools = started = False
        refused: set[str] = set()
        refused_replies = 0
        api_error: str | None = None
        while True:
            try:
                message = await self.stream.__anext__()
            except StopAsyncIteration:
                raise errors.exited(self.model_name, None, self.last_stderr()) from None
            if isinstance(message, StreamEvent):
                started = started or message.event.get("type") == "message_start"
                if message.parent_tool_use_id is None and _count(message.event, usage):
                    if own_tools or (parts and not refused_tools):
                        break
                    # Only the CLI's own tools, which it refused itself: it goes on by itself, and
                    # each such reply is one more paid request that pydantic-ai never sees.
                    if refused_tools:
                        refused_replies += 1
                        if refused_replies >= MAX_REFUSED_REPLIES:
                            raise _stuck(refused, refused_replies)
                    refused_tools = False
            elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
                if message.error is not None:
                    api_error = message.error
                    continue
                for block in message.content:
                    if isinstance(block, ToolUseBlock) and block.name.startswith(TOOL_PREFIX):
                        name = block.name.removeprefix(TOOL_PREFIX)
                        self.calls.announce(block.id, name, block.input)
                        parts.append(ToolCallPart(name, block.input, tool_call_id=block.id))
                        own_tools = True
                    elif isinstance(block, ToolUseBlock):
                        refused_tools = True
                        refused.add(block.name)
                    elif isinstance(block, TextBlock):
                        parts.append(TextPart(block.text))
            elif isinstance(message, RateLimitEvent):
                # Only a refusal's reset matters: a warning about another window (the week's) must
                # not set when a later 429 of this window ends.
                info = message.rate_limit_info
                if info.status == "rejected" and info.resets_at is not None:
                    self.resets_at = info.resets_at
            elif isinstance(message, ResultMessage) and message.is_error:
                raise self._result_failure(message, api_error)
            elif isinstance(message, ResultMessage) and started:
                # The turn ended without a reply for pydantic-ai (an empty answer): hand over what
                # there is, so its retry goes on, rather than wait for a message that never comes.
                # A result before this reply started ends the previous turn (a text answer).
                break
        return ModelResponse(parts=parts, usage=usage, model_name=self.model_name)

    def _result_failure(
        self, result: ResultMessage, api_error: str | None
    ) -> ModelAPIError | SpendLimitReached:
        """The failure the CLI reported at the end of its turn, as one line."""
        said = " ".join([result.result or "", *(result.errors or [])]).strip()
        if self.gate is not None and self.gate.refused is not None:
            return self.gate.refused  # the gate answered the CLI's request itself: the run's caps
        if result.subtype == "error_max_turns":
            # The run's own doing (a model that kept going), not Claude Code's: the batch's failure.
            return SpendLimitReached(f"{self.model_name}: Claude Code ended the run at its turn limit")
        if api_error == "authentication_failed" or result.api_error_status == 401:
            return errors.not_logged_in(self.model_name)
        if api_error == "rate_limit" or result.api_error_status == 429:
            return errors.rate_limited(self.model_name, self.resets_at)
        if "malformed" in said.lower():
            return errors.malformed(self.model_name)
        if "prompt is too long" in said.lower() or result.api_error_status == 413:
            return errors.too_long(self.model_name, said)
        if result.api_error_status is not None and 400 <= result.api_error_status < 500:
            return errors.rejected(self.model_name, result.api_error_status, said or result.subtype)
        return errors.api_failed(self.model_name, result.api_error_status, said or result.subtype)


def _stuck(refused: set[str], times: int) -> UnexpectedModelBehavior:
    """The failure of a run whose model kept calling tools the session does not have."""
    names = ", ".join(sorted(refused))
    return UnexpectedModelBehavior(
        f"the model called only tools it does not have ({names}) {times} times in a row"
    )


def _count(event: dict[str, Any], usage: RequestUsage) -> bool:
    """Add a stream event's tokens to `usage`; True when it ends a message."""
    kind = event.get("type")
    if kind == "message_start":
        counts = event.get("message", {}).get("usage") or {}
        read = counts.get("cache_read_input_tokens") or 0
        written = counts.get("cache_creation_input_tokens") or 0
        usage.input_tokens += (counts.get("input_tokens") or 0) + read + written
        usage.cache_read_tokens += read
        usage.cache_write_tokens += written
    elif kind == "message_delta":
        usage.output_tokens += (event.get("usage") or {}).get("output_tokens") or 0
    return kind == "message_stop"


def prompt_text(request: ModelMessage) -> str:
    """The user's text of a run's first request (the batch)."""
    assert isinstance(request, ModelRequest)
    return "\n\n".join(
        part.content
        for part in request.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )
