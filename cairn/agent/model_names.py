"""Which model indexes when none is configured, and whether a model string names one cairn can run.

`default_model` lives here, with the agent, rather than in `cairn doctor`: the model choice is the
agent's own, and every caller (the agent, the daemon's jobs, the CLI, `cairn doctor`) reads it here.

Without the name check a typo (`CAIRN_MODEL=gpt-nonsense`) is read as a provider called `gpt-nonsense`
and reported as `$GPT_NONSENSE_API_KEY is not set`, which sends the user after a key that cannot
exist. A name is known when it is `offline`, one of pydantic-ai's `KnownModelName`s, or `PROVIDER:NAME`
for a provider pydantic-ai knows or cairn wires itself (`ollama:`, `openai-chat:` at
`model_base_url`): a dated release, a model newer than this install or a local server's model is
the provider's to accept.
"""

from __future__ import annotations

import difflib
import os
import typing
from functools import cache

OFFLINE = "offline"
# Claude through the user's own Claude Code login (`cairn.agent.claude_code`); `claude-code:NAME` names
# the model.
CLAUDE_CODE = "claude-code"

# Prefixes cairn wires to a server itself (`cairn.agent.models`), whatever pydantic-ai lists.
_SERVED = ("anthropic", "openai", "openai-chat", "ollama")


def default_model(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """The language model cairn uses when none is configured: Claude with a key, else offline."""
    return "anthropic:claude-haiku-4-5" if env.get("ANTHROPIC_API_KEY") else OFFLINE


@cache
def known_model_names() -> tuple[str, ...]:
    """pydantic-ai's `KnownModelName` literals, in its order."""
    from pydantic_ai.models import KnownModelName

    alias = getattr(KnownModelName, "__value__", KnownModelName)
    return tuple(str(name) for name in typing.get_args(alias))


def known_providers() -> frozenset[str]:
    """Provider prefixes pydantic-ai knows models of, plus the local forms cairn wires itself."""
    return frozenset({name.partition(":")[0] for name in known_model_names() if ":" in name} | set(_SERVED))


def unknown_model_message(name: str) -> str | None:
    """None when `name` is a model cairn can run, else the one line saying it is unknown and what is.

    A known provider with a name pydantic-ai does not list yet (a model newer than this install, or
    one a proxy or local server serves) is accepted: the provider answers for its own names. A name
    without a provider, or with a provider nobody knows, is rejected. The line lists cairn's own forms
    and the closest pydantic-ai names (the full list has hundreds).
    """
    name = name.strip()
    if name in (OFFLINE, CLAUDE_CODE) or name.startswith(CLAUDE_CODE + ":"):
        return None
    known = known_model_names()
    if name in known:
        return None
    kind, _, model_name = name.partition(":")
    if model_name and kind in known_providers():
        return None
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if not close:  # `gpt-4o` for `openai:gpt-4o`: compare with the names after their provider
        bare = difflib.get_close_matches(model_name or name, [k.partition(":")[2] for k in known], n=3)
        close = [k for k in known if k.partition(":")[2] in bare][:3]
    nearest = f" (closest: {', '.join(close)})" if close else ""
    return (
        f"unknown model {name!r}; known: offline, claude-code (your Claude Code login), PROVIDER:NAME for a "
        "pydantic-ai provider (anthropic:claude-haiku-4-5, openai:..., google:...), or ollama:NAME / "
        f"openai-chat:NAME with CAIRN_MODEL_BASE_URL for a local server{nearest}"
    )


def claude_code_target(name: str, default: str) -> str | None:
    """The Claude model a `claude-code` model string indexes with, None for any other model.

    `claude-code:NAME` names it; bare `claude-code` means `default` (the `claude_code_model` setting).
    `cairn doctor` and the dry run's estimate name it, and price its API equivalent by it.
    """
    name = name.strip()
    if name == CLAUDE_CODE:
        return default
    if name.startswith(CLAUDE_CODE + ":"):
        return name.partition(":")[2] or default
    return None
