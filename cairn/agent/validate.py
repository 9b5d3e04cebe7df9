"""Checking an indexing agent's result against its batch and the store, item by item.

Invariant 4: the executor validates every id and line before writing. An invalid item is dropped and
reported as a `Rejected` (stored in `index_runs.rejected_items`); the rest of the result still
applies, because one hallucinated id should not cost a batch's worth of ideas. `check` reads through
a `Fetch`, so the executor runs the very same checks on its write connection inside the transaction
that applies the result — nothing can change between the check and the write.

Decisions where seed 003 leaves room:

- **Sessions and files** must be named exactly as in the batch. `source_file` may also be given by
  basename when exactly one of that session's files in the batch has it (models shorten paths; a
  transcript's basename is its session uuid, and a subagent file's is its agent id).
- **Lines** are checked per file: an idea's `source_line` must be the first line of a message of
  that file in the batch (a session's main transcript and its subagents' number lines separately).
- **Context is not a source.** A new idea whose `source_line` is a context message (role
  `context`: a compact summary, a compaction subagent's message) is rejected: it restates earlier
  conversation, so what it holds is stored already or was never said in this batch. Activating
  stored ideas because a summary mentions them is fine.
- **Confidence** below `MIN_CONFIDENCE` (0.3, seed 003 open question 3) is rejected, not stored.
- **Duplicates** (same file, line and `idea_hash` of the content) are rejected, whether repeated in
  the result or already stored. Every other list rejects exact repeats too, so a rejection always
  means "this item was not applied".
- **`related_to`**: unknown ids are dropped (each reported under `ideas.related_to`) and the idea is
  kept — a wrong cross-reference does not make the idea itself wrong. Entity names with nothing to
  match on (`"..."`) are dropped the same way, under `ideas.entities`.
- **Importance** left out by the model gets seed 003's default for the intent, not the schema's 0.5.
- **Relations** start at a new idea of this result, found by (`from_session`, `from_line`); a
  relation to the stored copy of that very idea is a self-relation.
- **Answered questions / completed todos**: the line is looked up in the question's (todo's)
  session if that session is in the batch, else in the one batch session that has the line;
  ambiguity is rejected.
- **Topic changes**: `from_span_id`, when given, must be the session's open span as stored — the
  open span (`end_line IS NULL`) that starts last, since a parent stays open around its children.
  Several changes of one session in one result may all name it: the model cannot know the ids of
  the spans the earlier changes open.
- **Topic updates** must change something (a blank name counts as no name) and name the span's own
  session, which need not be in the batch: a later batch may correct an older span's summary.
- **Entity links** go to every new idea at `idea_source_line` (the seed gives no session; a line shared
  by two sessions' new ideas links both).
- **Skip lines** are recorded for every batch file with a message at that line — except a file where
  the same result extracts an idea at that line (the two decisions contradict; the idea wins).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiosqlite
from pydantic import BaseModel

from cairn.agent.batches import PlannedBatch
from cairn.agent.entities import EntityKey, entity_key
from cairn.agent.schema import (
    CONTEXT_ROLE,
    DEFAULT_IMPORTANCE,
    RELATION_TYPES,
    AnsweredQuestion,
    CompletedTodo,
    EntityLink,
    EntityRef,
    Idea,
    IndexResult,
    Relation,
    SearchAssociation,
    TopicChange,
    TopicUpdate,
)
from cairn.store.store import idea_hash

MIN_CONFIDENCE = 0.3

Fetch = Callable[[str, Sequence[Any]], Awaitable[list[sqlite3.Row]]]
"""Runs a read query: `Database.fetchall` (committed data) or `connection_fetch(conn)` (in a write)."""


class Rejected(BaseModel):
    """One item of a result that was not applied, and why (e.g. `field="relations"`)."""

    field: str
    item: dict[str, Any]
    reason: str


def connection_fetch(conn: aiosqlite.Connection) -> Fetch:
    """A `Fetch` on `conn`, so checks inside a write transaction see its own uncommitted state."""

    async def fetch(sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with conn.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    return fetch


# ---------------------------------------------------------------------------------------------------
# What the result may point at


@dataclass(frozen=True)
class BatchFile:
    """One transcript file of the batch: its cursor's file id and the message lines it sent."""

    file_id: int
    path: str
    session: str
    lines: frozenset[int]
    timestamps: dict[int, str]
    context_lines: frozenset[int] = frozenset()
    """Lines of context messages (`CONTEXT_ROLE`): no new idea may be anchored there."""


