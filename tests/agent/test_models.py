"""Model selection: which model a setting means, how it is wired, and how its HTTP client retries."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.ollama import OllamaModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.models.test import TestModel

from cairn.agent.models import ModelConfigError, UnknownModelError, resolve_model, retrying_http_client
from cairn.config import Settings
from tests.agent.fake_anthropic import FakeAnthropic

_MODEL_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OLLAMA_BASE_URL",
)


@pytest.fixture(autouse=True)
def _clean_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _MODEL_ENV:
        monkeypatch.delenv(name, raising=False)


def _settings(home: Path, **overrides: object) -> Settings:
    return Settings.load(home, **overrides)


def test_default_is_offline_without_a_key(settings: Settings) -> None:
    choice = resolve_model(settings)
    assert choice.name == "offline"
    assert isinstance(choice.model, FunctionModel)
    assert "max_retries" not in choice.settings


async def test_default_is_claude_haiku_with_a_key(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    choice = resolve_model(settings)
    try:
        assert choice.name == "anthropic:claude-haiku-4-5"
        assert isinstance(choice.model, AnthropicModel)
        assert choice.model.model_name == "claude-haiku-4-5"
        # The SDK does not retry on top of the transport; max_tokens is always explicit (no streaming).
        assert choice.settings == {
            "max_tokens": settings.model_max_tokens,
            "max_retries": 0,
            "framing_announcement": "never",
            "cache": True,
        }
        # The provider sends through the retrying client this choice owns.
        assert choice.http_client is not None
        assert choice.model.client._client is choice.http_client
    finally:
        await choice.aclose()
    assert choice.http_client is None


def test_override_wins_over_the_setting(cairn_home: Path) -> None:
    settings = _settings(cairn_home, model="anthropic:claude-sonnet-4-5")
    assert resolve_model(settings, "offline").name == "offline"
    assert resolve_model(settings, "test").model.__class__ is TestModel


def test_missing_anthropic_key_names_the_variable_and_offline(settings: Settings) -> None:
    with pytest.raises(ModelConfigError) as info:
        resolve_model(settings, "anthropic:claude-haiku-4-5")
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert "CAIRN_MODEL=offline" in str(info.value)


async def test_anthropic_base_url_from_settings_then_environment(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/from-env")
    from_env = resolve_model(_settings(cairn_home), "anthropic:claude-haiku-4-5")
    configured = resolve_model(
        _settings(cairn_home, model_base_url="http://127.0.0.1:9/proxy"), "anthropic:claude-haiku-4-5"
    )
    try:
        assert from_env.model.base_url.startswith("http://127.0.0.1:9/from-env")
        assert configured.model.base_url.startswith("http://127.0.0.1:9/proxy")
    finally:
        await from_env.aclose()
        await configured.aclose()


async def test_openai_compatible_local_servers(cairn_home: Path) -> None:
    settings = _settings(cairn_home, model_base_url="http://127.0.0.1:9/v1", model_max_tokens=1024)
    chat = resolve_model(settings, "openai-chat:qwen3")
    plain = resolve_model(settings, "openai:qwen3")
    ollama = resolve_model(settings, "ollama:qwen3")
    try:
        for choice, kind in ((chat, OpenAIChatModel), (plain, OpenAIChatModel), (ollama, OllamaModel)):
            assert type(choice.model) is kind
            assert choice.model.model_name == "qwen3"
            assert choice.model.base_url.startswith("http://127.0.0.1:9/v1")
            assert choice.settings["max_tokens"] == 1024
            assert choice.settings["max_retries"] == 0
            assert choice.model.client._client is choice.http_client
    finally:
        for choice in (chat, plain, ollama):
            await choice.aclose()


async def test_openai_without_a_server_needs_a_key(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        resolve_model(settings, "openai:gpt-5-mini")
    with pytest.raises(ModelConfigError, match="CAIRN_MODEL_BASE_URL"):
        resolve_model(settings, "ollama:qwen3")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    choice = resolve_model(settings, "openai:gpt-5-mini")
    try:
        assert isinstance(choice.model, OpenAIResponsesModel)
    finally:
        await choice.aclose()


def test_unknown_models_are_a_config_error(settings: Settings) -> None:
    for name in ("no-such-provider:model", "gibberish", "gpt-nonsense"):
        with pytest.raises(UnknownModelError, match=f"^unknown model '{name}'; known: offline"):
            resolve_model(settings, name)


# The retrying transport, against the fake Messages API.


async def _post(client: httpx2.AsyncClient, fake: FakeAnthropic) -> httpx2.Response:
    return await client.post(f"{fake.base_url}/v1/messages", json={"messages": []})


async def test_retries_overload_and_rate_limits_then_succeeds() -> None:
    with FakeAnthropic() as fake:
        fake.error(529, "overloaded_error", retry_after="0").error(429, "rate_limit_error", retry_after="0")
        fake.final({"ideas": []})
        async with retrying_http_client(3) as client:
            response = await _post(client, fake)
        assert response.status_code == 200
        assert len(fake.requests) == 3


async def test_gives_up_after_the_configured_attempts() -> None:
    with FakeAnthropic() as fake:
        for _ in range(5):
            fake.error(503, "api_error", retry_after="0")
        async with retrying_http_client(2) as client:
            with pytest.raises(httpx2.HTTPStatusError) as info:
                await _post(client, fake)
        assert info.value.response.status_code == 503
        assert len(fake.requests) == 2


async def test_client_errors_are_not_retried() -> None:
    with FakeAnthropic() as fake:
        fake.error(400, "invalid_request_error").final({"ideas": []})
        async with retrying_http_client(4) as client:
            response = await _post(client, fake)
        assert response.status_code == 400
        assert len(fake.requests) == 1


async def test_retry_after_is_honoured_up_to_the_cap() -> None:
    with FakeAnthropic() as fake:
        fake.error(529, "overloaded_error", retry_after="30").final({"ideas": []})
        async with retrying_http_client(2, max_wait=0.3) as client:
            start = time.perf_counter()
            response = await _post(client, fake)
            waited = time.perf_counter() - start
        assert response.status_code == 200
        assert 0.3 <= waited < 5


@pytest.fixture
def dropping_server() -> Iterator[tuple[str, list[int]]]:
    """A TCP server that accepts and immediately closes every connection, counting them."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.settimeout(0.1)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()


async def test_connection_failures_are_retried(dropping_server: tuple[str, list[int]]) -> None:
    url, accepted = dropping_server
    async with retrying_http_client(3, max_wait=0.05) as client:
        with pytest.raises(httpx2.TransportError):
            await client.post(f"{url}/v1/messages", json={})
    assert len(accepted) == 3
