"""Index one project file into `file_documents`/`file_chunks`, and drain the queue of requested files.

Embedding is the expensive part, and Chroma follows SQLite through the outbox triggers: every
inserted or content-changed chunk row is queued for embedding, nothing else is. So the index writes
as little as it can. A file whose bytes hash the same as last time is not touched at all; a changed
file is re-chunked and its chunks are reconciled by position, so only chunks whose text changed are
updated (and re-embedded), surplus ones deleted, new ones inserted. A file that went missing or is
now refused (it became a secret, got ignored, grew too big) loses its document, and the cascade and
triggers take its chunks and vectors with it.

File reading, hashing and chunking run in a worker thread: a 500 KB file must not stall the daemon's
event loop. A bad file is an outcome, never an exception, so one unreadable file cannot stop a drain.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import aiosqlite

from cairn.config import Settings
from cairn.files.chunking import Chunk, chunk_text
from cairn.files.keywords import document_keywords
from cairn.files.paths import resolve_in_project
from cairn.files.policy import Admitted, GitIgnore, Refusal, admit, redacted_dir
from cairn.store.db import Database
from cairn.transcripts.redact import redact

log = logging.getLogger(__name__)

FileStatus = Literal["indexed", "unchanged", "skipped", "failed"]


@dataclass(frozen=True)
class FileOutcome:
    """What indexing one file did. `reason` is the refusal code (skipped) or the error (failed)."""

    status: FileStatus
    reason: str | None = None
    document_id: int | None = None
    chunks: int = 0


@dataclass
class DrainReport:
    """Counts of one drain; `by_reason` counts skipped files by refusal code."""

    indexed: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.indexed + self.unchanged + self.skipped + self.failed

    def count(self, outcome: FileOutcome) -> None:
        if outcome.status == "indexed":
            self.indexed += 1
        elif outcome.status == "unchanged":
            self.unchanged += 1
        elif outcome.status == "failed":
            self.failed += 1
        else:
            self.skipped += 1
            reason = outcome.reason or "unknown"
            self.by_reason[reason] = self.by_reason.get(reason, 0) + 1


@dataclass(frozen=True)
class _Prepared:
    """A changed file, ready to write: everything here was computed off the event loop."""

    rel_path: str
    content_hash: str
    size: int
    line_count: int
    keywords: list[str]
    chunks: list[Chunk]


async def index_file(
    db: Database,
    settings: Settings,
    project_id: int,
    project_dir: str | os.PathLike[str],
    path: str,
    *,
    gitignore: GitIgnore | None = None,
) -> FileOutcome:
    """Bring the index of `path` (absolute, or relative to the project) in line with the file on disk.

    `gitignore` lets a caller indexing many files of one project share git's answers.
    """
    try:
        admitted = await asyncio.to_thread(
            admit, project_dir, path, max_bytes=settings.files_max_bytes, gitignore=gitignore
        )
    except OSError as exc:
        return FileOutcome("failed", f"cannot read {path}: {exc.strerror or exc}")
    if isinstance(admitted, Refusal):
        await _forget(db, project_id, admitted.relative or _lexical_relative(project_dir, path))
        return FileOutcome("skipped", admitted.reason)
    content_hash = hashlib.sha256(admitted.data).hexdigest()
    stored = await db.fetchone(
        "SELECT id, content_hash FROM file_documents WHERE project_id = ? AND rel_path = ?",
        (project_id, admitted.path.relative),
    )
    if stored is not None and stored["content_hash"] == content_hash:
        chunks = await db.scalar("SELECT count(*) FROM file_chunks WHERE document_id = ?", (stored["id"],))
        return FileOutcome("unchanged", None, int(stored["id"]), int(chunks or 0))
    prepared = await asyncio.to_thread(_prepare, admitted, content_hash, settings)
    async with db.write() as conn:
        document_id = await _write(conn, project_id, prepared)
    return FileOutcome("indexed", None, document_id, len(prepared.chunks))


def _prepare(admitted: Admitted, content_hash: str, settings: Settings) -> _Prepared:
    # Chunks and keywords come from the redacted text: both are stored, and chunks are embedded.
    text = redact(admitted.text)
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    rel_path = admitted.path.relative
    return _Prepared(
        rel_path=rel_path,
        content_hash=content_hash,
        size=len(admitted.data),
        line_count=lines,
        keywords=document_keywords(rel_path, text),
        chunks=chunk_text(text, max_tokens=settings.files_chunk_tokens, overlap=settings.files_chunk_overlap),
    )


async def _write(conn: aiosqlite.Connection, project_id: int, prepared: _Prepared) -> int:
    """Upsert the document and reconcile its chunks by index; returns the document id."""
    async with conn.execute(
        """
        INSERT INTO file_documents (project_id, rel_path, content_hash, size, line_count, keywords)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (project_id, rel_path) DO UPDATE SET
            content_hash = excluded.content_hash,
            size = excluded.size,
            line_count = excluded.line_count,
            keywords = excluded.keywords,
            indexed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        RETURNING id
        """,
        (
            project_id,
            prepared.rel_path,
            prepared.content_hash,
            prepared.size,
            prepared.line_count,
            json.dumps(prepared.keywords),
        ),
    ) as cursor:
        row = await cursor.fetchone()
    assert row is not None  # RETURNING always yields the upserted row
    document_id = int(row[0])
    async with conn.execute(
        "SELECT chunk_index, content, start_line, end_line, tokens FROM file_chunks WHERE document_id = ?",
        (document_id,),
    ) as cursor:
        existing = {int(r[0]): (r[1], int(r[2]), int(r[3]), int(r[4])) for r in await cursor.fetchall()}
    inserts: list[tuple[object, ...]] = []
    content_updates: list[tuple[object, ...]] = []
    place_updates: list[tuple[object, ...]] = []
    for chunk in prepared.chunks:
        place = (chunk.start_line, chunk.end_line, chunk.tokens)
        old = existing.get(chunk.index)
        if old is None:
            inserts.append((document_id, chunk.index, *place, chunk.content))
        elif old[0] != chunk.content:
            content_updates.append((chunk.content, *place, document_id, chunk.index))
        elif old[1:] != place:
            # Same text at other lines (lines were added above it): no re-embedding needed.
            place_updates.append((*place, document_id, chunk.index))
    await conn.execute(
        "DELETE FROM file_chunks WHERE document_id = ? AND chunk_index >= ?",
        (document_id, len(prepared.chunks)),
    )
    await conn.executemany(
        """
        UPDATE file_chunks SET content = ?, start_line = ?, end_line = ?, tokens = ?
        WHERE document_id = ? AND chunk_index = ?
        """,
        content_updates,
    )
    await conn.executemany(
        """
        UPDATE file_chunks SET start_line = ?, end_line = ?, tokens = ?
        WHERE document_id = ? AND chunk_index = ?
        """,
        place_updates,
    )
    await conn.executemany(
        """
        INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, tokens, content)
        VALUES (?, ?, ?, ?, ?, ?)
        """,
        inserts,
    )
    return document_id


async def _forget(db: Database, project_id: int, rel_path: str | None) -> None:
    """Drop the document of a file that may no longer be indexed (chunks and vectors follow)."""
    if not rel_path:
        return
    exists = await db.scalar(
        "SELECT 1 FROM file_documents WHERE project_id = ? AND rel_path = ?", (project_id, rel_path)
    )
    if exists:
        async with db.write() as conn:
            await conn.execute(
                "DELETE FROM file_documents WHERE project_id = ? AND rel_path = ?", (project_id, rel_path)
            )


def _lexical_relative(project_dir: str | os.PathLike[str], path: str) -> str | None:
    """`path` relative to the project by its spelling alone, for a file that no longer resolves inside
    it (replaced by a symlink pointing out, say) but whose old document should still go."""
    absolute = Path(os.path.abspath(os.path.join(project_dir, os.path.expanduser(path))))
    try:
        relative = absolute.relative_to(os.path.abspath(project_dir))
    except ValueError:
        return None
    return relative.as_posix() if relative.parts else None


async def drain_requests(db: Database, settings: Settings, *, limit: int | None = None) -> DrainReport:
    """Index every pending `file_requests` row (oldest first, at most `limit`) and record how it went.

    Each file is read in the checkout holding it (a worktree of the project, else its root), so its
    `rel_path` is the same in every worktree. A request touched again while it was being indexed
    stays pending (its `requested_at` moved), so the newer touch is not lost. Never raises for one
    file: an unexpected error marks it failed.
    """
    rows = await db.fetchall(
        """
        SELECT r.id, r.project_id, r.path, r.requested_at, coalesce((
                   SELECT pp.checkout FROM project_paths AS pp
                   WHERE pp.project_id = r.project_id AND pp.checkout IS NOT NULL
                     AND (r.path = pp.checkout
                          OR substr(r.path, 1, length(pp.checkout) + 1) = pp.checkout || '/')
                   ORDER BY length(pp.checkout) DESC LIMIT 1
               ), p.path) AS project_dir
        FROM file_requests AS r JOIN projects AS p ON p.id = r.project_id
        WHERE r.status = 'pending'
        ORDER BY r.requested_at, r.id
        LIMIT ?
        """,
        (-1 if limit is None else limit,),
    )
    report = DrainReport()
    ignores: dict[str, GitIgnore] = {}
    for row in rows:
        gitignore = ignores.get(row["project_dir"])
        if gitignore is None:
            gitignore = ignores[row["project_dir"]] = GitIgnore(row["project_dir"])
            await asyncio.to_thread(_prime, gitignore, row["project_dir"], rows)
        try:
            outcome = await index_file(
                db, settings, row["project_id"], row["project_dir"], row["path"], gitignore=gitignore
            )
        except Exception as exc:  # a bug or a database error must not stop the other files
            log.exception("indexing %s failed", row["path"])
            outcome = FileOutcome("failed", f"{type(exc).__name__}: {exc}")
        report.count(outcome)
        async with db.write() as conn:
            await conn.execute(
                """
                UPDATE file_requests
                SET status = ?, outcome = ?, attempts = attempts + 1,
                    done_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                WHERE id = ? AND status = 'pending' AND requested_at = ?
                """,
                (outcome.status, outcome.reason, row["id"], row["requested_at"]),
            )
    return report


def _prime(gitignore: GitIgnore, project_dir: str, rows: Sequence[sqlite3.Row]) -> None:
    """Ask git about all pending paths of one checkout at once instead of one process per file."""
    if redacted_dir(project_dir) is not None:  # no such directory: every file of it is refused unread
        return
    relatives = []
    for row in rows:
        if row["project_dir"] == project_dir:
            located = resolve_in_project(project_dir, row["path"])
            if located is not None:
                relatives.append(located.relative)
    gitignore.prime(relatives)
