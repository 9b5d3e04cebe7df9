"""Checking an indexing agent's result against its batch and the store, item by item.

Invariant 4: the executor validates every id and line before writing. An invalid item is dropped and
reported as a `Rejected` (stored in `index_runs.rejected_items`); the rest of the result still
applies, because one hallucinated id should not cost a batch's worth of ideas. `check` reads through
a `Fetch`, so the executor runs the very same checks on its write connection inside the transaction
that applies the result — nothing can change between the check and the write.

Decisions the result format leaves open:

- **Sessions and files** must be named exactly as in the batch. `source_file` may also be given by
  basename when exactly one of that session's files in the batch has it (models shorten paths; a
  transcript's basename is its session uuid, and a subagent file's is its agent id).
- **Lines** are checked per file: an idea's `source_line` must be the first line of a message of
  that file in the batch (a session's main transcript and its subagents' number lines separately).
- **Context is not a source.** A new idea whose `source_line` is a context message (role
  `context`: a compact summary, a compaction subagent's message) is rejected: it restates earlier
  conversation, so what it holds is stored already or was never said in this batch. Activating
  stored ideas because a summary mentions them is fine.
- **Confidence** below `MIN_CONFIDENCE` (0.3) is rejected, not stored: the model itself doubts it.
- **Duplicates** (same file, line and `idea_hash` of the content) are rejected, whether repeated in
  the result or already stored. Every other list rejects exact repeats too, so a rejection always
  means "this item was not applied".
- **`related_to`**: unknown ids are dropped (each reported under `ideas.related_to`) and the idea is
  kept — a wrong cross-reference does not make the idea itself wrong. Entity names with nothing to
  match on (`"..."`), redaction labels (`[REDACTED:jwt]`, or a marker's kind the batch writes only in
  markers) and pieces of paths (`src/`, `.claude/proj`, `Users`) are dropped the same way, under
  `ideas.entities` (`cairn.agent.entities.refused`).
- **Importance** left out by the model gets the intent's default (`DEFAULT_IMPORTANCE`), not the
  schema's 0.5: a decision left unscored still outranks context.
- **State** (deferred, given up) belongs to what can be open — a question, problem or todo; on any other
  intent it is dropped (reported under `ideas.state`) and the idea kept.
- **Keys** (prompt v2): a new idea's `key` lets the result's other items name it before it has an
  id; how keys resolve (several ideas with one key, a key of a rejected idea) is decided in
  `cairn.agent.links`. A reference that resolves nowhere is rejected with the reason, like an
  unknown id.
- **Relations** start at a new idea of this result, found by `from_key` or by (`from_session`,
  `from_line`); a relation to the stored copy of that very idea, or to the new idea it starts
  from, is a self-relation. A supersedes between new ideas that would close a cycle is rejected.
- **Answered questions / completed todos**: the line is looked up in the question's (todo's)
  session if that session is in the batch, else in the one batch session that has the line;
  ambiguity is rejected. A new question (todo) answered (completed) at its own line, where no
  other new idea says the answer, is a self-link and rejected.
- **Topic changes**: `from_span_id`, when given, must be the session's open span as stored — the
  open span (`end_line IS NULL`) that starts last, since a parent stays open around its children.
  Several changes of one session in one result may all name it: the model cannot know the ids of
  the spans the earlier changes open.
- **Topic updates** must change something (a blank name counts as no name) and name the span's own
  session, which need not be in the batch: a later batch may correct an older span's summary.
- **Entity links** go to every new idea at `idea_source_line` (the link names no session; a line shared
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
from cairn.agent.entities import EntityKey, entity_key, refused
from cairn.agent.links import KeyTable, SupersedesGraph, Target
from cairn.agent.schema import (
    CONTEXT_ROLE,
    DEFAULT_IMPORTANCE,
    RELATION_TYPES,
    AnsweredQuestion,
    CompletedTodo,
    EntityLink,
    EntityRef,
    Idea,
    IdeaRef,
    IndexResult,
    Relation,
    SearchAssociation,
    TopicChange,
    TopicUpdate,
)
from cairn.store.store import idea_hash
from cairn.store.vocab import OPENABLE_INTENTS
from cairn.transcripts.redact import label_only_kinds

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
        # Kinds of redaction markers the batch writes only as markers: no entity may be named so.
        self.label_kinds = label_only_kinds(
            "\n".join(m.content for update in planned.batch.updates for m in update.messages)
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
    """An accepted idea (content stripped, bad `related_to` refs and entities dropped, importance set);
    `related` is what its `related_to` resolved to."""

    idea: Idea
    file: BatchFile
    content_hash: str
    related: tuple[Target, ...] = ()


@dataclass(frozen=True)
class Resolution:
    """An accepted answered question or completed todo: the idea it resolved (`target`, named by
    `ref` in the result), and the session its line was found in."""

    target: Target
    ref: IdeaRef
    session: str
    line: int
    summary: str


@dataclass(frozen=True)
class Link:
    """An accepted relation: from the new ideas at `starts` (indexes into `Checked.ideas`) to `target`."""

    relation: Relation
    starts: tuple[int, ...]
    target: Target


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
    relations: list[Link] = field(default_factory=list)
    entity_links: list[EntityLink] = field(default_factory=list)
    skip_lines: list[tuple[BatchFile, int]] = field(default_factory=list)
    activated: list[int] = field(default_factory=list)
    search_associations: list[SearchAssociation] = field(default_factory=list)
    open_spans: dict[str, SpanRow] = field(default_factory=dict)
    keys: KeyTable = field(default_factory=KeyTable)
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
                AnsweredQuestion(question_idea_id=r.ref, answered_at_line=r.line, answer_summary=r.summary)
                for r in self.answered
            ],
            completed_todos=[
                CompletedTodo(todo_idea_id=r.ref, completed_at_line=r.line, completion_summary=r.summary)
                for r in self.completed
            ],
            relations=[link.relation for link in self.relations],
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
        hashes = {idea_hash(i.content) for i in result.ideas if i.content.strip()}
        copies = await fetch(
            "SELECT id, source_file_id, source_line, content_hash FROM ideas "
            f"WHERE content_hash IN ({_JSON})",
            (json.dumps(sorted(hashes)),),
        )
        refs: list[IdeaRef] = [i for idea in result.ideas for i in idea.related_to]
        refs += [r.to_idea_id for r in result.relations]
        refs += [q.question_idea_id for q in result.answered_questions]
        refs += [t.todo_idea_id for t in result.completed_todos]
        # A key of an idea stored already resolves to its stored copy: read those rows too.
        idea_ids = {ref for ref in refs if isinstance(ref, int)} | {row["id"] for row in copies}
        idea_ids |= set(result.activated_ideas)
        ideas = await fetch(
            f"SELECT id, session_id, intent, answered_at, completed_at FROM ideas WHERE id IN ({_JSON})",
            (_ids(idea_ids),),
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
    """Accept or reject each idea, then report them in result order, resolving each accepted idea's
    key and `related_to` on the way: a key may name a later idea, so acceptance comes first."""
    seen: dict[tuple[int, int, str], int] = {}  # accepted (file, line, hash) -> index in out.ideas
    accepted: dict[int, Target] = {}  # position in the result -> what its key resolves to
    rejected: dict[int, str] = {}
    placed: dict[int, tuple[BatchFile, str]] = {}  # position -> (file, content hash) of an accepted idea
    for position, idea in enumerate(ideas):
        batch_file, reason = _locate(out.view, idea)
        if batch_file is None:
            rejected[position] = reason
            continue
        key = (batch_file.file_id, idea.source_line, idea_hash(idea.content.strip()))
        if not idea.content.strip():
            reason = "content is empty"
        elif idea.confidence < MIN_CONFIDENCE:
            reason = f"confidence {idea.confidence} is below {MIN_CONFIDENCE}"
        elif key in store.stored_copies:
            reason = f"duplicate: already stored as idea #{store.stored_copies[key]}"
            accepted[position] = Target.of_stored(store.stored_copies[key])
        elif key in seen:
            reason = "duplicate of an earlier idea in this result"
            accepted[position] = Target.of_new(seen[key])
        if reason:
            rejected[position] = reason
            continue
        seen[key] = len(placed)
        accepted[position] = Target.of_new(len(placed))
        placed[position] = (batch_file, key[2])
    lines: dict[str, list[int]] = {}
    for idea in ideas:
        if idea.key is not None:
            lines.setdefault(idea.key, []).append(idea.source_line)
    out.keys = KeyTable.build(lines, accepted, rejected, [idea.key for idea in ideas])
    for position, idea in enumerate(ideas):
        if position not in placed:
            out.reject("ideas", idea, rejected[position])
            continue
        batch_file, content_hash = placed[position]
        related_to, related = _related(out, idea, accepted[position], store)
        cleaned = _cleaned(out, idea, related_to)
        if idea.key is not None and idea.key not in out.keys.targets:
            out.reject("ideas.key", _where(idea, key=idea.key), out.keys.resolve(idea.key)[1])
            cleaned = cleaned.model_copy(update={"key": None})
        out.ideas.append(NewIdea(cleaned, batch_file, content_hash, related))


def _related(
    out: Checked, idea: Idea, itself: Target, store: _StoreFacts
) -> tuple[list[IdeaRef], tuple[Target, ...]]:
    """The idea's `related_to` refs that resolve (each target once) and their targets; the others
    are reported."""
    kept: list[IdeaRef] = []
    targets: list[Target] = []
    for ref in dict.fromkeys(idea.related_to):
        target, reason = _target(out, store, ref)
        if target is not None and target == itself:
            target, reason = None, "an idea cannot relate to itself"
        if target is None:
            out.reject("ideas.related_to", _where(idea, idea_id=ref), reason)
        elif target not in targets:
            kept.append(ref)
            targets.append(target)
    return kept, tuple(targets)


def _cleaned(out: Checked, idea: Idea, related_to: list[IdeaRef]) -> Idea:
    """The idea as it is stored: content stripped, nameless entities dropped, importance defaulted."""
    entities: dict[tuple[str, EntityKey], EntityRef] = {}
    for ref in idea.entities:
        entity = entity_key(ref.name, ref.type)
        reason = refused(ref.name, ref.type, out.view.label_kinds)
        if not entity.stem:
            reason = "entity name has no letters or digits"
        if reason is None:
            entities.setdefault((ref.type, entity), ref)
        else:
            out.reject("ideas.entities", _where(idea, name=ref.name, type=ref.type), reason)
    importance = idea.importance if "importance" in idea.model_fields_set else DEFAULT_IMPORTANCE[idea.intent]
    state = idea.state
    if state is not None and idea.intent not in OPENABLE_INTENTS:
        reason = f"a {idea.intent} is never open, so it has no state"
        out.reject("ideas.state", _where(idea, state=state), reason)
        state = None
    update = {
        "content": idea.content.strip(),
        "related_to": related_to,
        "entities": list(entities.values()),
        "importance": importance,
        "state": state,
    }
    return idea.model_copy(update=update)


def _target(out: Checked, store: _StoreFacts, ref: IdeaRef) -> tuple[Target | None, str]:
    """What an idea reference names: a stored idea by id, or whatever its key resolves to."""
    if isinstance(ref, int):
        return (Target.of_stored(ref), "") if ref in store.ideas else (None, f"no idea #{ref}")
    return out.keys.resolve(ref)


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
    seen: set[tuple[tuple[int, ...], Target, str]] = set()
    supersedes = SupersedesGraph()
    for relation in relations:
        link, reason = _link(out, relation, store)
        if link is not None:
            key = (link.starts, link.target, relation.relation_type)
            loops = link.target.new is not None and supersedes.would_loop(link.starts, link.target.new)
            if key in seen:
                reason = "duplicate relation in this result"
            elif relation.relation_type == "supersedes" and loops:
                reason = "supersedes would close a cycle: the target already supersedes this idea"
            else:
                seen.add(key)
                if relation.relation_type == "supersedes" and link.target.new is not None:
                    supersedes.add(link.starts, link.target.new)
                out.relations.append(link)
                continue
        out.reject("relations", relation, reason)


def _link(out: Checked, relation: Relation, store: _StoreFacts) -> tuple[Link | None, str]:
    """The relation's start ideas and target, or None and why it cannot be applied."""
    starts, reason = _starts(out, relation)
    target, target_reason = _target(out, store, relation.to_idea_id)
    self_relation = "self-relation: the target is the idea it starts from"
    if relation.relation_type not in RELATION_TYPES:
        return None, f"unknown relation type {relation.relation_type!r}"
    if target is None:
        return None, target_reason
    if target.stored is not None and _is_stored_copy(out, relation, starts, target.stored, store):
        return None, self_relation
    if reason:
        return None, reason
    others = tuple(index for index in starts if index != target.new)
    if not others:
        return None, self_relation
    return Link(relation, others, target), ""


