"""Real transcripts in, real batches out: what the executor tests share.

Transcripts are written in Claude Code's JSONL format into a project directory, captured with the
real `sync_paths`, and cut into batches by the real `plan_batches`, so the executor sees exactly
what the daemon would hand it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cairn.agent.batches import PlannedBatch, plan_batches
from cairn.agent.executor import RunRecord
from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.db import Database
from cairn.store.store import Store

SESSION_A = "aaaaaaaa-0000-4000-8000-00000000000a"
SESSION_B = "bbbbbbbb-0000-4000-8000-00000000000b"
SESSION_C = "cccccccc-0000-4000-8000-00000000000c"
_DAYS = {SESSION_A: 1, SESSION_B: 2, SESSION_C: 3}

# Kinds of transcript line: real text, and the two kinds of noise capture marks `is_noise`.
USER, ASSISTANT, COMMAND, META = "user", "assistant", "command", "meta"


def stamp(session: str, line: int) -> str:
    """The stored timestamp of `session`'s message at `line` (as capture normalises it)."""
    return f"2026-01-{_DAYS[session]:02d}T10:{line // 60:02d}:{line % 60:02d}.000Z"


class Transcripts:
    """Session transcripts in a Claude Code project directory, appended to line by line.

    `cwd` is the sessions' working directory, i.e. their project; a test that needs real project files
    (search associations must point at one) passes a directory it created.
    """

    def __init__(self, root: Path, cwd: str | Path = "/work/demo") -> None:
        self.dir = root / "-work-demo"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cwd = str(cwd)

    def path(self, session: str) -> Path:
        return (self.dir / f"{session}.jsonl").resolve()

    @property
    def paths(self) -> list[Path]:
        return [self.path(s) for s in (SESSION_A, SESSION_B, SESSION_C) if self.path(s).exists()]

    def add(self, session: str, *lines: tuple[str, str]) -> None:
        path = self.path(session)
        count = len(path.read_text().splitlines()) if path.exists() else 0
        with path.open("a") as fh:
            for kind, text in lines:
                count += 1
                fh.write(json.dumps(_entry(session, count, kind, text, self.cwd)) + "\n")


def _entry(session: str, line: int, kind: str, text: str, cwd: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.0.76",
        "type": "assistant" if kind == ASSISTANT else "user",
        "uuid": f"{session[:8]}-{line:04d}",
        "timestamp": stamp(session, line).replace(".000Z", "Z"),
    }
    if kind == ASSISTANT:
        entry["message"] = {
            "id": f"msg_{session[:4]}{line}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
        }
    elif kind == COMMAND:
        entry["message"] = {
            "role": "user",
            "content": f"<command-name>/{text}</command-name>\n<command-message>{text}</command-message>\n"
            "<command-args></command-args>",
        }
    elif kind == META:
        entry["isMeta"] = True
        entry["message"] = {"role": "user", "content": f"<local-command-stdout>{text}</local-command-stdout>"}
    else:
        entry["message"] = {"role": "user", "content": text}
    return entry


async def capture(store: Store, settings: Settings, transcripts: Transcripts) -> None:
    report = await sync_paths(store, transcripts.paths, settings, vectors=False)
    assert not report.errors, report.errors


async def plan_one(db: Database) -> PlannedBatch:
    """The one continuous batch of everything not indexed yet (the tests keep batches small)."""
    batches = await plan_batches(db, mode="continuous")
    assert len(batches) == 1, [b.cursors for b in batches]
    return batches[0]


def run_record(**overrides: Any) -> RunRecord:
    values: dict[str, Any] = {
        "model": "test-model",
        "prompt_version": "index-v1",
        "mode": "continuous",
        "input_tokens": 1200,
        "output_tokens": 300,
        "tool_calls": 4,
        "requests": 3,
        "seconds": 2.5,
    }
    return RunRecord(**{**values, **overrides})


async def file_ids(db: Database) -> dict[str, int]:
    """Transcript file ids by session."""
    rows = await db.fetchall("SELECT id, session_id FROM transcript_files")
    return {r["session_id"]: r["id"] for r in rows}


