"""cairn: a searchable memory built from coding-agent transcripts."""

import os as _os

__version__ = "0.1.0"

# onnxruntime (the embedding model's runtime) otherwise writes a device id and a queue of usage events
# for Microsoft under ~/.cache/Microsoft as it loads; cairn sends nothing anywhere. Read once, at import.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# Started as early as cairn loads: the fallback for a command's elapsed time where /proc is missing.
from cairn import clock as _clock  # noqa: F401
