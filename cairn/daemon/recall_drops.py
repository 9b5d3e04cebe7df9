"""The recall hook's drop counter: every hook call that injected nothing because the daemon did not serve it.

A drop is silent by design — the prompt goes on without memory rather than wait — so without a count a
user cannot tell recall that has nothing to say from recall that never got to say it. The hook counts
each drop here and `cairn status` / `cairn stats` show the totals next to the injections and hit rate.

Reasons:

- `late`: the daemon took the connection but did not answer within the deadline (a busy machine, a
  daemon still loading its embedding model, a hung one);
- `failed`: it refused, hung up or answered something that is not a recall answer;
- `no_daemon`: nobody listens on the socket (the daemon idled out or was never started).

The hook runs as `python -S -E` with the standard library only, so this module imports nothing of
cairn and the hook loads it as a sibling script. The counts live in `$CAIRN_HOME/recall-drops.json`,
rewritten whole under an exclusive `flock` on `recall-drops.lock` (no two hooks lose each other's
count) and through a temporary file and `os.replace` (a reader, or a hook killed mid-write, never
sees half a file). The file is small and bounded, whatever the number of drops. Nothing is written
into a home that does not exist: a hook never creates cairn's home.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from typing import Any

DROPS_FILE = "recall-drops.json"
LOCK_FILE = "recall-drops.lock"
REASONS = ("late", "failed", "no_daemon")
# "unknown": the payload itself came too late to say which event it was.
EVENTS = ("SessionStart", "UserPromptSubmit", "unknown")
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _empty() -> dict[str, Any]:
    return {"total": 0, "by_reason": dict.fromkeys(REASONS, 0), "by_event": {}, "last": None}


def _load(path: str) -> dict[str, Any]:
    """The counts in `path`; empty ones when it is missing or not what this module writes."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return _empty()
    counts = _empty()
    if not isinstance(data, dict):
        return counts
    for group in ("by_reason", "by_event"):
        found = data.get(group)
        if isinstance(found, dict):
            for key, value in found.items():
                if isinstance(key, str) and isinstance(value, int) and value >= 0:
                    counts[group][key] = value
    counts["total"] = sum(counts["by_reason"].values())
    counts["last"] = _last(data.get("last"))
    return counts


def _last(value: object) -> dict[str, Any] | None:
    """The last drop as this module writes it, else None: what a face shows must not be arbitrary text."""
    if not isinstance(value, dict):
        return None
    at, event, reason, deadline = (value.get(k) for k in ("at", "event", "reason", "deadline_ms"))
    if not (isinstance(at, str) and _STAMP.fullmatch(at) and event in EVENTS and reason in REASONS):
        return None
    if not isinstance(deadline, int):
        return None
    return {"at": at, "event": event, "reason": reason, "deadline_ms": deadline}


def read_drops(home: str | os.PathLike[str]) -> dict[str, Any]:
    """`{"total", "by_reason", "by_event", "last"}` for `home`; zeros when nothing was ever dropped."""
    return _load(os.path.join(home, DROPS_FILE))


def count_drop(home: str, event: str, reason: str, deadline_ms: float) -> None:
    """Add one drop of `event` for `reason`; raises `OSError` when it cannot (the caller logs it)."""
    if reason not in REASONS or event not in EVENTS:
        raise ValueError(f"unknown drop {event!r}/{reason!r}")
    if not os.path.isdir(home):
        return
    path = os.path.join(home, DROPS_FILE)
    fd = os.open(os.path.join(home, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        counts = _load(path)
        counts["by_reason"][reason] += 1
        counts["by_event"][event] = counts["by_event"].get(event, 0) + 1
        counts["total"] = sum(counts["by_reason"].values())
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        counts["last"] = {"at": stamp, "event": event, "reason": reason, "deadline_ms": round(deadline_ms)}
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            with open(os.open(tmp, flags, 0o600), "w", encoding="utf-8") as fh:
                json.dump(counts, fh)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    finally:
        os.close(fd)  # releases the lock
