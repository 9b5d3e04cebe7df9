"""The `recall` socket op: what a Claude Code hook injects, and the ledger of what it injected.

The hook script sends the hook's own fields (`event`, `session_id`, `cwd`, `prompt`, `source`) and
prints `additionalContext` as `hookSpecificOutput`; everything else happens here, in the process that
owns the store, so the hook stays a thin client and answers within its timeout.

`recall_enabled = false` turns injection off without touching capture: nothing is injected and nothing
is recorded, not even the context-reset marker, since there is nothing to deduplicate against.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from cairn.errors import Refusal
from cairn.recall.context import Recall, find_project, prompt_context, session_context
from cairn.store.injections import EVENTS, Event, record_injections, shown_since_reset

if TYPE_CHECKING:
    from cairn.store.store import Store

log = logging.getLogger("cairn.recall")


async def recall_op(
    store: Store,
    *,
    event: str,
    session_id: str,
    cwd: str | None = None,
    prompt: str | None = None,
    source: str | None = None,
    transcript_path: str | None = None,
) -> dict[str, Any]:
    """`{"additionalContext": text or None, "ids": [...], "took_ms": ...}` for one hook event.

    SessionStart (any `source`: startup, resume, clear, compact — each leaves the agent with a fresh
    context) records a context reset, then the project index it injects; UserPromptSubmit injects the
    ideas related to `prompt` that this session was not shown since its last reset, and counts them
    as used. `transcript_path` is accepted so the hook can pass its input through unfiltered.
    """
    started = time.perf_counter()
    if event not in EVENTS:
        raise Refusal(f"bad recall request: event must be SessionStart or UserPromptSubmit, not {event!r}")
    if not isinstance(session_id, str) or not session_id.strip():
        raise Refusal("bad recall request: session_id must be the hook's non-empty session id")
    texts = {"cwd": cwd, "prompt": prompt, "source": source, "transcript_path": transcript_path}
    for name, value in texts.items():
        if value is not None and not isinstance(value, str):
            raise Refusal(f"bad recall request: {name} must be text")

    recall = Recall()
    if store.settings.recall_enabled:
        if event == "SessionStart":
            recall = await context_for(store, "SessionStart", cwd, None)
            await _record(store, session_id, "SessionStart", recall.ids, reset=True)
        else:
            shown = await shown_since_reset(store.db, session_id)
            recall = await context_for(store, "UserPromptSubmit", cwd, prompt, exclude=shown)
            if recall.ids:
                await _record(store, session_id, "UserPromptSubmit", recall.ids, reset=False)
    return {
        "additionalContext": recall.text,
        "ids": recall.ids,
        "took_ms": round((time.perf_counter() - started) * 1000, 2),
    }


async def context_for(
    store: Store,
    event: Event,
    cwd: str | None,
    prompt: str | None,
    *,
    exclude: frozenset[int] | set[int] = frozenset(),
) -> Recall:
    """What one hook event injects, without recording it: the project `cwd` belongs to, then its
    SessionStart index or the ideas related to `prompt` but for `exclude`. `cairn eval recall` scores this."""
    project = await find_project(store.db, cwd)
    if event == "SessionStart":
        return await session_context(store.db, store.settings, project)
    return await prompt_context(store.db, store.vectors, store.settings, project, prompt, exclude=exclude)


async def _record(store: Store, session_id: str, event: Event, ids: list[int], *, reset: bool) -> None:
    """The ledger and usage writes; a store that cannot be written still answers the hook, which only
    loses deduplication and hit counts — never the session's context.

    Only per-prompt injections count as uses: SessionStart shows the same open items to every new
    session, and counting that would rank them higher in every search for no reason but their age.
    """
    from cairn.search.hybrid import reinforce

    try:
        await record_injections(store.db, session_id, event, ids, reset=reset)
        if event == "UserPromptSubmit":
            await reinforce(store.db, ids)
    except sqlite3.Error:
        log.warning("could not record the recall injections of session %s", session_id, exc_info=True)
