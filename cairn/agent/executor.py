"""The executor: the one writer of memory (invariant 4), applying an agent's result exactly once.

`apply` does everything in one `BEGIN IMMEDIATE` transaction: it first moves every cursor of the
batch from `from_line` to `to_line` — refusing with `StaleBatchError` if any cursor is no longer
where the batch was planned — then re-checks the result on the write connection (`validate.check`,
so nothing changes between check and write), writes the accepted items, and records the run in
`index_runs`. A crash before the commit leaves nothing and the batch is planned again; after it,
the moved cursors mean nothing is redone (invariant 3). Vectors follow through the outbox triggers;
the caller runs `Store.sync_vectors()` after the commit (invariant 1). If `apply` raises, nothing is
written — the caller records the failure with `record_failed_run`, which leaves the cursors alone.

How the agent's result is written (validation decisions are in `cairn.agent.validate`, entity
matching in `cairn.agent.entities`):

- **Spans.** Topic changes of a session apply in line order: each closes the session's current span
  (`end_line = start_line - 1`, never before its start) and opens a sibling (the closed span's
  parent and depth) with `summary = reason`. An idea belongs to the span current at its line after
  these changes. A session with ideas but no open span before its first change gets a default span
  from its first batch line, named after the first idea's entities (up to three) or "Session start",
  so every idea has a span.
- **Times.** `valid_until`, `answered_at` and `completed_at` are the timestamp of the message that
  superseded, answered or completed (when the model did it matters, not when we indexed); now when
  the message has none. Usage (`last_used_at`) and the run are stamped with the time of the apply.
- **Supersedes** keeps the old idea and sets its `superseded_by`/`valid_until` — once: an idea
  already superseded keeps its first successor (the relation row is still stored).
- **Dependency order.** Every new idea is inserted first; then the links, which may name a new idea
  by its key (`cairn.agent.links`): entity links, answered questions, completed todos, relations.
  A question asked and answered in one batch is thus answered in the transaction that stores it.
- **Answers.** `answered_questions` apply first; an `answers` relation then also marks a still-open
  question or problem answered, with the new idea as `answered_by` and its content as resolution.
  An answered question's `answered_by` is the first new idea at the answering line other than the
  question itself, if any; an empty summary falls back to that idea's content.
- **Several new ideas at one (session, line)**: a relation from that place starts at each of them;
  the first is the one that supersedes or answers. A relation with `from_key` starts at that idea.
- **Search associations** go through `cairn.learning.associations.record_association` like learned ones:
  the file must exist inside the project of one of the batch's sessions (a relative path is relative
  to that project); the same (query, file) again merges into its row (`times_learned + 1`); the file
  is queued for indexing. One that names no such file is counted in `search_associations_rejected`,
  not in `rejected`: that is for items wrong about the batch, while a file may simply not exist on
  this machine (a transcript copied from elsewhere, a file deleted since).
- **Skipped lines** are recorded per file with the run's id; a line already recorded stays as it was.
- **Corrections.** A new idea where the person forgot one as wrong (`cairn.store.corrections`: same
  place, same words or else the same intent) is not stored, and counted in `forgotten_skipped`; links
  that name it are dropped as for an idea the conflict clause left out. Other corrections (answered,
  done, declined, importance) are applied by the store's `ideas_corrected` trigger as the row goes in.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosqlite

from cairn.agent.batches import PlannedBatch
from cairn.agent.entities import Embed, EntityResolver, semantic_matches
from cairn.agent.links import Target
from cairn.agent.schema import IndexResult, TopicChange
from cairn.agent.validate import Checked, NewIdea, Rejected, Resolution, SpanRow, check, connection_fetch
from cairn.errors import Failure
from cairn.learning.associations import record_association
from cairn.store.corrections import forgotten_at
from cairn.store.db import Database
from cairn.store.store import iso_utc

__all__ = [
    "ApplyStats",
    "Rejected",
    "RunRecord",
    "StaleBatchError",
    "apply",
    "record_failed_run",
    "validate",
]

DEFAULT_SPAN_NAME = "Session start"


class StaleBatchError(Failure):
    """A cursor of the batch has moved since it was planned: another run applied these messages."""


@dataclass
class RunRecord:
    """One agent run's accounting, filled by the runner (invariant 6)."""

    model: str
    prompt_version: str
    mode: str
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    requests: int = 0
    seconds: float = 0.0
    outcome: str = "ok"  # ok | tool_budget | usage_limit | failed | invalid_output
    error: str | None = None