class BatchView:
    """The batch's sessions, files and lines, for resolving the references of a result."""

    def __init__(self, planned: PlannedBatch) -> None:
        cursors = {c.path: c for c in planned.cursors}
        self.files: list[BatchFile] = []
        for update in planned.batch.updates:
            cursor = cursors.get(update.file_path)
            if cursor is None:
                raise ValueError(f"batch update for {update.file_path} has no cursor; it cannot be applied")
            stamps: dict[int, str] = {}
            for message in update.messages:
                if message.timestamp:
                    stamps.setdefault(message.line, message.timestamp)
            self.files.append(
                BatchFile(
                    cursor.file_id,
                    update.file_path,
                    update.session,
                    frozenset(m.line for m in update.messages),
                    stamps,
                    frozenset(m.line for m in update.messages if m.role == CONTEXT_ROLE),
                )
            )
        self.sessions: dict[str, list[BatchFile]] = {}
        for batch_file in self.files:
            self.sessions.setdefault(batch_file.session, []).append(batch_file)

    def file_for(self, session: str, source_file: str) -> BatchFile | None:
        """The session's batch file named `source_file`: exact path, else a unique basename."""
        files = self.sessions.get(session, [])
        for batch_file in files:
            if batch_file.path == source_file:
                return batch_file
        name = os.path.basename(source_file)
        named = [f for f in files if os.path.basename(f.path) == name]
        return named[0] if len(named) == 1 else None

    def session_lines(self, session: str) -> set[int]:
        return {line for f in self.sessions.get(session, []) for line in f.lines}

    def sessions_with_line(self, line: int) -> list[str]:
        return list(dict.fromkeys(f.session for f in self.files if line in f.lines))

    def file_at(self, session: str, line: int) -> BatchFile | None:
        """The first of the session's batch files with a message at `line`."""
        return next((f for f in self.sessions.get(session, []) if line in f.lines), None)

    def timestamp(self, session: str, line: int) -> str | None:
        batch_file = self.file_at(session, line)
        return None if batch_file is None else batch_file.timestamps.get(line)


# ---------------------------------------------------------------------------------------------------
# What the check produces


@dataclass(frozen=True)
class NewIdea:
    """An accepted idea (content stripped, bad `related_to` ids and entities dropped, importance set)."""

    idea: Idea
    file: BatchFile
    content_hash: str


@dataclass(frozen=True)
class Resolution:
    """An accepted answered question or completed todo, with the session its line was found in."""

    idea_id: int
    session: str
    line: int
    summary: str


@dataclass(frozen=True)
class SpanRow:
    id: int
    session_id: str
    start_line: int
    parent_id: int | None
    depth: int

    @classmethod
    def of(cls, row: sqlite3.Row) -> SpanRow:
        return cls(row["id"], row["session_id"], row["start_line"], row["parent_id"], row["depth"])


