"""Fewer glibc malloc arenas in every cairn process: a backfill's peak RSS stays lower.

glibc gives each thread that allocates under contention its own malloc arena, up to 8 per core.
A backfill allocates from many threads — ONNX Runtime's intra-op pool, `asyncio.to_thread` workers
for Chroma and SQLite, Chroma's own — and memory freed in one arena is not reused by another, so
RSS creeps up. Two arenas, set by `mallopt(M_ARENA_MAX)` before those threads start, took a 2,798-
message backfill's peak RSS from 490 to 424 MB in the same wall time (99 s; issue 16, part 4). It is the
`MALLOC_ARENA_MAX` environment variable's setting, which a user's own value overrides (glibc reads
the variable at start-up; cairn leaves it alone then). Elsewhere (musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

#: glibc's `M_ARENA_MAX` parameter number (malloc.h).
M_ARENA_MAX = -8
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at `arenas`; True if glibc took the setting."""
    if "MALLOC_ARENA_MAX" in os.environ or sys.platform != "linux":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
