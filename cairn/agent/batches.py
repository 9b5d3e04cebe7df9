"""Cutting stored, not-yet-indexed messages into token-bounded batches for the indexing agent.

The indexer reads from the store, not from the transcript files: capture has already stored each
message (normalised and redacted) exactly once, and every file carries an `indexed_line` cursor. A
batch lists, per file, the messages after that cursor; the executor moves the cursor to the batch's
end in the same transaction that applies the agent's result, so a batch is indexed exactly once.

When a file is truncated or replaced, capture resets its cursor to 0 and starts a new generation:
only messages stored since then are planned, so the new content is indexed and the old is not redone.

Noise (slash commands, meta lines, hook feedback, compaction instructions) is not sent to the model
but is covered by the cursor and counted (`PlannedBatch.noise_skipped`). Context (compact summaries,
everything in a compaction subagent's transcript) is sent with the role `CONTEXT_ROLE`, so the model
can recognise what it restates, and counted (`PlannedBatch.context_messages`); the executor never
takes a new idea from it. A single message larger than the budget is cut to fit (its head and tail)
rather than blocking its file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cairn.agent.schema import CONTEXT_ROLE, BatchMessage, IndexBatch, Mode, SessionUpdate
from cairn.store.db import Database
from cairn.tokens import count_tokens, truncate_to_tokens
from cairn.transcripts.discover import is_compaction_file
from cairn.transcripts.normalise import is_context

# Seed 003's budgets for the messages of one run (the rest goes to the prompt, tools and output).
CONTINUOUS_MESSAGE_TOKENS = 5_000
BACKFILL_MESSAGE_TOKENS = 40_000


@dataclass(frozen=True)
class IndexCursor:
    """Where one file's indexing cursor moves when its batch is applied."""

    file_id: int
    path: str
    session_id: str
    from_line: int  # the cursor before: messages with line > from_line are in the batch
    to_line: int  # the cursor after: the last line the batch covers


@dataclass
class PlannedBatch:
    batch: IndexBatch
    cursors: list[IndexCursor] = field(default_factory=list)
    tokens: int = 0
    noise_skipped: int = 0
    """Noise messages the cursors pass over without sending them."""
    context_messages: int = 0
    """Messages sent as context (`CONTEXT_ROLE`)."""

    @property
    def message_count(self) -> int:
        return sum(len(u.messages) for u in self.batch.updates)

    def lines(self, session: str) -> set[int]:
        """The message lines of `session` in this batch: what the agent's output may point at."""
        return {m.line for u in self.batch.updates if u.session == session for m in u.messages}


@dataclass
class _Pending:
    file_id: int
    path: str
    session_id: str
    indexed_line: int
    messages: list[BatchMessage] = field(default_factory=list)
    last_line: int = 0


async def pending_files(db: Database, paths: Iterable[str] | None = None) -> list[tuple[int, str, str, int]]:
    """(file id, path, session, indexed_line) of files with stored messages past their cursor."""
    rows = await db.fetchall(
        """
        SELECT f.id, f.path, f.session_id, f.indexed_line FROM transcript_files f
        WHERE f.session_id IS NOT NULL
          AND EXISTS (
              SELECT 1 FROM messages m
              WHERE m.file_id = f.id AND m.end_line > f.indexed_line AND m.id > f.generation_start_id
          )
        ORDER BY f.path
        """
    )
    wanted = None if paths is None else {str(Path(p).expanduser().resolve()) for p in paths}
    return [
        (r["id"], r["path"], r["session_id"], r["indexed_line"])
        for r in rows
        if wanted is None or r["path"] in wanted
    ]


async def plan_batches(
    db: Database,
    *,
    mode: Mode = "backfill",
    paths: Iterable[str] | None = None,
    message_tokens: int | None = None,
) -> list[PlannedBatch]:
    """Every not-yet-indexed message of the given files (default: all), cut into batches.

    Backfill batches hold one session each (the context filled with one session's history reads as one
    story);
    continuous batches put the new messages of several sessions into one run.
    """
    budget = message_tokens or (BACKFILL_MESSAGE_TOKENS if mode == "backfill" else CONTINUOUS_MESSAGE_TOKENS)
    batches: list[PlannedBatch] = []
    current = PlannedBatch(IndexBatch(mode=mode, updates=[]))
    pending: dict[int, _Pending] = {}

    def flush() -> None:
        nonlocal current
        for p in pending.values():
            if p.last_line > p.indexed_line:
                if p.messages:
                    current.batch.updates.append(
                        SessionUpdate(session=p.session_id, file_path=p.path, messages=p.messages)
                    )
                current.cursors.append(
                    IndexCursor(p.file_id, p.path, p.session_id, p.indexed_line, p.last_line)
                )
                p.indexed_line, p.messages = p.last_line, []
        if current.cursors:
            batches.append(current)
        current = PlannedBatch(IndexBatch(mode=mode, updates=[]))

    for file_id, path, session_id, indexed_line in await pending_files(db, paths):
        state = pending.setdefault(file_id, _Pending(file_id, path, session_id, indexed_line))
        state.last_line = indexed_line
        compaction = is_compaction_file(Path(path))
        rows = await db.fetchall(
            """
            SELECT line, end_line, role, kind, text, timestamp, is_noise, agent_id FROM messages
            WHERE file_id = ? AND end_line > ?
              AND id > (SELECT generation_start_id FROM transcript_files WHERE id = ?)
            ORDER BY line, id
            """,
            (file_id, indexed_line, file_id),
        )
        for row in rows:
            if row["is_noise"]:
                state.last_line = max(state.last_line, row["end_line"])
                current.noise_skipped += 1
                continue
            text = row["text"]
            tokens = count_tokens(text) + 12  # the JSON envelope of one message
            if tokens > budget:
                text = truncate_to_tokens(text, budget - 50)
                tokens = budget - 38
            if current.tokens + tokens > budget and current.tokens > 0:
                flush()
            if compaction or is_context(row["kind"], row["agent_id"]):
                role = CONTEXT_ROLE
                current.context_messages += 1
            else:
                role = "tool" if row["kind"] == "tool_result" else row["role"]
            state.messages.append(
                BatchMessage(line=row["line"], role=role, content=text, timestamp=row["timestamp"])
            )
            state.last_line = max(state.last_line, row["end_line"])
            current.tokens += tokens
        if mode == "backfill":
            flush()
            pending.clear()
    flush()
    return batches
