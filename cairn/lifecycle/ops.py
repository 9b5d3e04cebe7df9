"""The life-cycle commands as store ops, run by the daemon when it runs and directly otherwise.

`forget` and `import_file` write, so they are in the daemon's `WRITING_OPS`: with a daemon running they
go through it (it owns the store and its Chroma client), else the command takes the store's lock.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cairn.lifecycle.forget import Selection, forget
from cairn.lifecycle.importer import bounded_lines, import_lines, open_export
from cairn.store import outbox

if TYPE_CHECKING:
    from cairn.store.store import Store


async def forget_op(
    store: Store,
    *,
    project: str | None = None,
    sessions: list[str] | None = None,
    ideas: list[int] | None = None,
    before: str | None = None,
    dry_run: bool = False,
) -> Any:
    """Forget a project, sessions or ideas (`cairn.lifecycle.forget`); `before` is an ISO date-time."""
    from cairn.store.store import iso_utc

    cutoff = None if before is None else iso_utc(datetime.fromisoformat(before))
    selection = Selection(project, tuple(sessions or ()), tuple(int(i) for i in ideas or ()), cutoff)
    report = await forget(store, selection, dry_run=dry_run)
    return report.as_json()


async def import_op(store: Store, *, path: str) -> Any:
    """Import the export at `path` (a regular file this user can read) and compute the new rows' vectors.

    The vectors reported are those the index holds now and did not before: every imported row is queued,
    but tool output, noise and a message's first passage get no vector, so the queue's length overstated
    what was embedded. What a running job's embedder has yet to reach is `vectors_queued`.
    """
    with open_export(path) as handle:
        report = await import_lines(store.db, bounded_lines(handle))
    if store.read_only is None:
        before = await _vectors_held(store)
        await store.sync_vectors()
        report.vectors = await _vectors_held(store) - before
        report.vectors_queued = await outbox.pending(store.db)
    return report.as_json()


async def _vectors_held(store: Store) -> int:
    """Every vector the store's index holds, over all kinds."""
    from cairn.store.vectors import VECTOR_KINDS

    index = store.vectors
    return await asyncio.to_thread(lambda: sum(index.count(kind) for kind in VECTOR_KINDS))
