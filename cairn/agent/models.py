"""Which language model the indexer runs on, wired the way a user's run needs it.

`resolve_model` turns a model string (`CAIRN_MODEL`, a `--model` override, or `default_model` from
`cairn.agent.model_names`) into a pydantic-ai `Model` plus the request settings every run uses:

- `offline` is the deterministic, network-free indexer (`cairn.agent.offline`).
- `claude-code` / `claude-code:NAME` runs Claude through the user's Claude Code login
  (`cairn.agent.claude_code`; NAME defaults to `claude_code_model`), if the optional extra is installed.
- `anthropic:NAME` talks to the Messages API (or `ANTHROPIC_BASE_URL` / `model_base_url`, e.g. a proxy).
- `openai-chat:NAME`, `openai:NAME` and `ollama:NAME` talk to OpenAI or an OpenAI-compatible local
  server at `model_base_url` (Ollama, llama.cpp, vLLM). With a base URL `openai:` means Chat
  Completions, because that is the API those servers implement.
- Anything else goes to pydantic-ai's own `infer_model`.

Retrying is done once, in the HTTP transport (tenacity, honouring `Retry-After`), and the SDK's own
retries are switched off, so one request is tried at most `model_retries` times and never
three times that. `max_tokens` is always set: without it pydantic-ai asks for the model maximum
and streams. Claude runs also turn on prompt caching, since each request of a run re-sends the
prompt, the tools and the batch.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx2
from pydantic_ai.exceptions import UserError
from pydantic_ai.models import Model, create_async_httpx2_client, infer_model
from pydantic_ai.retries import AsyncHTTPX2TenacityTransport, RetryConfig, wait_retry_after
from pydantic_ai.settings import ModelSettings
from tenacity import retry_if_exception_type, stop_after_attempt, wait_exponential

from cairn.agent.model_names import claude_code_target, default_model, unknown_model_message
from cairn.config import Settings
from cairn.errors import Failure

OFFLINE = "offline"

# Statuses worth another attempt: rate limited, server errors, Anthropic's "overloaded".
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
# Failures before any answer arrived. A read timeout is not among them: the client already waited
# its full timeout, and repeating that several times would stall the indexer for many minutes.
RETRY_EXCEPTIONS: tuple[type[BaseException], ...] = (
    httpx2.HTTPStatusError,
    httpx2.NetworkError,
    httpx2.RemoteProtocolError,
    httpx2.ConnectTimeout,
    httpx2.PoolTimeout,
)
# The longest a `Retry-After` header may make one wait; without a header, exponential backoff.
MAX_RETRY_WAIT_SECONDS = 60.0


class ModelConfigError(Failure):
    """The configured model cannot be used as configured (missing key, missing server URL)."""


class UnknownModelError(ModelConfigError):
    """The model string names no model cairn can run (`cairn.agent.model_names`)."""


@dataclass
class ModelChoice:
    """A resolved model: the string it came from, the pydantic-ai model and its request settings.

    What the choice opened for its model is its to close (pydantic-ai leaves clients passed in to their
    owner): the HTTP client of an API model, the Claude Code sessions of `claude-code`. `closers` run
    once, in order, on `aclose`; a copy made with `dataclasses.replace` (e.g. around a recording model)
    takes them along.
    """

    name: str
    model: Model
    settings: ModelSettings
    http_client: httpx2.AsyncClient | None = field(default=None, repr=False)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list, repr=False)

    async def aclose(self) -> None:
        """Close what this choice opened: its HTTP client, then anything in `closers`."""
        if self.http_client is not None:
            await self.http_client.aclose()
            self.http_client = None
        while self.closers:
            await self.closers.pop(0)()


def _raise_for_retryable_status(response: httpx2.Response) -> None:
    if response.status_code in RETRY_STATUSES:
        response.raise_for_status()


def retrying_http_client(attempts: int, *, max_wait: float = MAX_RETRY_WAIT_SECONDS) -> httpx2.AsyncClient:
    """An httpx2 client that retries 429/5xx/529 and connection failures, up to `attempts` tries in all.

    After the last attempt the final error propagates (`reraise=True`); pydantic-ai maps a status the
    transport gave up on to `ModelHTTPError` with that status.
    """
    transport = AsyncHTTPX2TenacityTransport(
        RetryConfig(
            retry=retry_if_exception_type(RETRY_EXCEPTIONS),
            wait=wait_retry_after(wait_exponential(multiplier=1, max=max_wait), max_wait=max_wait),
            stop=stop_after_attempt(attempts),
            reraise=True,
        ),
        validate_response=_raise_for_retryable_status,
    )
    return create_async_httpx2_client(transport=transport)


def request_settings(settings: Settings, *, sdk_retries: bool = False) -> ModelSettings:
    """The settings every indexing request carries.

    `max_retries: 0` hands retrying to the transport; the framing announcement is off because the
    system prompt itself says how to treat quoted data.
    """
    result = ModelSettings(max_tokens=settings.model_max_tokens, framing_announcement="never")
    if not sdk_retries:
        result["max_retries"] = 0
    return result


def _missing_key(env: str, name: str) -> ModelConfigError:
    return ModelConfigError(
        f"model {name!r} needs an API key: export {env}, or set CAIRN_MODEL=offline to index without "
        "a model API."
    )


def _anthropic(name: str, model_name: str, settings: Settings) -> ModelChoice:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    api_key = os.environ.get("ANTHROPIC_API_KEY")
    if not api_key:
        raise _missing_key("ANTHROPIC_API_KEY", name)
    client = retrying_http_client(settings.model_retries)
    provider = AnthropicProvider(
        api_key=api_key,
        base_url=settings.model_base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
        http_client=client,
    )
    # Prompt caching: every request of a run re-sends the prompt, the tools and the batch, which
    # the cache then serves at a tenth of the input price.
    model_settings = ModelSettings(**request_settings(settings), cache=True)
    return ModelChoice(name, AnthropicModel(model_name, provider=provider), model_settings, client)


def _openai_compatible(name: str, kind: str, model_name: str, settings: Settings) -> ModelChoice:
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    base_url = settings.model_base_url
    api_key = os.environ.get("OPENAI_API_KEY")
    if base_url is None and not api_key and not os.environ.get("OPENAI_BASE_URL"):
        raise _missing_key("OPENAI_API_KEY", name)
    client = retrying_http_client(settings.model_retries)
    # Local servers accept any key but the OpenAI client insists on one.
    provider = OpenAIProvider(base_url=base_url, api_key=api_key or "not-needed", http_client=client)
    model: Model
    if kind == "openai" and base_url is None:
        model = OpenAIResponsesModel(model_name, provider=provider)
    else:
        model = OpenAIChatModel(model_name, provider=provider)
    return ModelChoice(name, model, request_settings(settings), client)


def _ollama(name: str, model_name: str, settings: Settings) -> ModelChoice:
    from pydantic_ai.models.ollama import OllamaModel
    from pydantic_ai.providers.ollama import OllamaProvider

    base_url = settings.model_base_url or os.environ.get("OLLAMA_BASE_URL")
    if not base_url:
        raise ModelConfigError(
            f"model {name!r} needs the server's URL: set CAIRN_MODEL_BASE_URL (or OLLAMA_BASE_URL), "
            "e.g. http://127.0.0.1:11434/v1, or set CAIRN_MODEL=offline."
        )
    client = retrying_http_client(settings.model_retries)
    provider = OllamaProvider(base_url=base_url, http_client=client)
    return ModelChoice(name, OllamaModel(model_name, provider=provider), request_settings(settings), client)


def _claude_code(model_name: str, settings: Settings) -> ModelChoice:
    """Claude through the user's Claude Code; the SDK is imported only now (it is large and optional).

    Only a missing SDK is a configuration error. A missing CLI, a logged-out one or a rate limit fails
    each run with one line instead (`cairn.agent.claude_code_errors`), so the daemon keeps capturing
    and pauses indexing until it is fixed.
    """
    from cairn.agent.claude_code_cli import INSTALL_HINT, cli_env, find_cli, sdk_installed
    from cairn.agent.claude_code_login import config_dir, user_config_dir

    if not sdk_installed():
        raise ModelConfigError(INSTALL_HINT)
    from cairn.agent.claude_code import ClaudeCodeConfig, ClaudeCodeModel

    env = cli_env(settings)
    # The CLI picks its own output limit; cairn's bounds an indexing answer as for the API models.
    env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(settings.model_max_tokens)
    # The user's login is read where their Claude Code keeps it; the CLI runs in cairn's own directory.
    login_dir = user_config_dir(env)
    env["CLAUDE_CONFIG_DIR"] = str(config_dir(settings))
    config = ClaudeCodeConfig(
        model_name,
        functools.partial(find_cli, settings),
        env,
        settings.claude_code_effort,
        settings.claude_code_cli,
        login_dir,
    )
    bridge = ClaudeCodeModel(config)
    return ModelChoice(bridge.name, bridge.model, request_settings(settings), closers=[bridge.aclose])


def resolve_model(settings: Settings, override: str | None = None) -> ModelChoice:
    """The model for indexing runs: `override`, else `settings.model`, else the default.

    Raises `UnknownModelError` for a name no provider could serve, `ModelConfigError` when the model
    needs a key or URL that is not configured; the message names the variable to set and the
    `offline` alternative.
    """
    name = (override or settings.model or default_model()).strip()
    if (unknown := unknown_model_message(name)) is not None:
        raise UnknownModelError(unknown)
    if name == OFFLINE:
        from cairn.agent.offline import offline_model

        return ModelChoice(OFFLINE, offline_model(), request_settings(settings, sdk_retries=True))
    if (claude := claude_code_target(name, settings.claude_code_model)) is not None:
        return _claude_code(claude, settings)
    kind, _, model_name = name.partition(":")
    if model_name:
        if kind == "anthropic":
            return _anthropic(name, model_name, settings)
        if kind in ("openai", "openai-chat"):
            return _openai_compatible(name, kind, model_name, settings)
        if kind == "ollama":
            return _ollama(name, model_name, settings)
    try:
        model = infer_model(name)
    except (UserError, ValueError, ImportError) as exc:  # unknown provider, missing key or extra
        raise ModelConfigError(f"cannot use model {name!r}: {exc}") from exc
    return ModelChoice(name, model, request_settings(settings, sdk_retries=True))