def _starts(out: Checked, relation: Relation) -> tuple[tuple[int, ...], str]:
    """Indexes of the new ideas a relation starts at (`from_key`, else every one at its session and
    line), or none and why."""
    if relation.from_key is not None:
        target, reason = out.keys.resolve(relation.from_key)
        if target is None:
            return (), reason
        if target.new is None:
            stored = f"idea #{target.stored}, stored already"
            return (), f"from_key {relation.from_key!r} names {stored}: relations start at new ideas"
        return (target.new,), ""
    if relation.from_session is None or relation.from_line is None:
        return (), "a relation starts at from_key, or at from_session and from_line"
    starts = tuple(
        index
        for index, new in enumerate(out.ideas)
        if (new.idea.session, new.idea.source_line) == (relation.from_session, relation.from_line)
    )
    return starts, "" if starts else "no new idea of this result at from_session/from_line"


def _is_stored_copy(
    out: Checked, relation: Relation, starts: tuple[int, ...], idea_id: int, store: _StoreFacts
) -> bool:
    """Whether `idea_id` is stored at the relation's own session and line (a re-extracted idea)."""
    places = {(out.ideas[i].idea.session, out.ideas[i].idea.source_line) for i in starts}
    if relation.from_key is None and relation.from_session is not None and relation.from_line is not None:
        places.add((relation.from_session, relation.from_line))
    for session, line in places:
        files = {f.file_id for f in out.view.sessions.get(session, [])}
        if any(
            file_id in files and stored_line == line and stored_id == idea_id
            for (file_id, stored_line, _hash), stored_id in store.stored_copies.items()
        ):
            return True
    return False


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
    items: list[tuple[BaseModel, IdeaRef, int, str]],
    *,
    intents: tuple[str, ...],
    done: tuple[str, str],
) -> list[Resolution]:
    """Accepted (idea, line, summary) items: an open question/todo, stored or new, a line of the batch."""
    column, word = done
    accepted: list[Resolution] = []
    for item, ref, line, summary in items:
        target, reason = _target(out, store, ref)
        what = f"idea #{ref}" if isinstance(ref, int) else f"idea {ref!r}"
        if target is not None:
            session, intent, is_done = _facts(out, store, target)
            session, where = _resolve_line(out.view, session, line)
            if intent not in intents:
                reason = f"{what} is a {intent}, not a {' or '.join(intents)}"
            elif is_done and target.stored is not None and store.ideas[target.stored][column] is not None:
                reason = f"{what} is already {word}"
            elif session is None:
                reason = where
            elif any(r.target == target for r in accepted):
                reason = f"{what} is {word} twice in this result"
            elif _answers_itself(out, target, session, line):
                reason = f"{what} is {word} at its own line {line}, where no other new idea says how"
            else:
                accepted.append(Resolution(target, ref, session, line, summary.strip()))
                continue
        out.reject(name, item, reason)
    return accepted


def _facts(out: Checked, store: _StoreFacts, target: Target) -> tuple[str | None, str, bool]:
    """(session, intent, stored) of a target: the session its answering line is looked up in."""
    if target.stored is not None:
        row = store.ideas[target.stored]
        return row["session_id"], row["intent"], True
    assert target.new is not None
    idea = out.ideas[target.new].idea
    return idea.session, idea.intent, False


def _answers_itself(out: Checked, target: Target, session: str, line: int) -> bool:
    """Whether a new idea is resolved at its own line with no other new idea there to say how."""
    if target.new is None:
        return False
    idea = out.ideas[target.new].idea
    if (idea.session, idea.source_line) != (session, line):
        return False
    return not any(
        index != target.new and (n.idea.session, n.idea.source_line) == (session, line)
        for index, n in enumerate(out.ideas)
    )


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
