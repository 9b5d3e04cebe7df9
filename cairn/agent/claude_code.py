"""The `claude-code` model: cairn's indexing agent, with Claude reached through the user's Claude Code.

Most people who would run cairn have a Claude Code login and no API key. This model lets the same
pydantic-ai agent (same prompt, tools, structured result and executor) index through that login:
each agent run holds one Claude Code session (`ClaudeSDKClient`, which runs the CLI), and each
pydantic-ai request becomes one step of that session.

- The tools stay pydantic-ai's. The CLI sees them through an in-process MCP server whose handlers
  only wait for pydantic-ai's result (`cairn.agent.claude_code_tools`), so retries, usage limits and
  output validation are exactly those of the API models.
- The CLI gets nothing else: no built-in tool (`tools=[]`, so Bash, Read, Edit, Write and web tools
  do not exist and a call of one is answered "No such tool"), no user or project settings, hooks,
  plugins or MCP servers (`setting_sources=[]`, `strict_mcp_config`), no thinking, cairn's prompt
  instead of Claude Code's, a scratch working directory instead of any project (also holding the
  CLI's cache), and no session transcript written (which cairn's capture would otherwise pick up as a
  session of the user's).
- Token usage comes from the API's own stream events (`message_start` / `message_delta`), which the
  CLI forwards with `include_partial_messages`; it fills pydantic-ai's `RequestUsage` (input counting
  cache reads and writes, as pydantic-ai's Anthropic model counts it), so `index_runs` and the daily
  budget see what the plan was charged.
- Every failure is one line (`cairn.agent.claude_code_errors`) and ends the session, and closing a
  session interrupts the CLI's turn before stopping it: a parked call released later would otherwise
  let it send one more (paid) request.

A session lives exactly as long as its agent run: pydantic-ai holds a model's `_run_scope` around
each run, and leaving it closes the run's session, however the run ended (an answer, a failed
validation, a usage limit, a cancellation). So no CLI idles between the daemon's passes. A run without
that scope (pydantic-ai's durable runs, which cairn does not use) closes the previous run's session
when the next one starts; `aclose` closes whatever is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ClaudeSDKError,
    CLIConnectionError,
    CLINotFoundError,
    McpSdkServerConfig,
    ProcessError,
    RateLimitEvent,
    ResultMessage,
    StreamEvent,
    TextBlock,
    ToolUseBlock,
)
from claude_agent_sdk.types import EffortLevel, Message
from pydantic_ai.exceptions import ModelAPIError
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
from pydantic_ai.models import check_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from cairn.agent import claude_code_errors as errors
from cairn.agent.claude_code_tools import SERVER_NAME, TOOL_PREFIX, ParkedCalls, tool_server

# Seconds an interrupt may take before the CLI is stopped anyway.
INTERRUPT_TIMEOUT = 5.0
# The CLI's own bound on agentic turns; pydantic-ai's request limit is the one that binds.
MAX_TURNS = 100
# The CLI's last stderr lines kept, to say why it exited.
STDERR_LINES = 20
# The run keys of the agent run in progress (see `ClaudeCodeModel.run_scope`).
_RUN_KEYS: ContextVar[set[str] | None] = ContextVar("cairn_claude_code_run_keys", default=None)


@dataclass(frozen=True)
class ClaudeCodeConfig:
    """How every session of one `claude-code` model choice runs its CLI.

    `find_cli` is asked at every session start, not once: a daemon started before Claude Code was
    installed (or while it was missing) finds it without a restart, and until then each run fails
    with one line and the daemon pauses, rather than the daemon refusing to start and capture too.
    `cli_setting` is the configured path, if any, to name in that line.
    """

    model: str
    find_cli: Callable[[], Path | None]
    env: dict[str, str]
    effort: EffortLevel | None = None
    cli_setting: Path | None = None


@dataclass
class _Session:
    """One agent run's Claude Code session and what it is waiting for."""

    client: ClaudeSDKClient
    calls: ParkedCalls
    scratch: tempfile.TemporaryDirectory[str]
    stream: AsyncIterator[Message] | None = None
    resets_at: int | None = None  # a rate limit's reset, as the CLI reported it
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_LINES))

    async def close(self) -> None:
        """Stop the turn (so no further request is sent), then the CLI; never raises."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.interrupt(), INTERRUPT_TIMEOUT)
        # Disconnecting cancels the parked handlers the MCP way; cancelling their futures first would
        # tear the server down from inside and log it as a failure.
        with contextlib.suppress(Exception):
            await self.client.disconnect()
        self.calls.cancel_all()
        self.scratch.cleanup()


class _RunScopedModel(FunctionModel):
    """A `FunctionModel` that closes a run's Claude Code session when pydantic-ai's run ends."""

    def __init__(self, owner: ClaudeCodeModel) -> None:
        super().__init__(owner._request, model_name=owner.name)
        self._owner = owner

    def _run_scope(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self._owner.run_scope()


class ClaudeCodeModel:
    """A pydantic-ai model (`.model`) whose requests are steps of Claude Code sessions, one per run."""

    def __init__(self, config: ClaudeCodeConfig) -> None:
        self.config = config
        self.name = f"claude-code:{config.model}"
        self.model: FunctionModel = _RunScopedModel(self)
        self._sessions: dict[str, _Session] = {}

    async def aclose(self) -> None:
        """Close every session still open (and so stop its CLI)."""
        while self._sessions:
            _, session = self._sessions.popitem()
            await session.close()

    @contextlib.asynccontextmanager
    async def run_scope(self) -> AsyncIterator[None]:
        """Around one agent run: the sessions its requests open are closed when it ends."""
        keys: set[str] = set()
        token = _RUN_KEYS.set(keys)
        try:
            yield
        finally:
            with contextlib.suppress(ValueError):  # left in another context than it was entered in
                _RUN_KEYS.reset(token)
            for key in keys:
                if (session := self._sessions.pop(key, None)) is not None:
                    await session.close()

    async def _request(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        key = messages[0].run_id or str(id(messages[0]))
        session = self._sessions.get(key)
        run_keys = _RUN_KEYS.get()
        try:
            if session is None:
                if run_keys is None:  # no run scope: the previous run is over, as a new one began
                    await self.aclose()
                else:
                    run_keys.add(key)
                session = self._sessions[key] = await self._start(info)
                await session.client.query(_prompt(messages[-1]))
            else:
                await _deliver(session, messages[-1])
            return await self._read_response(session)
        except BaseException as exc:
            if session is not None:
                self._sessions.pop(key, None)
                await session.close()
            if isinstance(exc, ClaudeSDKError):
                raise self._failure(exc, session) from exc
            raise

    async def _start(self, info: AgentInfo) -> _Session:
        # As every model that spends: tests forbid real model requests unless they opt in.
        check_allow_model_requests()
        cli = self.config.find_cli()
        if cli is None:
            missing = self.config.cli_setting
            raise errors.cli_not_found(
                self.name,
                f"{missing} is not a file (CAIRN_CLAUDE_CODE_CLI)"
                if missing
                else "claude-agent-sdk bundles none and there is no `claude` on PATH",
            )
        tools = [*info.function_tools, *info.output_tools]
        calls = ParkedCalls()
        # Never the user's project: nothing there is the indexing run's business.
        scratch = tempfile.TemporaryDirectory(prefix="cairn-claude-code-")
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        options = ClaudeAgentOptions(
            system_prompt=info.instructions or "",
            tools=[],
            allowed_tools=[TOOL_PREFIX + tool.name for tool in tools],
            mcp_servers={
                SERVER_NAME: McpSdkServerConfig(
                    type="sdk", name=SERVER_NAME, instance=tool_server(tools, calls)
                )
            },
            strict_mcp_config=True,
            setting_sources=[],
            model=self.config.model,
            effort=self.config.effort,
            thinking={"type": "disabled"},
            include_partial_messages=True,
            extra_args={"no-session-persistence": None},
            cli_path=cli,
            # Its per-session MCP logs go to the cache (on Linux), which would gather a directory per
            # batch in the user's ~/.cache: the scratch directory holds them, and goes with the session.
            env={**self.config.env, "XDG_CACHE_HOME": str(Path(scratch.name) / "cache")},
            cwd=scratch.name,
            max_turns=MAX_TURNS,
            stderr=stderr.append,
        )
        session = _Session(ClaudeSDKClient(options), calls, scratch, stderr=stderr)
        try:
            await session.client.connect()
        except BaseException as exc:
            await session.close()
            if isinstance(exc, ClaudeSDKError) and not isinstance(exc, CLINotFoundError):
                detail = _last(session.stderr) or " ".join(str(exc).split())
                raise errors.not_started(self.name, cli, detail) from exc
            raise
        session.stream = session.client.receive_messages().__aiter__()
        return session

    async def _read_response(self, session: _Session) -> ModelResponse:
        """The model's next answer, as pydantic-ai parts, with the tokens it cost."""
        assert session.stream is not None
        parts: list[ModelResponsePart] = []
        usage = RequestUsage()
        own_tools = refused_tools = False
        api_error: str | None = None
        while True:
            try:
                message = await session.stream.__anext__()
            except StopAsyncIteration:
                raise errors.exited(self.name, None, _last(session.stderr)) from None
            if isinstance(message, StreamEvent):
                if message.parent_tool_use_id is None and _count(message.event, usage):
                    if own_tools or (parts and not refused_tools):
                        break
                    # Only the CLI's own tools, which it refused itself: it goes on by itself.
                    refused_tools = False
            elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
                if message.error is not None:
                    api_error = message.error
                    continue
                for block in message.content:
                    if isinstance(block, ToolUseBlock) and block.name.startswith(TOOL_PREFIX):
                        name = block.name.removeprefix(TOOL_PREFIX)
                        session.calls.announce(block.id, name, block.input)
                        parts.append(ToolCallPart(name, block.input, tool_call_id=block.id))
                        own_tools = True
                    elif isinstance(block, ToolUseBlock):
                        refused_tools = True
                    elif isinstance(block, TextBlock):
                        parts.append(TextPart(block.text))
            elif isinstance(message, RateLimitEvent):
                if message.rate_limit_info.resets_at is not None:
                    session.resets_at = message.rate_limit_info.resets_at
            elif isinstance(message, ResultMessage) and message.is_error:
                raise self._result_failure(message, api_error, session)
        return ModelResponse(parts=parts, usage=usage, model_name=self.name)

    def _result_failure(
        self, result: ResultMessage, api_error: str | None, session: _Session
    ) -> ModelAPIError:
        said = " ".join([result.result or "", *(result.errors or [])]).strip()
        if api_error == "authentication_failed" or result.api_error_status == 401:
            return errors.not_logged_in(self.name)
        if api_error == "rate_limit" or result.api_error_status == 429:
            return errors.rate_limited(self.name, session.resets_at)
        if "malformed" in said.lower():
            return errors.malformed(self.name)
        return errors.api_failed(self.name, result.api_error_status, said or result.subtype)

    def _failure(self, exc: ClaudeSDKError, session: _Session | None) -> ModelAPIError:
        if isinstance(exc, CLINotFoundError):
            return errors.cli_not_found(self.name, str(exc).splitlines()[0])
        said = _last(session.stderr) if session is not None else ""
        if isinstance(exc, ProcessError):
            return errors.exited(self.name, exc.exit_code, said)
        if isinstance(exc, CLIConnectionError):
            return errors.exited(self.name, None, said or str(exc))
        said = " ".join(str(exc).split())[:300]
        return errors.ClaudeCodeError(self.name, f"Claude Code failed ({type(exc).__name__}: {said})")


