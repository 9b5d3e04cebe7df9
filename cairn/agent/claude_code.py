"""The `claude-code` model: cairn's indexing agent, with Claude reached through the user's Claude Code.

Most people who would run cairn have a Claude Code login and no API key. This model lets the same
pydantic-ai agent (same prompt, tools, structured result and executor) index through that login:
each agent run holds one Claude Code session (`ClaudeSDKClient`, which runs the CLI), and each
pydantic-ai request becomes one step of that session (`cairn.agent.claude_code_session`).

- The tools stay pydantic-ai's. The CLI sees them through an in-process MCP server whose handlers
  only wait for pydantic-ai's result (`cairn.agent.claude_code_tools`), so retries, usage limits and
  output validation are exactly those of the API models.
- The CLI runs in a configuration directory of cairn's own (`CLAUDE_CONFIG_DIR`, under `CAIRN_HOME`),
  never writing to the user's `~/.claude.json` or `~/.claude`, with the user's login lent to it in the
  environment (`cairn.agent.claude_code_login`).
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
- What a run may spend is enforced on the CLI's HTTP traffic: its `ANTHROPIC_BASE_URL` is a loopback
  gate (`cairn.agent.claude_code_gate`) that counts every request into the run's meter and answers one
  over the run's caps itself, because the CLI also sends requests of its own that pydantic-ai never sees.
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

import contextlib
import logging
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ClaudeSDKError,
    CLIConnectionError,
    CLINotFoundError,
    McpSdkServerConfig,
    ProcessError,
)
from claude_agent_sdk.types import EffortLevel
from pydantic_ai.exceptions import AgentRunError, ModelAPIError
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
)
from pydantic_ai.models import check_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cairn.agent import claude_code_errors as errors
from cairn.agent import spend
from cairn.agent.claude_code_gate import DEFAULT_UPSTREAM, Gate
from cairn.agent.claude_code_login import LoginExpired, login_env
from cairn.agent.claude_code_session import STDERR_LINES, Session, prompt_text
from cairn.agent.claude_code_tools import SERVER_NAME, TOOL_PREFIX, ParkedCalls, tool_server

log = logging.getLogger(__name__)

# The CLI's own bound on agentic turns; pydantic-ai's request limit is the one that binds.
MAX_TURNS = 100
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
    # Where the user's own Claude Code keeps its login (`cairn.agent.claude_code_login`), lent to each
    # session; the CLI itself runs in cairn's configuration directory (`env["CLAUDE_CONFIG_DIR"]`).
    login_dir: Path | None = None


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
        self._sessions: dict[str, Session] = {}

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
        # As every model that spends: tests forbid real model requests unless they opt in.
        check_allow_model_requests()
        key = messages[0].run_id or str(id(messages[0]))
        session = self._sessions.get(key)
        run_keys = _RUN_KEYS.get()
        try:
            if (meter := spend.current()) is not None:
                meter.before_request()  # the run's next API request, whether it opens a session or not
            if session is None:
                if run_keys is None:  # no run scope: the previous run is over, as a new one began
                    await self.aclose()
                else:
                    run_keys.add(key)
                session = self._sessions[key] = await self._start(info)
                await session.client.query(prompt_text(messages[-1]))
            else:
                await session.deliver(messages[-1])
            return await session.read_response()
        except BaseException as exc:
            if session is not None:
                self._sessions.pop(key, None)
                await session.close()
            if isinstance(exc, ClaudeSDKError):
                raise self._failure(exc, session) from exc
            if isinstance(exc, Exception) and not isinstance(exc, AgentRunError):
                # The SDK raises plain exceptions too (a control request's timeout, a broken stream):
                # they are Claude Code's failure, not the batch's, so the indexer must pause, not
                # blame the batch. The traceback stays in the log, in case it is a bug of ours.
                log.warning("Claude Code session failed", exc_info=True)
                raise self._failure(exc, session) from exc
            raise

    async def _start(self, info: AgentInfo) -> Session:
        cli = self.config.find_cli()
        if cli is None:
            missing = self.config.cli_setting
            raise errors.cli_not_found(
                self.name,
                f"{missing} is not a file (CAIRN_CLAUDE_CODE_CLI)"
                if missing
                else "claude-agent-sdk bundles none and there is no `claude` on PATH",
            )
        try:
            login = login_env(self.config.env, self.config.login_dir) if self.config.login_dir else {}
        except LoginExpired as exc:
            raise errors.login_expired(self.name, str(exc)) from exc
        if own_config := self.config.env.get("CLAUDE_CONFIG_DIR"):
            Path(own_config).mkdir(mode=0o700, parents=True, exist_ok=True)
        tools = [*info.function_tools, *info.output_tools]
        calls = ParkedCalls()
        # Never the user's project: nothing there is the indexing run's business.
        scratch = tempfile.TemporaryDirectory(prefix="cairn-claude-code-", ignore_cleanup_errors=True)
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        # Every API request of the CLI passes the run's meter (`cairn.agent.claude_code_gate`).
        gate = Gate(self.config.env.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM, spend.current())
        try:
            await gate.start()
        except BaseException:
            scratch.cleanup()
            await gate.close()
            raise
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
            env={
                **self.config.env,
                **login,
                "XDG_CACHE_HOME": str(Path(scratch.name) / "cache"),
                "ANTHROPIC_BASE_URL": gate.url,
            },
            cwd=scratch.name,
            max_turns=MAX_TURNS,
            stderr=stderr.append,
        )
        session = Session(self.name, ClaudeSDKClient(options), calls, scratch, stderr=stderr, gate=gate)
        try:
            await session.client.connect()
        except BaseException as exc:
            await session.close()
            if isinstance(exc, Exception) and not isinstance(exc, CLINotFoundError):
                detail = session.last_stderr() or " ".join(str(exc).split())
                raise errors.not_started(self.name, cli, detail) from exc
            raise
        session.stream = session.client.receive_messages().__aiter__()
        return session

    def _failure(self, exc: Exception, session: Session | None) -> ModelAPIError:
        if isinstance(exc, CLINotFoundError):
            return errors.cli_not_found(self.name, str(exc).splitlines()[0])
        said = session.last_stderr() if session is not None else ""
        if isinstance(exc, ProcessError):
            return errors.exited(self.name, exc.exit_code, said)
        if isinstance(exc, CLIConnectionError):
            return errors.exited(self.name, None, said or str(exc))
        said = " ".join(str(exc).split())[:300]
        return errors.ClaudeCodeError(self.name, f"Claude Code failed ({type(exc).__name__}: {said})")
