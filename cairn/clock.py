"""How long this process has been running: the elapsed time a command's summary reports.

A command's own timer starts late — after the interpreter, its imports (pydantic-ai, chromadb,
onnxruntime: seconds on a busy laptop) and the store's opening — and a backfill that measured only
its indexing once reported 54 s for a 284 s run. The summary instead says what the user waited:
from the process's start, read from /proc on Linux, else from when cairn was first imported.
"""

from __future__ import annotations

import os
import time

_IMPORTED = time.monotonic()
# Interpreter start-up before `import cairn` is well under this; a larger gap means /proc and the
# clock disagree (another kernel's idea of start time), and the import time is the safer answer.
_MAX_STARTUP = 60.0


def _proc_elapsed() -> float | None:
    """Seconds since this process started, per /proc/self/stat and CLOCK_BOOTTIME (Linux), else None."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rpartition(b")")[2].split()
        ticks = int(fields[19])  # field 22, starttime: clock ticks after boot
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def process_seconds() -> float:
    """Wall seconds since this process started (at least since cairn was imported)."""
    since_import = time.monotonic() - _IMPORTED
    proc = _proc_elapsed()
    if proc is not None and since_import <= proc <= since_import + _MAX_STARTUP:
        return proc
    return since_import