async def cursors(db: Database) -> dict[str, int]:
    """`indexed_line` by session."""
    rows = await db.fetchall("SELECT session_id, indexed_line FROM transcript_files")
    return {r["session_id"]: r["indexed_line"] for r in rows}


async def idea_id(db: Database, session: str, line: int) -> int:
    value = await db.scalar("SELECT id FROM ideas WHERE session_id = ? AND source_line = ?", (session, line))
    assert value is not None, (session, line)
    return int(value)


async def counts(db: Database) -> dict[str, int]:
    """Rows per table the executor writes (plus the outbox it fills through triggers)."""
    tables = (
        "ideas",
        "relations",
        "topic_spans",
        "entities",
        "entity_aliases",
        "idea_entities",
        "skipped_lines",
        "search_associations",
        "index_runs",
    )
    result = {t: int(await db.scalar(f"SELECT count(*) FROM {t}")) for t in tables}
    result["memory_outbox"] = int(
        await db.scalar("SELECT count(*) FROM vector_outbox WHERE kind IN ('ideas', 'spans', 'entities')")
    )
    return result


async def insert(db: Database, sql: str, params: tuple[Any, ...] = ()) -> int:
    """One row written outside the executor (state a test starts from); its id."""
    async with db.write() as conn, conn.execute(sql + " RETURNING id", params) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


def round_one(t: Transcripts) -> dict[str, Any]:
    """A valid result for `write_round_one`'s lines: questions, a todo, a decision, spans, entities."""
    a, b = str(t.path(SESSION_A)), str(t.path(SESSION_B))
    return {
        "ideas": [
            {
                "session": SESSION_A,
                "source_file": a,
                "source_line": 1,
                "content": "Should vectors stay in SQLite or move to Postgres?",
                "intent": "question",
                "confidence": 0.9,
                "entities": [
                    {"name": "SQLite", "type": "technology"},
                    {"name": "Postgres", "type": "technology"},
                ],
            },
            {
                "session": SESSION_A,
                "source_file": a,
                "source_line": 2,
                "content": "Store vectors as SQLite blobs for now.",
                "intent": "decision",
                "confidence": 0.8,
                "importance": 0.9,
                "entities": [{"name": "sqlite3", "type": "technology"}],
            },
            {
                "session": SESSION_A,
                "source_file": a,
                "source_line": 3,
                "content": "Turn on WAL mode before the load test.",
                "intent": "todo",
                "entities": [{"name": "WAL mode", "type": "concept"}],
            },
            {
                "session": SESSION_B,
                "source_file": b,
                "source_line": 1,
                "content": "How is the API key rotated?",
                "intent": "question",
                "entities": [{"name": "API key", "type": "concept"}],
            },
            {
                "session": SESSION_B,
                "source_file": Path(b).name,  # a basename is enough when it is unambiguous
                "source_line": 2,
                "content": "The API key lives in the team vault.",
                "intent": "context",
                "entities": [{"name": "vault", "type": "concept"}],
            },
        ],
        "topic_changes": [
            {
                "session": SESSION_A,
                "new_topic_name": "Vector storage",
                "reason": "Where vectors live",
                "start_line": 1,
            }
        ],
        "skip_lines": [4],
        "search_associations": [{"query": "where are vectors stored", "file_path": "cairn/store/vectors.py"}],
    }


def project_with(root: Path, *files: str) -> Path:
    """A project directory holding `files` (relative paths), for associations that must point at files."""
    root.mkdir(parents=True, exist_ok=True)
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n", encoding="utf-8")
    return root.resolve()


def write_round_one(t: Transcripts) -> None:
    """Four lines of A, two of B, and a noise-only C."""
    t.add(
        SESSION_A,
        (USER, "Should we keep vectors in SQLite or move them to Postgres?"),
        (ASSISTANT, "Decision: store vectors as SQLite blobs for now."),
        (ASSISTANT, "TODO: turn on WAL mode before the load test."),
        (USER, "ok"),
    )
    t.add(SESSION_B, (USER, "How do we rotate the API key?"), (ASSISTANT, "The key lives in the team vault."))
    t.add(SESSION_C, (COMMAND, "cost"), (META, "Total cost: $0.42"))
