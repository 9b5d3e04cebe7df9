"""What a benchmark is made of: questions whose answers sit at transcript lines, and the one error bad input
raises. Light on purpose — the input checks (`cairn.evals.qa`, `cairn.evals.locomo`) import only this, so a
bad file is refused in the time it takes to read it, before the store, the models or Chroma are loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cairn.errors import Refusal

Mode = Literal["hybrid", "semantic", "keyword"]
KindFilter = Literal["ideas", "spans", "messages", "all"]

# The values `cairn.search.models.SearchRequest` takes for `mode` and `kind`.
DEFAULT_MODES: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
KINDS: tuple[KindFilter, ...] = ("ideas", "spans", "messages", "all")
DEFAULT_KINDS: tuple[KindFilter, ...] = ("messages", "ideas", "all")


class BenchmarkError(Refusal):
    """Input that cannot be scored; the message is one line naming the file and the item."""


@dataclass(frozen=True)
class Evidence:
    """A transcript line that answers a question: the file's key and its 1-based physical line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    category: str
    evidence: tuple[Evidence, ...]
    session: str | None = None
    answer: str | None = None


def read_json(path: Path) -> Any:
    """The JSON document in `path`; `BenchmarkError` naming the file when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchmarkError(f"{path.name}: cannot read: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchmarkError(f"{path.name}: not JSON: {exc}") from exc


def physical_lines(path: Path) -> list[bytes]:
    """The file's physical lines, as an editor numbers them (an unterminated last line counts)."""
    return path.read_bytes().splitlines()