@dataclass
class Checked:
    """A result split into what may be applied (resolved against the batch) and what may not."""

    view: BatchView
    ideas: list[NewIdea] = field(default_factory=list)
    topic_updates: list[TopicUpdate] = field(default_factory=list)
    topic_changes: list[TopicChange] = field(default_factory=list)
    answered: list[Resolution] = field(default_factory=list)
    completed: list[Resolution] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    entity_links: list[EntityLink] = field(default_factory=list)
    skip_lines: list[tuple[BatchFile, int]] = field(default_factory=list)
    activated: list[int] = field(default_factory=list)
    search_associations: list[SearchAssociation] = field(default_factory=list)
    open_spans: dict[str, SpanRow] = field(default_factory=dict)
    rejected: list[Rejected] = field(default_factory=list)

    def reject(self, name: str, item: BaseModel | dict[str, Any], reason: str) -> None:
        data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
        self.rejected.append(Rejected(field=name, item=data, reason=reason))

    def result(self) -> IndexResult:
        """The accepted part as an `IndexResult`: checking it again rejects nothing."""
        return IndexResult(
            ideas=[n.idea for n in self.ideas],
            topic_updates=self.topic_updates,
            topic_changes=self.topic_changes,
            answered_questions=[
                AnsweredQuestion(
                    question_idea_id=r.idea_id, answered_at_line=r.line, answer_summary=r.summary
                )
                for r in self.answered
            ],
            completed_todos=[
                CompletedTodo(todo_idea_id=r.idea_id, completed_at_line=r.line, completion_summary=r.summary)
                for r in self.completed
            ],
            relations=self.relations,
            entity_links=self.entity_links,
            skip_lines=list(dict.fromkeys(line for _file, line in self.skip_lines)),
            activated_ideas=self.activated,
            search_associations=self.search_associations,
        )


# ---------------------------------------------------------------------------------------------------
# The checks


async def check(fetch: Fetch, planned: PlannedBatch, result: IndexResult) -> Checked:
    """Split `result` into accepted and rejected items, reading the store through `fetch`."""
    out = Checked(BatchView(planned))
    store = await _StoreFacts.load(fetch, result, out.view)
    out.open_spans = store.open_spans
    _check_ideas(out, result.ideas, store)
    _check_relations(out, result.relations, store)
    _check_resolutions(out, result, store)
    _check_topic_updates(out, result.topic_updates, store)
    _check_topic_changes(out, result.topic_changes)
    _check_entity_links(out, result.entity_links, store)
    _check_skip_lines(out, result.skip_lines)
    _check_activated(out, result.activated_ideas, store)
    _check_search_associations(out, result.search_associations)
    return out


@dataclass
class _StoreFacts:
    """The stored rows a result refers to, read in a handful of queries."""

    ideas: dict[int, sqlite3.Row]
    stored_copies: dict[tuple[int, int, str], int]
    spans: dict[int, sqlite3.Row]
    open_spans: dict[str, SpanRow]
    entities: set[int]

    @classmethod
    async def load(cls, fetch: Fetch, result: IndexResult, view: BatchView) -> _StoreFacts:
        idea_ids = {i for idea in result.ideas for i in idea.related_to}
        idea_ids |= {r.to_idea_id for r in result.relations}
        idea_ids |= {q.question_idea_id for q in result.answered_questions}
        idea_ids |= {t.todo_idea_id for t in result.completed_todos}
        idea_ids |= set(result.activated_ideas)
        ideas = await fetch(
            f"SELECT id, session_id, intent, answered_at, completed_at FROM ideas WHERE id IN ({_JSON})",
            (_ids(idea_ids),),
        )
        hashes = {idea_hash(i.content) for i in result.ideas if i.content.strip()}
        copies = await fetch(
            "SELECT id, source_file_id, source_line, content_hash FROM ideas "
            f"WHERE content_hash IN ({_JSON})",
            (json.dumps(sorted(hashes)),),
        )
        span_ids = {u.span_id for u in result.topic_updates}
        spans = await fetch(
            f"SELECT id, session_id FROM topic_spans WHERE id IN ({_JSON})", (_ids(span_ids),)
        )
        open_rows = await fetch(
            f"""
            SELECT id, session_id, start_line, parent_id, depth FROM topic_spans
            WHERE end_line IS NULL AND session_id IN ({_JSON}) ORDER BY session_id, start_line, id
            """,
            (json.dumps(sorted(view.sessions)),),
        )
        entity_ids = {link.entity_id for link in result.entity_links}
        entities = await fetch(f"SELECT id FROM entities WHERE id IN ({_JSON})", (_ids(entity_ids),))
        return cls(
            ideas={row["id"]: row for row in ideas},
            stored_copies={
                (r["source_file_id"], r["source_line"], r["content_hash"]): r["id"]
                for r in copies
                if r["source_file_id"] is not None and r["source_line"] is not None
            },
            spans={row["id"]: row for row in spans},
            # Ordered by start: the latest open span of a session is its current one.
            open_spans={row["session_id"]: SpanRow.of(row) for row in open_rows},
            entities={row["id"] for row in entities},
        )


