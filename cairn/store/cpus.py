"""Threads for the offline embedding model: every CPU for work a user waits on, a few in the background.

Embedding is most of a backfill's time, and ONNX Runtime's intra-op threads scale it across cores:
on a 16-core machine (the shared fixtures laid out 4 times, 5,602 messages) a backfill ran at 114.6
messages/s with the threads capped at 4 and at 149.4 with all 16. So the commands a user starts and
waits on — backfill, index, reindex, reindex-vectors, sync, import, redact rescan, the evals: the
**bulk** mode — use every CPU this process may use, and so does the daemon while it runs one of them
for a client (`VectorIndex.embedding_mode`). The daemon's **steady** mode embeds a few messages every
few seconds while the user works; there a few threads are as fast and the user's editor, build and
tests keep the rest of the machine, so it takes at most `STEADY_MAX_THREADS` and never more than half
the CPUs. A search embeds one query: steady too.

"The CPUs this process may use" is its affinity mask (`taskset`, a container's cpuset), lowered by a
CPU quota of its cgroup (`docker --cpus`, systemd `CPUQuota=`, Kubernetes limits): `os.cpu_count()`
sees neither, and threads beyond a quota only queue for it. The `embedding_threads` setting
overrides the choice in both modes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

EmbeddingMode = Literal["bulk", "steady"]

#: The most threads the daemon's background embedding takes, however many CPUs there are.
STEADY_MAX_THREADS = 4

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_MEMBERSHIP = Path("/proc/self/cgroup")


def embedding_threads(mode: EmbeddingMode, setting: int | None = None, cpus: int | None = None) -> int:
    """ONNX intra-op threads for `mode`: `setting` (the user's `embedding_threads`) when given, else all
    of `cpus` (default: `available_cpus()`) for bulk work and min(4, half of them, at least 1) steady."""
    if setting is not None:
        if setting < 1:
            raise ValueError(f"embedding_threads must be at least 1, got {setting}")
        return setting
    count = available_cpus() if cpus is None else max(1, cpus)
    if mode == "bulk":
        return count
    if mode == "steady":
        return max(1, min(STEADY_MAX_THREADS, count // 2))
    raise ValueError(f"unknown embedding mode {mode!r}; expected 'bulk' or 'steady'")


def available_cpus(root: Path = CGROUP_ROOT, membership: Path = CGROUP_MEMBERSHIP) -> int:
    """The CPUs this process may run on (its affinity), at most its cgroup's CPU quota (floored, >= 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota(root, membership)
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota)))
    return max(1, cpus)


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, membership: Path = CGROUP_MEMBERSHIP) -> float | None:
    """The tightest CPU quota, in CPUs, on this process's cgroup and its ancestors; None when there is none.

    Reads cgroup v2's `cpu.max` ("150000 100000" is 1.5 CPUs, "max 100000" no limit) and v1's
    `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: no limit). A missing or unreadable file counts as
    no limit: this only ever lowers a thread count.
    """
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    quotas: list[float] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: one unified hierarchy
            quotas += _walk(root, root / path.lstrip("/"), _v2_quota)
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's own hierarchy
            mount = root / controllers
            if not mount.is_dir():
                mount = root / "cpu"
            quotas += _walk(mount, mount / path.lstrip("/"), _v1_quota)
    return min(quotas) if quotas else None


def _walk(top: Path, start: Path, read: Callable[[Path], float | None]) -> list[float]:
    """The quotas `read` finds in `start` and each directory above it up to `top` (a nested limit
    binds too). In a container `start` may not exist (its cgroup namespace hides the path): then the
    directories that do exist are read."""
    found: list[float] = []
    directory = start
    while True:
        quota = read(directory)
        if quota is not None:
            found.append(quota)
        if directory == top or directory == directory.parent or top not in directory.parents:
            return found
        directory = directory.parent


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _v2_quota(directory: Path) -> float | None:
    text = _read(directory / "cpu.max")
    if not text:
        return None
    quota, _, period = text.partition(" ")
    return _ratio(quota, period or "100000")


def _v1_quota(directory: Path) -> float | None:
    quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    return _ratio(quota, period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max"
        return None
    return q / p if q > 0 and p > 0 else None