@dataclass
class ApplyStats:
    """What one `apply` wrote; JSON-able with `asdict` (the CLI prints it, `index_runs.applied` keeps it)."""

    ideas_by_intent: dict[str, int] = field(default_factory=dict)
    relations_by_type: dict[str, int] = field(default_factory=dict)
    questions_answered: int = 0
    todos_completed: int = 0
    spans_opened: int = 0
    spans_updated: int = 0
    entities_created: int = 0
    entities_reused: int = 0
    activated: int = 0
    skipped_lines: int = 0
    search_associations: int = 0
    search_associations_rejected: int = 0
    rejected: int = 0
    noise_skipped: int = 0
    """Noise messages the batch's cursors passed without sending (see `cairn.agent.batches`)."""
    context_messages: int = 0
    """Messages the batch sent as context only: compact summaries, compaction transcripts."""
    forgotten_skipped: int = 0
    """New ideas not stored: the person forgot an idea there as wrong (`cairn.store.corrections`)."""
    run_id: int = 0


async def validate(
    db: Database, planned: PlannedBatch, result: IndexResult
) -> tuple[IndexResult, list[Rejected]]:
    """The part of `result` that `apply` would write, and what it would reject, on committed data."""
    checked = await check(db.fetchall, planned, result)
    return checked.result(), checked.rejected


async def apply(
    db: Database,
    planned: PlannedBatch,
    result: IndexResult,
    run: RunRecord,
    *,
    embed: Embed | None = None,
) -> ApplyStats:
    """Validate and write `result` and move the batch's cursors, in one transaction.

    `embed` enables the embedding check of entity names (see `cairn.agent.entities`); it runs
    before the transaction so the write lock is never held while embedding. Raises
    `StaleBatchError` (nothing applied) when a cursor is no longer at its planned `from_line`.
    """
    if not planned.cursors:
        raise ValueError("a batch without cursors cannot be applied exactly once")
    refs = [ref for idea in result.ideas for ref in idea.entities]
    semantic = await semantic_matches(db, refs, embed) if embed is not None and refs else {}
    now = datetime.now(UTC)
    async with db.write() as conn:
        await _advance_cursors(conn, planned)
        run_id = await _insert_run(conn, planned, run, now, [])
        checked = await check(connection_fetch(conn), planned, result)
        writer = _Writer(conn, checked, iso_utc(now), run_id, EntityResolver(conn, semantic))
        stats = await writer.write()
        stats.noise_skipped, stats.context_messages = planned.noise_skipped, planned.context_messages
        counts = {k: v for k, v in asdict(stats).items() if k != "run_id"}
        await conn.execute(
            "UPDATE index_runs SET applied = ?, rejected_items = ? WHERE id = ?",
            (json.dumps(counts), _rejected_json(checked.rejected), run_id),
        )
    return stats


async def record_failed_run(
    db: Database, planned: PlannedBatch, run: RunRecord, rejected: Sequence[Rejected] = ()
) -> int:
    """Record a run whose result was not applied; its cursors stay, so the batch is retried.

    A failed run recorded as `ok` would read as success in the accounting, so `ok` becomes `failed`.
    """
    if run.outcome == "ok":
        run = replace(run, outcome="failed")
    async with db.write() as conn:
        return await _insert_run(conn, planned, run, datetime.now(UTC), rejected)


async def _advance_cursors(conn: aiosqlite.Connection, planned: PlannedBatch) -> None:
    """Move every cursor of the batch, or raise `StaleBatchError` if one is not where it was planned."""
    for cursor in planned.cursors:
        async with conn.execute(
            "UPDATE transcript_files SET indexed_line = ? WHERE id = ? AND indexed_line = ?",
            (cursor.to_line, cursor.file_id, cursor.from_line),
        ) as moved:
            if moved.rowcount == 1:
                continue
        async with conn.execute(
            "SELECT indexed_line FROM transcript_files WHERE id = ?", (cursor.file_id,)
        ) as found:
            row = await found.fetchone()
        where = "the file is no longer stored" if row is None else f"its cursor is at line {row[0]}"
        raise StaleBatchError(
            f"batch planned from line {cursor.from_line} of {cursor.path}, but {where}: another run "
            "already applied it (or the cursor was reset); plan again"
        )