_JSON = "SELECT value FROM json_each(?)"


def _ids(values: Iterable[int]) -> str:
    return json.dumps(sorted(set(values)))


def _check_ideas(out: Checked, ideas: list[Idea], store: _StoreFacts) -> None:
    seen: set[tuple[int, int, str]] = set()
    for idea in ideas:
        batch_file, reason = _locate(out.view, idea)
        content = idea.content.strip()
        if batch_file is None:
            out.reject("ideas", idea, reason)
            continue
        key = (batch_file.file_id, idea.source_line, idea_hash(content))
        if not content:
            reason = "content is empty"
        elif idea.confidence < MIN_CONFIDENCE:
            reason = f"confidence {idea.confidence} is below {MIN_CONFIDENCE}"
        elif key in store.stored_copies:
            reason = f"duplicate: already stored as idea #{store.stored_copies[key]}"
        elif key in seen:
            reason = "duplicate of an earlier idea in this result"
        if reason:
            out.reject("ideas", idea, reason)
            continue
        seen.add(key)
        related = []
        for idea_id in dict.fromkeys(idea.related_to):
            if idea_id in store.ideas:
                related.append(idea_id)
            else:
                out.reject("ideas.related_to", _where(idea, idea_id=idea_id), f"no idea #{idea_id}")
        entities: dict[tuple[str, EntityKey], EntityRef] = {}
        for ref in idea.entities:
            entity = entity_key(ref.name, ref.type)
            if entity.stem:
                entities.setdefault((ref.type, entity), ref)
            else:
                item = _where(idea, name=ref.name, type=ref.type)
                out.reject("ideas.entities", item, "entity name has no letters or digits")
        importance = (
            idea.importance if "importance" in idea.model_fields_set else DEFAULT_IMPORTANCE[idea.intent]
        )
        accepted = idea.model_copy(
            update={
                "content": content,
                "related_to": related,
                "entities": list(entities.values()),
                "importance": importance,
            }
        )
        out.ideas.append(NewIdea(accepted, batch_file, key[2]))


def _locate(view: BatchView, idea: Idea) -> tuple[BatchFile | None, str]:
    """The batch file an idea comes from, or None and why it cannot be placed."""
    if idea.session not in view.sessions:
        return None, f"session {idea.session!r} is not in this batch"
    batch_file = view.file_for(idea.session, idea.source_file)
    if batch_file is None:
        return None, f"source_file {idea.source_file!r} is not a transcript of this session in the batch"
    if idea.source_line not in batch_file.lines:
        return None, f"line {idea.source_line} is not a message line of {batch_file.path} in this batch"
    if idea.source_line in batch_file.context_lines:
        return None, (
            f"line {idea.source_line} is context (a compact summary or compaction transcript), "
            "not a source of new ideas"
        )
    return batch_file, ""


def _where(idea: Idea, **extra: Any) -> dict[str, Any]:
    return {"session": idea.session, "source_line": idea.source_line, **extra}