def _last(lines: deque[str]) -> str:
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


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


def _prompt(request: ModelMessage) -> str:
    """The user's text of a run's first request (the batch)."""
    assert isinstance(request, ModelRequest)
    return "\n\n".join(
        part.content
        for part in request.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )


async def _deliver(session: _Session, request: ModelMessage) -> None:
    """Hand pydantic-ai's tool results to the parked calls; anything else is a new user turn."""
    assert isinstance(request, ModelRequest)
    turn: list[str] = []
    for part in request.parts:
        if isinstance(part, ToolReturnPart) and session.calls.waiting(part.tool_call_id):
            # A failed or retried call goes back as an MCP error, which the CLI sends as `is_error`.
            text = part.model_response_str(wrap_if_error=False)
            session.calls.release(part.tool_call_id, text, part.outcome in ERROR_OUTCOMES)
        elif isinstance(part, RetryPromptPart) and session.calls.waiting(part.tool_call_id):
            session.calls.release(part.tool_call_id, part.model_response(), True)
        elif isinstance(part, RetryPromptPart):  # e.g. text where the output tool was due
            turn.append(part.model_response())
        elif isinstance(part, UserPromptPart) and isinstance(part.content, str):
            turn.append(part.content)
    if turn:
        await session.client.query("\n\n".join(turn))
