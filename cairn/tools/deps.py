"""What the indexing agent's tools run against: the store, its vectors, and the run's budgets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cairn.store.db import Database

if TYPE_CHECKING:  # chromadb takes ~0.4 s to import; a run without vectors should not pay it
    from cairn.store.vectors import VectorIndex


@dataclass
class ToolDeps:
    """The agent's dependencies (`Agent(deps_type=ToolDeps)`), one instance per run.

    Tools read `db` only through `fetchall`/`fetchone`/`scalar`, which use the database's read-only
    connection: the executor is the one writer of memory. `vectors` is None when Chroma is not wanted
    (or not available); the tools then match text through FTS5 and LIKE alone.

    `max_tool_calls` is a soft budget: every call counts in `tool_calls`, and once the budget is used
    up each tool answers with a notice telling the model to return its result now — the run ends with
    what the model has instead of dying of a usage limit. `max_result_chars` bounds the JSON of every
    tool result, so a run's context cannot be flooded by one broad query.
    """

    db: Database
    vectors: VectorIndex | None
    max_tool_calls: int = 15
    tool_calls: int = 0
    max_result_chars: int = 4000
