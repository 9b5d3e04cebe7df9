"""glibc malloc tuned for cairn's processes: a backfill's peak RSS stays lower.

Arenas. glibc gives each thread that allocates under contention its own malloc arena, up to 8 per
core. A backfill allocates from many threads — ONNX Runtime's intra-op pool, `asyncio.to_thread`
workers for Chroma and SQLite, Chroma's own — and memory freed in one arena is not reused by another,
so RSS creeps up. Two arenas took a 2,798-message backfill's peak RSS from 490 to 424 MB in the same
wall time (99 s; figures in docs/benchmarks.md).

Thresholds. glibc serves a block above `M_MMAP_THRESHOLD` (128 KiB at start) with a mapping of its
own, returned to the system when freed; but each time such a block is freed it raises the threshold to
that block's size (up to 32 MiB), so from then on large blocks come from the heap and what they leave
free stays in the process. A backfill frees large blocks early: loading the embedding model turns its
int8 weights into float ones (a ~235 MB peak of temporaries), and numpy batches and Chroma's buffers
follow. Fixing the threshold at 128 KiB and trimming the heap's free top above 256 KiB (setting either
turns the adjustment off) keeps them out of the heap: a 2,800-message backfill peaked at 451-454 MB
instead of 474-498 (4 runs each, alternated, one machine), at the same throughput within its noise
(`benchmarks/backfill.py --machine`).

Each parameter is set by `mallopt` before the threads start, as its environment variable would set it;
a user's own variable (or `GLIBC_TUNABLES` entry) overrides it — glibc has read it at start-up, and
cairn leaves that parameter alone. Elsewhere (musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Sequence
from typing import NamedTuple


class Tuning(NamedTuple):
    """One malloc parameter: the variable a user would set, its tunable, `mallopt`'s number, the value."""

    variable: str
    tunable: str
    param: int
    value: int


#: glibc's `mallopt` parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

ARENAS = 2
MMAP_THRESHOLD = 128 * 1024
TRIM_THRESHOLD = 256 * 1024

TUNING: tuple[Tuning, ...] = (
    Tuning("MALLOC_ARENA_MAX", "glibc.malloc.arena_max", M_ARENA_MAX, ARENAS),
    Tuning("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    Tuning("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold", M_TRIM_THRESHOLD, TRIM_THRESHOLD),
)


def tune_malloc(tuning: Sequence[Tuning] | None = None) -> list[str]:
    """Set each parameter of `tuning` (default `TUNING`) the user has not; the variables glibc took."""
    if sys.platform != "linux":
        return []
    name = ctypes.util.find_library("c")
    if name is None:
        return []
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return []
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    taken = []
    for item in TUNING if tuning is None else tuning:
        if item.variable in os.environ or item.tunable in tunables:
            continue
        if mallopt(item.param, item.value):
            taken.append(item.variable)
    return taken