def _check_relations(out: Checked, relations: list[Relation], store: _StoreFacts) -> None:
    new_at = {(n.idea.session, n.idea.source_line) for n in out.ideas}
    seen: set[tuple[str, int, int, str]] = set()
    for relation in relations:
        start = (relation.from_session, relation.from_line)
        key = (*start, relation.to_idea_id, relation.relation_type)
        if relation.relation_type not in RELATION_TYPES:
            out.reject("relations", relation, f"unknown relation type {relation.relation_type!r}")
        elif relation.to_idea_id not in store.ideas:
            out.reject("relations", relation, f"no idea #{relation.to_idea_id}")
        elif _is_stored_copy(out.view, relation, store):
            out.reject("relations", relation, "self-relation: the target is the idea it starts from")
        elif start not in new_at:
            out.reject("relations", relation, "no new idea of this result at from_session/from_line")
        elif key in seen:
            out.reject("relations", relation, "duplicate relation in this result")
        else:
            seen.add(key)
            out.relations.append(relation)


def _is_stored_copy(view: BatchView, relation: Relation, store: _StoreFacts) -> bool:
    """Whether `to_idea_id` is stored at the relation's own session and line (a re-extracted idea)."""
    files = {f.file_id for f in view.sessions.get(relation.from_session, [])}
    return any(
        file_id in files and line == relation.from_line and idea_id == relation.to_idea_id
        for (file_id, line, _hash), idea_id in store.stored_copies.items()
    )


def _check_resolutions(out: Checked, result: IndexResult, store: _StoreFacts) -> None:
    out.answered = _resolutions(
        out,
        store,
        "answered_questions",
        [(q, q.question_idea_id, q.answered_at_line, q.answer_summary) for q in result.answered_questions],
        intents=("question", "problem"),
        done=("answered_at", "answered"),
    )
    out.completed = _resolutions(
        out,
        store,
        "completed_todos",
        [(t, t.todo_idea_id, t.completed_at_line, t.completion_summary) for t in result.completed_todos],
        intents=("todo",),
        done=("completed_at", "completed"),
    )


def _resolutions(
    out: Checked,
    store: _StoreFacts,
    name: str,
    items: list[tuple[BaseModel, int, int, str]],
    *,
    intents: tuple[str, ...],
    done: tuple[str, str],
) -> list[Resolution]:
    """Accepted (idea id, line, summary) items: an open question/todo, a line of the batch."""
    column, word = done
    accepted: list[Resolution] = []
    for item, idea_id, line, summary in items:
        row = store.ideas.get(idea_id)
        session, where = (None, "") if row is None else _resolve_line(out.view, row["session_id"], line)
        if row is None:
            reason = f"no idea #{idea_id}"
        elif row["intent"] not in intents:
            reason = f"idea #{idea_id} is a {row['intent']}, not a {' or '.join(intents)}"
        elif row[column] is not None:
            reason = f"idea #{idea_id} is already {word}"
        elif session is None:
            reason = where
        elif any(r.idea_id == idea_id for r in accepted):
            reason = f"idea #{idea_id} is {word} twice in this result"
        else:
            accepted.append(Resolution(idea_id, session, line, summary.strip()))
            continue
        out.reject(name, item, reason)
    return accepted


def _resolve_line(view: BatchView, session: str | None, line: int) -> tuple[str | None, str]:
    """The batch session a line without a session refers to, or None and why."""
    if session is not None and session in view.sessions:
        if line in view.session_lines(session):
            return session, ""
        return None, f"line {line} is not a message line of the idea's session in this batch"
    sessions = view.sessions_with_line(line)
    if len(sessions) == 1:
        return sessions[0], ""
    if not sessions:
        return None, f"line {line} is not a message line of this batch"
    return None, f"line {line} is in several sessions of this batch; it is ambiguous"


def _check_topic_updates(out: Checked, updates: list[TopicUpdate], store: _StoreFacts) -> None:
    seen: set[int] = set()
    for update in updates:
        span = store.spans.get(update.span_id)
        name = update.name.strip() if update.name and update.name.strip() else None
        if span is None:
            reason = f"no span #{update.span_id}"
        elif span["session_id"] != update.session:
            reason = f"span #{update.span_id} belongs to another session"
        elif name is None and update.summary is None:
            reason = "nothing to update: no name and no summary"
        elif update.span_id in seen:
            reason = f"span #{update.span_id} is updated twice in this result"
        else:
            seen.add(update.span_id)
            out.topic_updates.append(update.model_copy(update={"name": name}))
            continue
        out.reject("topic_updates", update, reason)


