"""`cairn reindex`: rebuild stored sessions' memory from their stored messages, one session at a time.

Per session, oldest first: copy what the indexer needs into a scratch database
(`cairn.reindex.scratch`), run the ordinary indexer over all of it with the chosen model, and — only if
every batch applied — swap the new generation in with one transaction (`cairn.reindex.swap`). A failed
run, a Ctrl-C or a crash therefore leaves that session's old generation as it was; messages are only
ever read.

A job is the model plus the filters (`reindex_jobs`); each swap marks its session done in the same
transaction (`reindex_sessions`). Running the same command again resumes the unfinished job and skips
the sessions it already swapped, so a re-index killed half-way is finished by a rerun. A session
stopped half-way is rebuilt from its first message next time: its partial scratch generation is not
kept, because the swap must be all of a session or nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from cairn.agent.batches import PlannedBatch, pending_files
from cairn.agent.entities import Embed
from cairn.agent.indexer import IndexReport, RunOutcome, index_pending
from cairn.agent.models import ModelChoice
from cairn.backfill import Estimate, RunTally, estimate_paths
from cairn.config import Settings
from cairn.reindex.scratch import ScratchStore, build_scratch, clear_scratch
from cairn.reindex.swap import SwapConflictError, SwapStats, copy_runs, recover_runs, swap_session
from cairn.search.projects import resolve_projects
from cairn.store.db import Database
from cairn.store.store import Store, iso_utc
from cairn.store.vectors import VectorStoreError
from cairn.transcripts.redact import redact


@dataclass(frozen=True)
class Selection:
    """Which sessions a re-index covers; its JSON (with the model) identifies a resumable job."""

    project: str | None = None
    session: str | None = None
    since: datetime | None = None

    def as_json(self) -> str:
        since = iso_utc(self.since) if self.since else None
        return json.dumps({"project": self.project, "session": self.session, "since": since}, sort_keys=True)


@dataclass(frozen=True)
class StoredSession:
    id: str
    project: str | None
    started: str | None

    def describe(self) -> dict[str, object]:
        return {"session": self.id, "project": self.project, "started": self.started}


async def select_sessions(db: Database, selection: Selection) -> list[StoredSession]:
    """Stored sessions with messages matching `selection`, oldest first.

    `project` names projects as `--project` does everywhere (`resolve_projects`: any path inside the
    repository, its name, a Claude Code directory name), else matches a project's path or name or
    the session's cwd as a substring, as `cairn backfill --project` does; `session` is an id or its
    prefix; `since` keeps sessions whose last message is at or after it.
    """
    named = {pid for pid, _ in await resolve_projects(db, selection.project)} if selection.project else set()
    rows = await db.fetchall(
        """
        SELECT s.id, s.started_at, s.last_at, s.cwd, s.project_id, p.path AS project_path,
               p.name AS project_name
        FROM sessions s LEFT JOIN projects p ON p.id = s.project_id
        WHERE EXISTS (SELECT 1 FROM transcript_files f JOIN messages m ON m.file_id = f.id
                      WHERE f.session_id = s.id)
        ORDER BY coalesce(s.started_at, s.created_at), s.id
        """
    )
    # Stored paths are redacted: a path given with its token in it is matched by its redacted spelling.
    wanted = (
        {form.casefold() for form in (selection.project, redact(selection.project))}
        if selection.project
        else None
    )
    since = iso_utc(selection.since) if selection.since else None
    result = []
    for row in rows:
        places = [str(row[k] or "").casefold() for k in ("project_path", "project_name", "cwd")]
        if named:
            if row["project_id"] not in named:
                continue
        elif wanted is not None and not any(
            form in place or form.replace("/", "-") in place for form in wanted for place in places
        ):
            continue
        if selection.session is not None and not row["id"].startswith(selection.session):
            continue
        if since is not None and (row["last_at"] or "") < since:
            continue
        result.append(StoredSession(row["id"], row["project_name"], row["started_at"]))
    return result


async def session_files(db: Database, session_id: str) -> list[str]:
    rows = await db.fetchall(
        "SELECT path FROM transcript_files WHERE session_id = ? ORDER BY id", (session_id,)
    )
    return [row["path"] for row in rows]


async def start_job(db: Database, model: str, selection: Selection) -> tuple[int, set[str]]:
    """The unfinished job of this model and selection (and the sessions it swapped), or a new one."""
    row = await db.fetchone(
        "SELECT id FROM reindex_jobs WHERE finished_at IS NULL AND model = ? AND selection = ? "
        "ORDER BY id DESC LIMIT 1",
        (model, selection.as_json()),
    )
    if row is not None:
        done = await db.fetchall("SELECT session_id FROM reindex_sessions WHERE job_id = ?", (row["id"],))
        return int(row["id"]), {r["session_id"] for r in done}
    async with db.write() as conn:
        cur = await conn.execute(
            "INSERT INTO reindex_jobs (model, selection) VALUES (?, ?)", (model, selection.as_json())
        )
        return int(cur.lastrowid or 0), set()


async def finish_job(db: Database, job_id: int) -> None:
    async with db.write() as conn:
        await conn.execute(
            "UPDATE reindex_jobs SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?",
            (job_id,),
        )


async def waiting_messages(store: Store, sessions: list[StoredSession]) -> int:
    """Messages the re-index will send (not noise, current file content): the progress total."""
    row = await store.db.fetchone(
        """
        SELECT count(*) AS n FROM messages m JOIN transcript_files f ON f.id = m.file_id
        WHERE f.session_id IN (SELECT value FROM json_each(?)) AND NOT m.is_noise
          AND m.id > f.generation_start_id
        """,
        (json.dumps([s.id for s in sessions]),),
    )
    return int(row["n"]) if row else 0


@dataclass
class SessionResult(RunTally):
    """What re-indexing one session did; `swapped` when its new generation replaced the old."""

    session: StoredSession = field(kw_only=True)
    swapped: bool = False
    error: str | None = None
    swap: SwapStats | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            **self.session.describe(),
            **self.figures(),
            "old_ideas": self.swap.old_ideas if self.swap else None,
            "carried": self.swap.carried if self.swap else None,
            "forgotten_skipped": self.swap.forgotten_skipped if self.swap else None,
            "corrections_waiting": self.swap.corrections_waiting if self.swap else None,
            "swapped": self.swapped,
            "error": self.error,
        }


@dataclass
class ReindexReport:
    job_id: int
    total: int
    already_done: int = 0
    sessions: list[SessionResult] = field(default_factory=list)
    index: IndexReport = field(default_factory=IndexReport)
    interrupted: bool = False

    @property
    def swapped(self) -> int:
        return sum(1 for s in self.sessions if s.swapped)


BatchProgress = Callable[[PlannedBatch, RunOutcome], None]
SessionProgress = Callable[[SessionResult], None]


async def reindex(
    store: Store,
    settings: Settings,
    sessions: list[StoredSession],
    choice: ModelChoice,
    selection: Selection,
    *,
    embed: Embed | None,
    should_stop: Callable[[], bool] = lambda: False,
    on_batch: BatchProgress | None = None,
    on_session: SessionProgress | None = None,
) -> ReindexReport:
    """Rebuild each of `sessions` (skipping those the resumed job swapped) and swap it in when whole."""
    job_id, done = await start_job(store.db, choice.name, selection)
    report = ReindexReport(job_id, total=len(sessions), already_done=sum(1 for s in sessions if s.id in done))
    await recover_runs(store.db, settings)  # a killed re-index's runs, paid for and never recorded
    clear_scratch(settings)
    for session in sessions:
        if session.id in done:
            continue
        if should_stop():
            report.interrupted = True
            break
        result = SessionResult(session=session)
        report.sessions.append(result)
        stopped = await _one_session(
            store, settings, session, choice, job_id, result, report, embed, should_stop, on_batch
        )
        if on_session is not None:
            on_session(result)
        if stopped:
            report.interrupted = report.interrupted or should_stop()
            break
    else:
        if all(s.swapped for s in report.sessions):
            await finish_job(store.db, job_id)
    clear_scratch(settings)
    return report


async def _one_session(
    store: Store,
    settings: Settings,
    session: StoredSession,
    choice: ModelChoice,
    job_id: int,
    result: SessionResult,
    report: ReindexReport,
    embed: Embed | None,
    should_stop: Callable[[], bool],
    on_batch: BatchProgress | None,
) -> bool:
    """Build and swap one session; True when the whole re-index must stop (asked to, or the API is down)."""

    def batch_done(planned: PlannedBatch, run: RunOutcome) -> None:
        result.add(planned, run)
        report.index.add(run)
        if on_batch is not None:
            on_batch(planned, run)

    scratch = await build_scratch(store.db, settings, session.id)
    scratch_db = scratch.db
    accounted = False
    try:
        scratch_store = ScratchStore(settings, scratch_db)
        indexed = await index_pending(
            scratch_store,
            settings,
            model=choice,
            mode="backfill",
            on_batch=batch_done,
            should_stop=should_stop,
            embed=embed,
            # The scratch records this session's runs aside until the swap: both count today.
            budget_dbs=[scratch_db, store.db],
        )
        report.index.batches += indexed.batches
        report.index.skipped_batches += indexed.skipped_batches
        left = len(await pending_files(scratch_db))
        if indexed.failures or indexed.stopped or left:
            result.error = indexed.stopped or (
                f"{len(indexed.failures)} failed run(s), {left} file(s) not indexed to the end"
                if indexed.failures
                else "stopped before its last batch"
            )
            await copy_runs(store.db, scratch_db)
            accounted = True
            report.index.stopped = report.index.stopped or indexed.stopped
            report.index.paused_until = report.index.paused_until or indexed.paused_until
            report.interrupted = report.interrupted or (not indexed.failures and not indexed.stopped)
            return indexed.stopped is not None or report.interrupted
        try:
            result.swap = await swap_session(store.db, scratch, job_id)
        except SwapConflictError as exc:
            result.error = str(exc)
            await copy_runs(store.db, scratch_db)
            accounted = True
            return False
        result.swapped = accounted = True
    finally:
        await scratch_db.close()
        # Once its runs are in the store (swapped or copied) it goes; else the next re-index records
        # them (`recover_runs`), so a scratch on disk always holds runs no ledger has.
        if accounted:
            clear_scratch(settings)
    with contextlib.suppress(VectorStoreError):  # the outbox keeps it for the daemon or reindex-vectors
        await store.sync_vectors()
    return should_stop()


async def estimates(
    store: Store, settings: Settings, sessions: list[StoredSession], overhead: int
) -> list[tuple[StoredSession, Estimate]]:
    """What re-indexing each session would send: the backfill planner over a scratch copy of it."""
    await recover_runs(store.db, settings)  # before a scratch of its own replaces a killed run's
    result = []
    try:
        for session in sessions:
            scratch = await build_scratch(store.db, settings, session.id)
            try:
                result.append((session, await estimate_paths(scratch.db, None, overhead)))
            finally:
                await scratch.close()
    finally:
        clear_scratch(settings)
    return result
