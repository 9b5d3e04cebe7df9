"""Forgetting from the viewer, with an undo window: a confirmed forget waits, then runs the `forget` op.

The design is the simplest one that is honest about what "undo" means: nothing is deleted during the
window. A confirmed forget is held by the viewer process for `undo_seconds` (10 by default); Undo
drops it, and when the window ends the viewer runs the same `forget` op `cairn forget` runs (through
the daemon when it runs). Nothing is deleted by halves and nothing needs re-importing: if the viewer
stops during the window, the forget is dropped unapplied — a lost click, never lost data. Once applied,
a forget is final, as `cairn forget` is (`cairn export` first keeps a copy).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from cairn.ui.backend import Ops, Refusal

log = logging.getLogger("cairn.ui")

DEFAULT_UNDO_SECONDS = 10.0
# Finished forgets the pages still list, so the user sees what happened to theirs.
KEEP_DONE = 20


@dataclass
class PendingForget:
    id: int
    what: str
    args: dict[str, Any]
    due: float
    state: str = "pending"  # pending → applied | undone | failed
    result: Any = None
    error: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def seconds_left(self) -> int:
        return max(0, round(self.due - time.monotonic()))


class Forgets:
    """The forgets this viewer holds: pending ones (undoable) and the last few finished."""

    def __init__(self, ops: Ops, undo_seconds: float = DEFAULT_UNDO_SECONDS) -> None:
        self.ops = ops
        self.undo_seconds = undo_seconds
        self._ids = itertools.count(1)
        self.items: dict[int, PendingForget] = {}

    def schedule(self, what: str, args: dict[str, Any]) -> PendingForget:
        item = PendingForget(next(self._ids), what, args, time.monotonic() + self.undo_seconds)
        item.task = asyncio.create_task(self._apply_later(item))
        self.items[item.id] = item
        self._trim()
        return item

    def undo(self, forget_id: int) -> bool:
        """Drop a pending forget; False when it already ran (or never existed)."""
        item = self.items.get(forget_id)
        if item is None or item.state != "pending" or item.task is None:
            return False
        item.task.cancel()
        item.state = "undone"
        return True

    def listed(self) -> list[PendingForget]:
        return sorted(self.items.values(), key=lambda f: f.id, reverse=True)

    async def close(self) -> None:
        """Drop what is still pending: a viewer that stops applies nothing more."""
        for item in self.items.values():
            if item.state == "pending" and item.task is not None:
                item.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await item.task

    async def _apply_later(self, item: PendingForget) -> None:
        await asyncio.sleep(self.undo_seconds)
        item.state = "applying"
        try:
            item.result = await self.ops.call("forget", item.args)
            item.state = "applied"
        except Refusal as exc:
            item.state, item.error = "failed", str(exc)
            log.warning("forget %s failed: %s", item.what, exc)

    def _trim(self) -> None:
        done = [f for f in self.listed() if f.state not in ("pending", "applying")]
        for item in done[KEEP_DONE:]:
            del self.items[item.id]
