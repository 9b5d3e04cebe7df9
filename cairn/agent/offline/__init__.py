"""The offline indexer: deterministic heuristics that run as a pydantic-ai model through the real agent.

`offline_model()` is cairn's zero-cost mode (no API key, no network) and the baseline every prompt
must beat. It plays the indexing agent's part honestly: it reads the batch from the user prompt,
calls the same read-only tools a language model would, and returns an `IndexResult` through the
agent's output tool, which the executor validates and applies like any other.

Modules: `text` (sentences, terms), `gazetteer` (technology names), `entities` (files, identifiers,
technologies), `naming` (the project's own packages, services and tools), `cues` (intent from cue
phrases), `reading` (roles, turns, tool calls), `extract` (candidate ideas), `answers` (the reply to a
person's question, the person's decision on an offer), `lookups` (tool plan and
answers), `linking` (answers, todos, duplicates, entity links, activation), `evidence` (what a new and
a stored idea share), `relating` (relations between them), `inbatch` (answers, completions,
supersedes, contradicts and builds_on between the batch's own new ideas, by key), `topics` (spans),
`build` (the result), `model` (the `FunctionModel` state machine).
"""

from cairn.agent.offline.build import build_result, read_batch
from cairn.agent.offline.lookups import LOOKUP_BUDGET, Known
from cairn.agent.offline.model import OFFLINE_MODEL_NAME, OfflineModelError, offline_model

__all__ = [
    "LOOKUP_BUDGET",
    "OFFLINE_MODEL_NAME",
    "Known",
    "OfflineModelError",
    "build_result",
    "offline_model",
    "read_batch",
]
