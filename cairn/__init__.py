"""cairn: a searchable memory built from coding-agent transcripts.

The library's way in is `Memory` (and `AsyncMemory` for asyncio programs), which the command line, the
MCP server and the viewer use too; what it raises is cairn's error tree (`CairnError`, `Refusal`,
`Failure`). `docs/api.md` documents them. They are imported at first use, so `import cairn` stays as
light as a command's start-up needs.
"""

from __future__ import annotations

import os as _os
from typing import Any

__version__ = "0.1.0"

# onnxruntime (the embedding model's runtime) otherwise writes a device id and a queue of usage events
# for Microsoft under ~/.cache/Microsoft as it loads; cairn sends nothing anywhere. Read once, at import.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# Started as early as cairn loads: the fallback for a command's elapsed time where /proc is missing.
from cairn import clock as _clock  # noqa: F401

__all__ = [
    "AsyncMemory",
    "CairnError",
    "Failure",
    "Memory",
    "Refusal",
    "__version__",
]

#: Where each public name lives: imported when first asked for. (Not named under TYPE_CHECKING either:
#: every module imports `cairn` for its version, and the layers contract would read that as each of them
#: importing the memory, which sits above most of them.)
_HOMES = {
    "AsyncMemory": "cairn.memory",
    "Memory": "cairn.memory",
    "CairnError": "cairn.errors",
    "Failure": "cairn.errors",
    "Refusal": "cairn.errors",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
