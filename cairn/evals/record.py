"""Recording and replaying model traffic, so an eval run against a paid model can be reproduced for free.

A run with `--record FILE` wraps the model in `RecordingModel`, which appends every request it forwards
and the response it got to a JSONL file. A run with `--replay FILE` uses `replay_model(FILE)` instead of
any model: it answers each request with the recorded response, in order, with the recorded token usage,
so scores, tokens and dollars reproduce with no key and no network.

A replay is only meaningful while the requests are the ones that were recorded, so each incoming request
is compared with the recorded one and the first difference raises `ReplayMismatchError`, naming the
request and where it differs: a changed prompt, tool, batch or tool answer means the recorded responses
no longer answer what is asked. The comparison ignores what legitimately differs between two runs —
timestamps (also inside tool answers), run and provider ids, the provider's model name, float noise
in similarity scores — and paths under the eval's temporary store, which are written as placeholders.
Tool definitions are compared by name and description; their JSON schemas are left out, because each
model's profile rewrites them. Requests are sent one at a time (the indexer never streams: `max_tokens`
is set), so `request` is all that is wrapped. A request that failed is not recorded.

`ReplayMismatchError` is a `ModelAPIError`, so the indexer treats it as systemic and stops its pass at
the next batch instead of recording a failed run for every later batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings

from cairn import __version__
from cairn.errors import Failure, Refusal

FORMAT = 1
# Request- and part-level fields that differ between two runs of the same requests. Content and tool
# arguments are never stripped of keys: an `id` inside a tool answer is data the model reads.
_MESSAGE_VOLATILE = frozenset({"timestamp", "run_id", "conversation_id", "metadata", "state"})
_PART_VOLATILE = frozenset(
    {"timestamp", "id", "provider_name", "provider_details", "metadata", "content_file_digests"}
)
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_FLOAT_DIGITS = 4
_SNIPPET = 120
_MISSING = "<missing>"


class RecordingError(Refusal):
    """A recording file is missing or not one this cairn wrote."""


class ReplayMismatchError(Failure, ModelAPIError):
    """The run asked something the recording does not hold: prompts, tools or code changed since."""

    def __init__(self, message: str):
        super().__init__("replay", message)


def _substitute(value: Any, replacements: Sequence[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: _substitute(item, replacements) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, replacements) for item in value]
    return value


def _stable(value: Any) -> Any:
    """Content with times masked and floats rounded: what must be equal for a replay to hold."""
    if isinstance(value, str):
        return _TIME.sub("<time>", value)
    if isinstance(value, float):
        return round(value, _FLOAT_DIGITS)
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def _message_key(message: dict[str, Any]) -> dict[str, Any]:
    # An earlier response in the history came from the recording itself: only its parts say anything;
    # its model name, ids and usage are the serving model's (and differ between record and replay).
    if message.get("kind") == "response":
        kept: dict[str, Any] = {"kind": "response"}
    else:
        kept = {k: v for k, v in message.items() if k not in _MESSAGE_VOLATILE and k != "parts"}
    parts = [{k: v for k, v in part.items() if k not in _PART_VOLATILE} for part in message.get("parts", [])]
    return _stable({**kept, "parts": parts})


def _tools(params: ModelRequestParameters) -> dict[str, list[dict[str, Any]]]:
    def brief(tools: Sequence[Any]) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description} for t in tools]

    return {"function": brief(params.function_tools), "output": brief(params.output_tools)}


def fingerprint(
    messages: list[ModelMessage], params: ModelRequestParameters, replacements: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """What identifies a request for replay: its messages and tools, volatile parts removed."""
    dumped = _substitute(ModelMessagesTypeAdapter.dump_python(messages, mode="json"), replacements)
    return {"messages": [_message_key(m) for m in dumped], "tools": _tools(params)}


def _placeholders(paths: Mapping[str, str]) -> list[tuple[str, str]]:
    # Longest first, so a path inside another is replaced as the longer one.
    return sorted(paths.items(), key=lambda item: len(item[0]), reverse=True)


class RecordingModel(WrapperModel):
    """Forwards every request to the wrapped model and appends request and response to `path`.

    `placeholders` maps run-specific paths (the temporary store's transcript directory) to fixed names,
    so a recording replays in another directory. The file is started afresh with a header line naming
    the model and prompt the run used.
    """

    def __init__(
        self,
        wrapped: Model,
        path: Path,
        *,
        header: Mapping[str, Any],
        placeholders: Mapping[str, str] | None = None,
    ):
        super().__init__(wrapped)
        self.path = path
        self.requests = 0
        self._replacements = _placeholders(placeholders or {})
        path.parent.mkdir(parents=True, exist_ok=True)
        start = {
            "kind": "header",
            "format": FORMAT,
            "cairn": __version__,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **header,
        }
        path.write_text(json.dumps(start) + "\n", encoding="utf-8")

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        self.requests += 1
        entry = {
            "kind": "exchange",
            "n": self.requests,
            "request": fingerprint(messages, model_request_parameters, self._replacements),
            "settings": dict(model_settings or {}),
            "response": _substitute(
                ModelMessagesTypeAdapter.dump_python([response], mode="json")[0], self._replacements
            ),
        }
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, default=str) + "\n")
        return response


@dataclass
class Recording:
    path: Path
    header: dict[str, Any]
    exchanges: list[dict[str, Any]]

    @property
    def model(self) -> str:
        return str(self.header.get("model") or "replay")


def read_recording(path: Path) -> Recording:
    """A recording written by `RecordingModel`; raises `RecordingError` for anything else."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        entries = [json.loads(line) for line in lines]
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read the recording: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise RecordingError(f"{path}: not a cairn recording (bad JSON: {exc})") from exc
    if not entries or entries[0].get("kind") != "header" or entries[0].get("format") != FORMAT:
        raise RecordingError(f"{path}: not a cairn recording of format {FORMAT} (no header line)")
    exchanges = entries[1:]
    if any(e.get("kind") != "exchange" for e in exchanges):
        raise RecordingError(f"{path}: unexpected lines after the header")
    return Recording(path, entries[0], exchanges)


def _snippet(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def _first_difference(expected: Any, actual: Any, where: str) -> tuple[str, Any, Any]:
    """The path of the first place two JSON values differ, and the values there."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            if expected.get(key, _MISSING) != actual.get(key, _MISSING):
                return _first_difference(
                    expected.get(key, _MISSING), actual.get(key, _MISSING), f"{where}.{key}"
                )
    elif isinstance(expected, list) and isinstance(actual, list):
        for index, (e, a) in enumerate(zip(expected, actual, strict=False)):
            if e != a:
                return _first_difference(e, a, f"{where}[{index}]")
        if len(expected) != len(actual):
            return f"{where} (length)", len(expected), len(actual)
    elif isinstance(expected, str) and isinstance(actual, str):
        at = next((i for i, (e, a) in enumerate(zip(expected, actual, strict=False)) if e != a), None)
        at = min(len(expected), len(actual)) if at is None else at
        start = max(0, at - 30)
        return f"{where} (character {at})", expected[start:], actual[start:]
    return where, expected, actual


class Replay:
    """The replay's `FunctionModel` function: the recorded responses in order, each request checked."""

    def __init__(self, recording: Recording, placeholders: Mapping[str, str] | None = None):
        self.recording = recording
        self.position = 0
        self.error: ReplayMismatchError | None = None
        self._replacements = _placeholders(placeholders or {})
        self._restore = [(new, old) for old, new in self._replacements]

    def _fail(self, message: str) -> ReplayMismatchError:
        self.error = self.error or ReplayMismatchError(
            f"{message}. The prompt, the tools or cairn's code changed since {self.recording.path} was "
            "recorded: record the run again."
        )
        return self.error

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        number = self.position + 1
        if self.error is not None:
            raise self.error
        if self.position >= len(self.recording.exchanges):
            raise self._fail(f"request {number}: the recording ends after {len(self.recording.exchanges)}")
        exchange = self.recording.exchanges[self.position]
        actual = fingerprint(messages, info.model_request_parameters, self._replacements)
        if actual != exchange["request"]:
            where, recorded, now = _first_difference(exchange["request"], actual, "request")
            raise self._fail(
                f"request {number} differs from the recording at {where}: recorded {_snippet(recorded)!r}, "
                f"now {_snippet(now)!r}"
            )
        self.position += 1
        response = _substitute(exchange["response"], self._restore)
        return ModelMessagesTypeAdapter.validate_python([response])[0]  # type: ignore[return-value]

    def finish(self) -> None:
        """Raise the mismatch the run met, or say so when the run asked fewer requests than recorded."""
        if self.error is not None:
            raise self.error
        if self.position < len(self.recording.exchanges):
            raise self._fail(
                f"the run made {self.position} requests, the recording holds {len(self.recording.exchanges)}"
            )


def _profile(model: str) -> ModelProfile | None:
    """The recorded model's profile, so the agent builds the same requests as for the real model."""
    provider, _, name = model.partition(":")
    if not name:
        return None
    try:
        from pydantic_ai.providers import infer_provider_class

        return infer_provider_class(provider).model_profile(name)
    except Exception:  # an unknown provider or a missing extra: the default profile is the best guess
        return None


def replay_model(path: Path, *, placeholders: Mapping[str, str] | None = None) -> FunctionModel:
    """A model answering with the responses recorded in `path`; its function is a `Replay`."""
    recording = read_recording(path)
    return FunctionModel(
        Replay(recording, placeholders), model_name=recording.model, profile=_profile(recording.model)
    )


def replay_of(model: Model) -> Replay | None:
    """The `Replay` behind a model made by `replay_model`, else None."""
    function = getattr(model, "function", None)
    return function if isinstance(function, Replay) else None
