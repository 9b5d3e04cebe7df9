"""One definition of "open" (`cairn.store.open_ideas`), and every reader agreeing on it.

One real store holds an idea in every state a question, problem or todo can be in; each face that lists
or counts open items — the `open_questions` op behind the MCP tool, `cairn questions/todos --open`, the
`ideas` op behind the viewer's board, the home page's and `cairn projects`' counts, SessionStart recall
and the indexing agent's `get_open_*` tools — must name exactly the same ones.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import aiosqlite
from chromadb.api.types import Documents, EmbeddingFunction
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from cairn.config import Settings
from cairn.recall.context import Project, session_context
from cairn.search import ops
from cairn.search.open_items import open_items
from cairn.search.overview import overview
from cairn.store.memory import list_ideas, list_projects
from cairn.store.store import Store, idea_hash, message_hash
from cairn.store.vectors import VectorIndex
from cairn.tools import get_open_questions, get_open_todos
from cairn.tools.deps import ToolDeps
from cairn.tools.results import IdeaList
from tests.helpers import inprocess

SESSION = "sess-open"
# The person's prompts are at lines 1 and 20: 20 is the session's last.
LAST_PROMPT = 20


async def _insert(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    cursor = await conn.execute(sql, params)
    row_id = cursor.lastrowid
    await cursor.close()
    assert row_id is not None
    return row_id


async def _message(
    conn: aiosqlite.Connection, file_id: int, line: int, role: str, kind: str, text: str
) -> None:
    await conn.execute(
        "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, text, "
        "content_hash, timestamp) VALUES (?, ?, ?, ?, 0, 10, ?, ?, ?, ?, ?)",
        (
            SESSION,
            file_id,
            line,
            line,
            role,
            kind,
            text,
            message_hash(role, kind, text),
            f"2025-03-01T10:{line:02d}:00.000Z",
        ),
    )


async def build(db_write: Any) -> tuple[int, dict[str, int]]:
    """The store: one project, one session, its messages, and an idea in every state (by name)."""
    async with db_write() as conn:
        project = await _insert(conn, "INSERT INTO projects (path, name) VALUES ('/p/acme', 'acme')")
        await conn.execute(
            "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
            (SESSION, project, "2025-03-01T10:00:00.000Z", "2025-03-01T10:30:00.000Z"),
        )
        file_id = await _insert(
            conn,
            "INSERT INTO transcript_files (path, session_id) VALUES ('/t/sess-open.jsonl', ?)",
            (SESSION,),
        )
        await _message(conn, file_id, 1, "user", "text", "Let's fix the flaky upload test.")
        await _message(conn, file_id, 5, "assistant", "text", "I'll look at the retry loop.")
        await _message(conn, file_id, 8, "user", "tool_result", "Error: build failed")
        await _message(conn, file_id, LAST_PROMPT, "user", "text", "Ok, what is left?")
        await _message(conn, file_id, 25, "assistant", "text", "Two things are left.")
        await _message(conn, file_id, 27, "user", "tool_result", "Error: lint failed")
        # The person reopened the idea said at line 5 with these words (a correction kept by its place).
        reopened_text = "Is the upload size limit right?"
        await conn.execute(
            "INSERT INTO idea_corrections (source_file_id, source_line, content_hash, intent, state, "
            "state_at) VALUES (?, 5, ?, 'question', 'open', '2025-03-02T00:00:00.000Z')",
            (file_id, idea_hash(reopened_text)),
        )
        # A subagent's transcript: no prompt from the person in it, so nothing there is settled by one.
        subagent = await _insert(
            conn,
            "INSERT INTO transcript_files (path, session_id, is_subagent) VALUES ('/t/agent-x.jsonl', ?, 1)",
            (SESSION,),
        )
        await _message(conn, subagent, 3, "assistant", "text", "Should the retry back off?")
        ids: dict[str, int] = {}

        async def idea(
            name: str, intent: str, line: int, extra: str = "", values: tuple[Any, ...] = ()
        ) -> None:
            content = f"{name.replace('_', ' ')}: {intent} of the upload work"
            columns = "session_id, source_file_id, source_line, intent, content, content_hash"
            marks = "?, ?, ?, ?, ?, ?"
            if extra:
                columns += ", " + extra
                marks += ", ?" * len(values)
            ids[name] = await _insert(
                conn,
                f"INSERT INTO ideas ({columns}) VALUES ({marks})",
                (SESSION, file_id, line, intent, content, idea_hash(content), *values),
            )

        await idea("decision", "decision", 25)
        await idea("open_question", "question", 25)
        await idea("answered_question", "question", 25, "answered_at", ("2025-03-01T10:26:00.000Z",))
        await idea("declined_question", "question", 25, "declined_at", ("2025-03-01T10:26:00.000Z",))
        await idea("deferred_question", "question", 5, "state", ("deferred",))
        await idea("given_up_problem", "problem", 8, "state", ("given_up",))
        await idea("tool_failure", "problem", 27)
        await idea("superseded_question", "question", 25, "superseded_by", (ids["decision"],))
        await idea("completed_todo", "todo", 25, "completed_at", ("2025-03-01T10:28:00.000Z",))
        await idea("open_todo", "todo", 25)
        await idea("deferred_todo", "todo", 5, "state", ("deferred",))
        await idea("contradicted_todo", "todo", 25)
        await idea("early_question", "question", 5)
        await idea("early_todo", "todo", 1)
        await idea("at_last_prompt", "question", LAST_PROMPT)
        ids["subagent_question"] = await _insert(
            conn,
            "INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash) "
            "VALUES (?, ?, 3, 'question', 'Should the retry back off?', ?)",
            (SESSION, subagent, idea_hash("Should the retry back off?")),
        )
        ids["reopened_question"] = await _insert(
            conn,
            "INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash) "
            "VALUES (?, ?, 5, 'question', ?, ?)",
            (SESSION, file_id, reopened_text, idea_hash(reopened_text)),
        )
        await conn.execute(
            "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, 'contradicts')",
            (ids["decision"], ids["contradicted_todo"]),
        )
    return project, ids


#: Open: raised after the last prompt; put off or given up wherever said (given up even in a tool's
#: output); reopened by the person; in a transcript with no prompt. Not open: answered, declined,
#: superseded, completed, contradicted, a decision, a plain tool failure, anything raised before the
#: last prompt or at it.
OPEN_QUESTIONS = {
    "open_question",
    "deferred_question",
    "given_up_problem",
    "reopened_question",
    "subagent_question",
}
OPEN = OPEN_QUESTIONS | {"open_todo", "deferred_todo"}
#: What the indexing agent's tools list: nothing resolved it (rule 1 only), so a new batch may.
UNRESOLVED = OPEN | {"early_question", "early_todo", "at_last_prompt", "tool_failure"}


def _ids(items: list[dict[str, Any]]) -> set[int]:
    return {int(item["id"]) for item in items}


async def _readers(
    settings: Settings, embedding: EmbeddingFunction[Documents], project: int
) -> dict[str, Any]:
    """What each reader (other than the CLI) says is open: a set of ids, or counts."""
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding))
    try:
        db = store.db
        items = await open_items(db)
        mcp = await ops.open_questions(store, limit=200)
        ctx = RunContext(deps=ToolDeps(db=db, vectors=store.vectors), model=TestModel(), usage=RunUsage())
        tool_questions = await get_open_questions(ctx, SESSION, limit=25)
        tool_todos = await get_open_todos(ctx, SESSION, limit=25)
        assert isinstance(tool_questions, IdeaList) and isinstance(tool_todos, IdeaList)
        recall = await session_context(db, settings, Project(ids=(project,), path="/p/acme", name="acme"))
        board_questions = await list_ideas(db, intents=("question", "problem"), open_only=True, limit=200)
        board_todos = await list_ideas(db, intents=("todo",), open_only=True, limit=200)
        every = await list_ideas(db, limit=200)
        home = await overview(store)
        projects = await list_projects(db)
    finally:
        await store.close()
    return {
        "open_questions op": _ids([i.model_dump() for i in (*items.questions, *items.todos)]),
        "open_questions MCP backend": _ids([*mcp["questions"], *mcp["todos"]]),
        "SessionStart recall": {i for i, section in recall.sections.items() if section == "open"},
        "ideas op, open only (board)": _ids([*board_questions, *board_todos]),
        "ideas op, is_open": {row["id"] for row in every if row["is_open"]},
        "tools": {i.id for i in (*tool_questions.ideas, *tool_todos.ideas)},
        "counts": (
            items.question_count,
            items.todo_count,
            home["totals"]["open_questions"],
            home["totals"]["open_todos"],
            projects[0]["open_questions"],
        ),
    }


def test_every_reader_agrees_on_what_is_open(
    settings: Settings, embedding_function: EmbeddingFunction[Documents]
) -> None:
    async def setup() -> int:
        store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
        try:
            project, ids = await build(store.db.write)
        finally:
            await store.close()
        names.update({idea_id: name for name, idea_id in ids.items()})
        return project

    names: dict[int, str] = {}
    project = asyncio.run(setup())
    said = asyncio.run(_readers(settings, embedding_function, project))
    env = dict(os.environ)
    for command in ("questions", "todos"):
        proc = inprocess.run([command, "--open", "--json", "--limit", "200"], env)
        assert proc.returncode == 0, proc.stderr
        said.setdefault("cairn questions/todos --open", set()).update(_ids(json.loads(proc.stdout)))

    counts = said.pop("counts")
    assert {names[i] for i in said.pop("tools")} == UNRESOLVED, "the get_open_* tools: unresolved ones"
    for reader, ids in said.items():
        assert {names[i] for i in ids} == OPEN, reader
    question_count, todo_count, home_questions, home_todos, project_questions = counts
    assert question_count == home_questions == project_questions == len(OPEN_QUESTIONS)
    assert todo_count == home_todos == len(OPEN - OPEN_QUESTIONS)
