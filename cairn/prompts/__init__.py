"""Versioned prompts, shipped as package data: `<name>-v<N>.md` in this directory.

A prompt never changes in place once runs have used it: a new wording is a new file, so every
recorded run (`index_runs.prompt_version`) names the exact text it ran with and evals can compare
versions. `load_prompt` picks the highest version unless one is asked for (`--prompt-version`,
`CAIRN_PROMPT_VERSION` and the like are read by the caller and passed in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from cairn.errors import Refusal

_FILE = re.compile(r"^(?P<name>[a-z][a-z0-9_-]*?)-v(?P<version>[0-9]+)\.md$")


class PromptNotFoundError(Refusal, LookupError):
    """No prompt file has the requested name (and version)."""


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str  # "v1", "v2", ...
    text: str

    @property
    def id(self) -> str:
        """What a run records as its prompt version, e.g. `indexer-v1`."""
        return f"{self.name}-{self.version}"


@cache
def available() -> dict[str, list[int]]:
    """Version numbers of every packaged prompt, ascending, by name."""
    found: dict[str, list[int]] = {}
    for entry in files(__name__).iterdir():
        if match := _FILE.match(entry.name):
            found.setdefault(match["name"], []).append(int(match["version"]))
    return {name: sorted(versions) for name, versions in found.items()}


def _version_number(version: str | int) -> int:
    text = str(version).strip().lower().removeprefix("v")
    if not text.isdigit():
        raise PromptNotFoundError(f"prompt version {version!r} is not of the form v1, v2, …")
    return int(text)


@cache
def load_prompt(name: str = "indexer", version: str | int | None = None) -> Prompt:
    """The prompt `name` at `version` ("v1", "1" or 1), or its latest version."""
    versions = available().get(name)
    if not versions:
        raise PromptNotFoundError(f"no prompt named {name!r} (have: {', '.join(sorted(available()))})")
    number = versions[-1] if version is None else _version_number(version)
    if number not in versions:
        have = ", ".join(f"v{v}" for v in versions)
        raise PromptNotFoundError(f"prompt {name!r} has no version v{number} (have: {have})")
    text = files(__name__).joinpath(f"{name}-v{number}.md").read_text(encoding="utf-8")
    return Prompt(name=name, version=f"v{number}", text=text)


PROMPT_VERSION = load_prompt().version
"""The version the indexer uses by default."""
