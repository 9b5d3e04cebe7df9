"""The life-cycle commands as store ops, run by the daemon when it runs and directly otherwise.

`forget` and `import_file` write, so they are in the daemon's `WRITING_OPS`: with a daemon running they
go through it (it owns the store and its Chroma client), else the command takes the store's lock.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from cairn.lifecycle.forget import Selection, forget
from cairn.lifecycle.importer import bounded_lines, import_lines, open_export

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
    """Import the export at `path` (a regular file this user can read) and compute the new rows' vectors."""
    with open_export(path) as handle:
        report = await import_lines(store.db, bounded_lines(handle))
    if store.read_only is None:
        report.vectors = await store.sync_vectors()
    return report.as_json()