def _check_topic_changes(out: Checked, changes: list[TopicChange]) -> None:
    seen: set[tuple[str, int]] = set()
    for change in changes:
        open_span = out.open_spans.get(change.session)
        name = change.new_topic_name.strip()
        if change.session not in out.view.sessions:
            reason = f"session {change.session!r} is not in this batch"
        elif change.start_line not in out.view.session_lines(change.session):
            reason = f"start_line {change.start_line} is not a message line of this session in the batch"
        elif not name:
            reason = "new_topic_name is blank"
        elif change.from_span_id is not None and (open_span is None or open_span.id != change.from_span_id):
            current = "none" if open_span is None else f"#{open_span.id}"
            reason = f"span #{change.from_span_id} is not the session's open span ({current})"
        elif (change.session, change.start_line) in seen:
            reason = "a topic change at this line is already in this result"
        else:
            seen.add((change.session, change.start_line))
            out.topic_changes.append(
                change.model_copy(update={"new_topic_name": name, "reason": change.reason.strip()})
            )
            continue
        out.reject("topic_changes", change, reason)


def _check_entity_links(out: Checked, links: list[EntityLink], store: _StoreFacts) -> None:
    lines = {n.idea.source_line for n in out.ideas}
    seen: set[tuple[int, int]] = set()
    for link in links:
        if link.entity_id not in store.entities:
            out.reject("entity_links", link, f"no entity #{link.entity_id}")
        elif link.idea_source_line not in lines:
            out.reject("entity_links", link, f"no new idea of this result at line {link.idea_source_line}")
        elif (link.idea_source_line, link.entity_id) in seen:
            out.reject("entity_links", link, "duplicate entity link in this result")
        else:
            seen.add((link.idea_source_line, link.entity_id))
            out.entity_links.append(link)


def _check_skip_lines(out: Checked, lines: list[int]) -> None:
    idea_at = {(n.file.file_id, n.idea.source_line) for n in out.ideas}
    seen: set[int] = set()
    for line in lines:
        files = [f for f in out.view.files if line in f.lines]
        free = [f for f in files if (f.file_id, line) not in idea_at]
        item = {"line": line}
        if not files:
            out.reject("skip_lines", item, f"line {line} is not a message line of this batch")
        elif line in seen:
            out.reject("skip_lines", item, "duplicate skip line in this result")
        elif not free:
            out.reject("skip_lines", item, f"this result extracts an idea at line {line}")
        else:
            seen.add(line)
            out.skip_lines.extend((f, line) for f in free)


def _check_activated(out: Checked, activated: list[int], store: _StoreFacts) -> None:
    seen: set[int] = set()
    for idea_id in activated:
        item = {"idea_id": idea_id}
        if idea_id not in store.ideas:
            out.reject("activated_ideas", item, f"no idea #{idea_id}")
        elif idea_id in seen:
            out.reject("activated_ideas", item, "duplicate activation in this result")
        else:
            seen.add(idea_id)
            out.activated.append(idea_id)


def _check_search_associations(out: Checked, associations: list[SearchAssociation]) -> None:
    seen: set[tuple[str, str]] = set()
    for association in associations:
        query = " ".join(association.query.split())
        file_path = association.file_path.strip()
        if not query or not file_path:
            out.reject("search_associations", association, "query and file_path must not be blank")
        elif (query, file_path) in seen:
            out.reject("search_associations", association, "duplicate association in this result")
        else:
            seen.add((query, file_path))
            out.search_associations.append(
                association.model_copy(
                    update={"query": query, "file_path": file_path, "reason": association.reason.strip()}
                )
            )