async def _insert_run(
    conn: aiosqlite.Connection,
    planned: PlannedBatch,
    run: RunRecord,
    finished: datetime,
    rejected: Sequence[Rejected],
) -> int:
    async with conn.execute(
        """
        INSERT INTO index_runs (
            started_at, finished_at, model, prompt_version, mode, input_tokens, output_tokens,
            tool_calls, requests, seconds, outcome, error, rejected_items, applied, messages, sessions
        ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        RETURNING id
        """,
        (
            iso_utc(finished - timedelta(seconds=max(run.seconds, 0.0))),
            iso_utc(finished),
            run.model,
            run.prompt_version,
            run.mode,
            run.input_tokens,
            run.output_tokens,
            run.tool_calls,
            run.requests,
            run.seconds,
            run.outcome,
            run.error,
            _rejected_json(rejected),
            "{}",
            planned.message_count,
            len({u.session for u in planned.batch.updates}),
        ),
    ) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


def _rejected_json(rejected: Sequence[Rejected]) -> str:
    return json.dumps([r.model_dump(mode="json") for r in rejected], ensure_ascii=False)


class _Writer:
    """Writes one checked result on the transaction's connection, counting what it does."""

    def __init__(
        self, conn: aiosqlite.Connection, checked: Checked, now: str, run_id: int, entities: EntityResolver
    ) -> None:
        self.conn = conn
        self.checked = checked
        self.view = checked.view
        self.now = now
        self.run_id = run_id
        self.entities = entities
        self.stats = ApplyStats(rejected=len(checked.rejected), run_id=run_id)
        self.ideas_by_intent: Counter[str] = Counter()
        self.relations_by_type: Counter[str] = Counter()
        # Ids of this result's new ideas by (session, line), in result order; their contents by id;
        # and by their index in `checked.ideas` (None for one the conflict clause left out).
        self.new_at: dict[tuple[str, int], list[int]] = {}
        self.content: dict[int, str] = {}
        self.ids: list[int | None] = []
        # Indexes in `checked.ideas` of the ideas the person forgot as wrong: never stored, and never
        # the first idea a default span is named after.
        self.forgotten: set[int] = set()

    async def write(self) -> ApplyStats:
        await self._find_forgotten()
        await self._update_spans()
        spans = await self._open_spans()
        await self._insert_ideas(spans)
        await self._related_to()
        await self._link_entities()
        await self._resolve(self.checked.answered, answered=True)
        await self._resolve(self.checked.completed, answered=False)
        await self._relations()
        await self._activate()
        await self._skip_lines()
        await self._search_associations()
        self.stats.ideas_by_intent = dict(sorted(self.ideas_by_intent.items()))
        self.stats.relations_by_type = dict(sorted(self.relations_by_type.items()))
        self.stats.entities_created = len(self.entities.created)
        self.stats.entities_reused = len(self.entities.reused)
        return self.stats

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        cursor = await self.conn.execute(sql, params)
        changed = cursor.rowcount
        await cursor.close()
        return changed

    async def _insert(self, sql: str, params: Sequence[Any]) -> int | None:
        """Run an `INSERT … RETURNING id`; None when a conflict left the row out."""
        async with self.conn.execute(sql, params) as cursor:
            row = await cursor.fetchone()
        return None if row is None else int(row[0])

    async def _find_forgotten(self) -> None:
        async with self.conn.execute(
            "SELECT 1 FROM idea_corrections WHERE state = 'forgotten' LIMIT 1"
        ) as cursor:
            if await cursor.fetchone() is None:
                return  # the usual case: nothing was ever forgotten as wrong
        for index, new in enumerate(self.checked.ideas):
            idea = new.idea
            if await forgotten_at(
                self.conn, new.file.file_id, idea.source_line, new.content_hash, idea.intent
            ):
                self.forgotten.add(index)
        self.stats.forgotten_skipped = len(self.forgotten)

    # Spans

    async def _update_spans(self) -> None:
        for update in self.checked.topic_updates:
            self.stats.spans_updated += await self._execute(
                """
                UPDATE topic_spans SET name = coalesce(?, name), summary = coalesce(?, summary),
                    updated_at = ? WHERE id = ?
                """,
                (update.name, update.summary, self.now, update.span_id),
            )

    async def _open_spans(self) -> dict[str, list[tuple[int, int]]]:
        """Per session, `(start_line, span_id)` in line order: the span an idea at a line belongs to."""
        changes: dict[str, list[TopicChange]] = {}
        for change in self.checked.topic_changes:
            changes.setdefault(change.session, []).append(change)
        ideas: dict[str, list[NewIdea]] = {}
        for index, new in enumerate(self.checked.ideas):
            if index not in self.forgotten:
                ideas.setdefault(new.idea.session, []).append(new)
        segments: dict[str, list[tuple[int, int]]] = {}
        for session in dict.fromkeys([*changes, *ideas]):
            ordered = sorted(changes.get(session, []), key=lambda c: c.start_line)
            first_change = ordered[0].start_line if ordered else None
            current = self.checked.open_spans.get(session)
            session_ideas = sorted(ideas.get(session, []), key=lambda n: n.idea.source_line)
            if (
                current is None
                and session_ideas
                and (first_change is None or session_ideas[0].idea.source_line < first_change)
            ):
                current = await self._default_span(session, session_ideas[0])
            segments[session] = [] if current is None else [(-1, current.id)]
            for change in ordered:
                if current is not None:
                    await self._execute(
                        "UPDATE topic_spans SET end_line = max(?, start_line), updated_at = ? WHERE id = ?",
                        (change.start_line - 1, self.now, current.id),
                    )
                batch_file = self.view.file_at(session, change.start_line)
                current = await self._new_span(
                    session,
                    None if batch_file is None else batch_file.file_id,
                    change.new_topic_name,
                    change.reason,
                    change.start_line,
                    current,
                )
                segments[session].append((change.start_line, current.id))
        return segments

    async def _default_span(self, session: str, first: NewIdea) -> SpanRow:
        names = list(dict.fromkeys(ref.name.strip() for ref in first.idea.entities))[:3]
        start = min(self.view.session_lines(session))
        return await self._new_span(
            session, first.file.file_id, ", ".join(names) or DEFAULT_SPAN_NAME, "", start, None
        )

    async def _new_span(
        self, session: str, file_id: int | None, name: str, summary: str, start: int, sibling: SpanRow | None
    ) -> SpanRow:
        parent, depth = (None, 0) if sibling is None else (sibling.parent_id, sibling.depth)
        span_id = await self._insert(
            """
            INSERT INTO topic_spans (session_id, file_id, parent_id, name, summary, start_line, depth)
            VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id
            """,
            (session, file_id, parent, name, summary, start, depth),
        )
        assert span_id is not None
        self.stats.spans_opened += 1
        return SpanRow(span_id, session, start, parent, depth)

    # Ideas and entities

    async def _insert_ideas(self, spans: dict[str, list[tuple[int, int]]]) -> None:
        for index, new in enumerate(self.checked.ideas):
            idea = new.idea
            if index in self.forgotten:
                self.ids.append(None)
                continue
            span_id = _span_at(spans.get(idea.session, []), idea.source_line)
            idea_id = await self._insert(
                """
                INSERT INTO ideas (session_id, span_id, source_file_id, source_line, intent, content,
                                   content_hash, confidence, importance, state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (source_file_id, source_line, content_hash) DO NOTHING
                RETURNING id
                """,
                (
                    idea.session,
                    span_id,
                    new.file.file_id,
                    idea.source_line,
                    idea.intent,
                    idea.content,
                    new.content_hash,
                    idea.confidence,
                    idea.importance,
                    idea.state,
                ),
            )
            self.ids.append(idea_id)
            if idea_id is None:
                continue  # stored already (the check rejects these; the conflict clause is the backstop)
            self.ideas_by_intent[idea.intent] += 1
            self.new_at.setdefault((idea.session, idea.source_line), []).append(idea_id)
            self.content[idea_id] = idea.content
            for ref in idea.entities:
                entity_id = await self.entities.resolve(ref)
                if entity_id is not None:
                    await self._tag(idea_id, entity_id)

    def _id(self, target: Target) -> int | None:
        """The id a checked reference names: a stored idea's, or the one a new idea was given."""
        if target.stored is not None:
            return target.stored
        assert target.new is not None
        return self.ids[target.new]

    async def _related_to(self) -> None:
        """Each new idea's `related_to`, now that every idea it may name by key has an id."""
        for index, new in enumerate(self.checked.ideas):
            from_id = self.ids[index]
            for target in new.related:
                to_id = self._id(target)
                if from_id is not None and to_id is not None:
                    await self._relate(from_id, to_id, "relates_to")

    async def _tag(self, idea_id: int, entity_id: int) -> None:
        await self._execute(
            "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (idea_id, entity_id),
        )

    async def _link_entities(self) -> None:
        for link in self.checked.entity_links:
            for (_session, line), idea_ids in self.new_at.items():
                if line != link.idea_source_line:
                    continue
                for idea_id in idea_ids:
                    await self._tag(idea_id, link.entity_id)
            await self.entities.touch(link.entity_id)

    # Questions, todos, relations

    async def _resolve(self, items: list[Resolution], *, answered: bool) -> None:
        for item in items:
            idea_id = self._id(item.target)
            if idea_id is None:
                continue
            answering = [i for i in self.new_at.get((item.session, item.line), []) if i != idea_id]
            by = answering[0] if answering else None
            when = self.view.timestamp(item.session, item.line) or self.now
            resolution = item.summary or (self.content[by] if by is not None else None)
            if answered:
                self.stats.questions_answered += await self._execute(
                    """
                    UPDATE ideas SET answered_by = ?, answered_at = ?, resolved_line = ?, resolution = ?,
                        updated_at = ? WHERE id = ? AND answered_at IS NULL
                    """,
                    (by, when, item.line, resolution, self.now, idea_id),
                )
            else:
                self.stats.todos_completed += await self._execute(
                    """
                    UPDATE ideas SET completed_at = ?, resolved_line = ?, resolution = ?, updated_at = ?
                    WHERE id = ? AND completed_at IS NULL
                    """,
                    (when, item.line, resolution, self.now, idea_id),
                )

    async def _relations(self) -> None:
        for link in self.checked.relations:
            relation, to_id = link.relation, self._id(link.target)
            starts = [i for i in (self.ids[index] for index in link.starts) if i is not None]
            if to_id is None or not starts:
                continue
            for from_id in starts:
                await self._relate(from_id, to_id, relation.relation_type)
            first = starts[0]
            source = self.checked.ideas[link.starts[0]].idea
            when = self.view.timestamp(source.session, source.source_line) or self.now
            if relation.relation_type == "supersedes":
                await self._execute(
                    """
                    UPDATE ideas SET superseded_by = ?, valid_until = ?, updated_at = ?
                    WHERE id = ? AND superseded_by IS NULL
                    """,
                    (first, when, self.now, to_id),
                )
            elif relation.relation_type == "answers":
                self.stats.questions_answered += await self._execute(
                    """
                    UPDATE ideas SET answered_by = ?, answered_at = ?, resolved_line = ?, resolution = ?,
                        updated_at = ?
                    WHERE id = ? AND intent IN ('question', 'problem') AND answered_at IS NULL
                    """,
                    (first, when, source.source_line, self.content[first], self.now, to_id),
                )

    async def _relate(self, from_id: int, to_id: int, relation_type: str) -> None:
        added = await self._execute(
            """
            INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, ?)
            ON CONFLICT DO NOTHING
            """,
            (from_id, to_id, relation_type),
        )
        if added:
            self.relations_by_type[relation_type] += 1

    # Activation, skipped lines, search associations

    async def _activate(self) -> None:
        if self.checked.activated:
            self.stats.activated = await self._execute(
                """
                UPDATE ideas SET usage_count = usage_count + 1, last_used_at = ?
                WHERE id IN (SELECT value FROM json_each(?))
                """,
                (self.now, json.dumps(self.checked.activated)),
            )

    async def _skip_lines(self) -> None:
        for batch_file, line in self.checked.skip_lines:
            self.stats.skipped_lines += await self._execute(
                "INSERT INTO skipped_lines (file_id, line, run_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (batch_file.file_id, line, self.run_id),
            )

    async def _search_associations(self) -> None:
        projects = await self._batch_projects() if self.checked.search_associations else []
        learned_at = datetime.fromisoformat(self.now)
        for association in self.checked.search_associations:
            for project_id, project_dir in projects:
                outcome = await record_association(
                    self.conn,
                    project_id=project_id,
                    project_dir=project_dir,
                    query=association.query,
                    file_path=association.file_path,
                    source="agent",
                    reason=association.reason or None,
                    learned_at=learned_at,
                )
                if outcome != "rejected":
                    self.stats.search_associations += 1
                    break
            else:
                self.stats.search_associations_rejected += 1

    async def _batch_projects(self) -> list[tuple[int, str]]:
        """The projects of the batch's sessions (id, the checkout each ran in), in batch order, each once."""
        async with self.conn.execute(
            """
            SELECT p.id, coalesce(pp.checkout, p.path) FROM json_each(?) AS b
            JOIN sessions AS s ON s.id = b.value JOIN projects AS p ON p.id = s.project_id
            LEFT JOIN project_paths AS pp ON pp.path = s.cwd AND pp.project_id = p.id
            ORDER BY b.key
            """,
            (json.dumps(list(self.view.sessions)),),
        ) as cursor:
            rows = await cursor.fetchall()
        return list(dict.fromkeys((int(row[0]), str(row[1])) for row in rows))


def _span_at(segments: list[tuple[int, int]], line: int) -> int | None:
    """The span of the last segment starting at or before `line` (the first one if none does)."""
    found = segments[0][1] if segments else None
    for start, span_id in segments:
        if start <= line:
            found = span_id
    return found
