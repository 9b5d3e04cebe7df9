"""Embedding the vector outbox in the background while a long job keeps writing to it.

A backfill's two heavy halves are capture and indexing — Python, one core — and embedding — ONNX
Runtime, outside the GIL. Run one after the other they leave a core idle most of the time; run side
by side they share both. `VectorWorker` drains the outbox (`Store.sync_vectors`) in a loop while
the job captures and indexes: it embeds the captured messages and passages, waits when there are none
and is woken by the job's own `sync_vectors` calls — which meanwhile embed only what indexing wrote
(ideas, spans, entities: a few per run, needed by the next run's searches), so the two never share a
row — and `finish` drains everything left once the job has written it all.

Nothing changes about what gets stored: the outbox rows are removed only after their vectors are
written (`cairn.store.outbox`), so a worker stopped or killed half-way leaves the rest queued for the
next drain.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection
from typing import Protocol

#: What the worker embeds while the job runs: captured text, the bulk of the queue.
BULK_VECTOR_KINDS = ("messages", "passages")
#: What the job's own `sync_vectors` still embeds at once, so its next indexing run can search it.
#: Spelled out rather than derived from `cairn.store.vectors.VECTOR_KINDS`: importing that module
#: imports Chroma (seconds), which the store leaves until vectors are used. A test checks the two
#: tuples cover every kind.
MEMORY_VECTOR_KINDS = ("ideas", "spans", "entities", "chunks", "associations")

#: How long an idle worker sleeps before looking at the queue again without being woken (a write
#: that did not call `sync_vectors`, such as capture's, still gets its vectors this soon).
IDLE_SECONDS = 0.5

#: `progress(written, total)`: vectors written so far by this worker, and that plus what is queued.
WorkerProgress = Callable[[int, int], None]


class Drainable(Protocol):
    """What the worker drains: `Store.drain_vectors`. A protocol, so this module needs nothing of the
    `Store` that owns the worker (`cairn.store.store` imports this module, not the other way round)."""

    async def drain_vectors(
        self, progress: WorkerProgress | None = None, kinds: Collection[str] | None = None
    ) -> int: ...


class _Stop(Exception):
    """Raised from the outbox's progress callback to leave a drain between two committed batches."""


class VectorWorker:
    """Drains `store`'s vector outbox until `finish`; use `async with store.vectors_alongside()`."""

    def __init__(
        self,
        store: Drainable,
        progress: WorkerProgress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self._store = store
        self._progress = progress
        self._should_stop = should_stop
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        #: Outbox rows applied by this worker so far.
        self.written = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="cairn-vector-worker")

    def wake(self) -> None:
        """Something was queued: look at the queue now rather than after the idle wait."""
        self._wake.set()

    async def finish(self, *, drain: bool = True) -> int:
        """Stop the loop, then (with `drain`) embed what is still queued; how many rows were applied.

        An error the loop met (Chroma unreachable, say) is raised here, once the job's own work is
        done: the outbox keeps the rows for the next run.
        """
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if drain and not self._should_stop():
            await self._drain(None)
        return self.written

    async def _run(self) -> None:
        while not self._closing:
            # Cleared before the drain, so a wake-up that arrives during it is not lost.
            self._wake.clear()
            if await self._drain() == 0 and not self._closing:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_SECONDS)

    async def _drain(self, kinds: tuple[str, ...] | None = BULK_VECTOR_KINDS) -> int:
        """One drain of the queue (of `kinds`) as it is; how many rows it applied."""
        before, applied = self.written, 0

        def progress(done: int, total: int) -> None:
            nonlocal applied
            applied = done
            if self._progress is not None:
                self._progress(before + done, before + total)
            if self._should_stop():
                raise _Stop

        try:
            await self._store.drain_vectors(progress=progress, kinds=kinds)
        except _Stop:
            self._closing = True
        self.written = before + applied
        return applied

    async def cancel(self) -> None:
        """Stop the loop without draining or raising: the job failed, the outbox keeps the rest."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
