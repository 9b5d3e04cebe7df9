"""Migration 13 on a store written before `ideas.state`: the states the old readers parsed from idea text
become the column, the offline indexer's marks leave the text, and what was open stays exactly open."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from cairn.store.hashing import idea_hash
from cairn.store.legacy_states import state_in_text, with_state
from cairn.store.migrations import migrate
from cairn.store.open_ideas import OPEN

PLAN = "I'll replace `getStagedFiles` with `git diff --cached`"
SHIMS = "Does this mean we can remove our checkout shims?"
BUILD = "`npm run build` fails: Build error occurred [TypeError: generate is not a function]"

# (name, intent, content as an older cairn stored it, line)
OLD_IDEAS = [
    (
        "plan",
        "todo",
        f"Deferred: {PLAN} (the user: let's not make this change in this branch, log an issue)",
        5,
    ),
    ("shims", "question", f"{SHIMS} (put off: But that's a separate PR.)", 5),
    ("build", "problem", f"{BUILD} (failed 4 times, never passed)", 8),
    ("follow_up", "todo", "Removing the checkout shims is a great follow-up", 5),
    (
        "cut",
        "todo",
        "Deferred: rename the flag everywhere (the user: not in this PR, it touches the whole…",
        5,
    ),
    ("decision", "decision", "Deferred: not a state a decision can have", 5),
    ("plain", "question", "Why is the pre-commit hook slow?", 5),
    ("late", "question", "Is the cache key right?", 25),
    ("twin", "question", "Can we drop the v1 endpoint?", 5),
    ("marked_twin", "question", "Can we drop the v1 endpoint? (put off: Let's do that in another PR.)", 5),
]

# The old readers' rule (`still_open` before the column), kept here to show the upgrade keeps its answer.
_OLD_DEFERRED = re.compile(
    r"^Deferred: |\(put off: |"
    r"\b(?:follow[- ]?up|later|defer(?:red)?|postpone|not (?:in|for) this (?:branch|pr|change|session)|"
    r"separate (?:pr|issue|ticket|change|branch)|(?:log|file|open|create) (?:an? |the )?(?:\w+ )?"
    r"(?:issue|ticket|bug)|next session|out of scope|for another (?:day|time|pr))\b",
    re.I,
)
_OLD_GIVEN_UP = re.compile(r"\(failed \d+ times, never passed\)$")


def old_still_open(content: str, line: int, kind: str, last_prompt: int) -> bool:
    if _OLD_GIVEN_UP.search(content):
        return True
    if kind == "tool_result":
        return False
    return bool(_OLD_DEFERRED.search(content)) or line > last_prompt


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[aiosqlite.Connection]:
    connection = await aiosqlite.connect(tmp_path / "cairn.db", isolation_level=None)
    await connection.execute("PRAGMA foreign_keys = ON")
    yield connection
    await connection.close()


async def _rows(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    async with conn.execute(sql, params) as cursor:
        return list(await cursor.fetchall())


async def _old_store(conn: aiosqlite.Connection) -> dict[str, int]:
    """A v12 store: a session whose last prompt is line 20, and the ideas of `OLD_IDEAS` in it."""
    assert await migrate(conn, target=12) == 12
    await conn.execute("INSERT INTO sessions (id) VALUES ('s')")
    await conn.execute("INSERT INTO transcript_files (id, path, session_id) VALUES (1, '/t/s.jsonl', 's')")
    for line, role, kind in [(1, "user", "text"), (5, "assistant", "text"), (8, "user", "tool_result"),
                             (20, "user", "text"), (25, "assistant", "text")]:  # fmt: skip
        await conn.execute(
            "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash) VALUES ('s', 1, ?, ?, 0, 1, ?, ?, 'text', ?)",
            (line, line, role, kind, f"m{line}"),
        )
    ids = {}
    for name, intent, content, line in OLD_IDEAS:
        async with conn.execute(
            "INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash) "
            "VALUES ('s', 1, ?, ?, ?, ?) RETURNING id",
            (line, intent, content, idea_hash(content)),
        ) as cursor:
            row = await cursor.fetchone()
        assert row is not None
        ids[name] = int(row[0])
    # The person gave the put-off question an importance: the correction is kept under its old hash.
    await conn.execute(
        "INSERT INTO idea_corrections (source_file_id, source_line, content_hash, intent, importance) "
        "VALUES (1, 5, ?, 'question', 0.95)",
        (idea_hash(OLD_IDEAS[1][2]),),
    )
    return ids


async def test_states_move_out_of_the_text_and_open_stays_open(conn: aiosqlite.Connection) -> None:
    ids = await _old_store(conn)
    kinds = {1: "text", 5: "text", 8: "tool_result", 20: "text", 25: "text"}
    was_open = {
        name
        for name, intent, content, line in OLD_IDEAS
        if intent in ("question", "problem", "todo") and old_still_open(content, line, kinds[line], 20)
    }
    await conn.execute("DELETE FROM vector_outbox")

    await migrate(conn)

    rows = {
        row[0]: row[1:] for row in await _rows(conn, "SELECT id, state, content, content_hash FROM ideas")
    }
    by_name = {name: rows[idea_id] for name, idea_id in ids.items()}
    assert by_name["plan"] == ("deferred", PLAN, idea_hash(PLAN))
    assert by_name["shims"] == ("deferred", SHIMS, idea_hash(SHIMS))
    assert by_name["build"] == ("given_up", BUILD, idea_hash(BUILD))
    assert by_name["cut"][:2] == ("deferred", "rename the flag everywhere"), "a mark cut short still goes"
    follow_up = "Removing the checkout shims is a great follow-up"
    assert by_name["follow_up"][:2] == ("deferred", follow_up), "a model's own words are its content"
    assert by_name["decision"][:2] == (None, OLD_IDEAS[5][2]), "only what can be open has a state"
    assert by_name["plain"][0] is None and by_name["late"][0] is None
    # Stripped, it would be its twin at the same line: it keeps its words and gets the state.
    assert by_name["marked_twin"][:2] == ("deferred", OLD_IDEAS[9][2])

    # The correction follows the stripped question to its new hash; search and vectors see the new text.
    assert await _rows(conn, "SELECT content_hash, importance FROM idea_corrections") == [
        (idea_hash(SHIMS), 0.95)
    ]
    found = await _rows(conn, "SELECT rowid FROM ideas_fts WHERE ideas_fts MATCH '\"put off\"'")
    assert [r[0] for r in found] == [ids["marked_twin"]]
    queued = {r[0] for r in await _rows(conn, "SELECT item_id FROM vector_outbox WHERE kind = 'ideas'")}
    assert queued == {ids["plan"], ids["shims"], ids["build"], ids["cut"]}

    now_open = {r[0] for r in await _rows(conn, f"SELECT i.id FROM ideas i WHERE {OPEN}")}
    assert now_open == {ids[name] for name in was_open}
    assert was_open == {"plan", "shims", "build", "follow_up", "cut", "late", "marked_twin"}


@pytest.mark.parametrize(
    "content",
    [
        "Let's not make this change in this branch. Can we log a linear issue with the details",
        "Removing the checkout shims is a great follow-up",
        "Out of scope here; next session we migrate the queue",
        "Defer the retry change to a separate PR",
    ],
)
def test_a_models_deferring_words_read_as_deferred_and_stay(content: str) -> None:
    assert state_in_text(content) == ("deferred", content)


def test_an_older_exports_idea_is_imported_with_its_state() -> None:
    old = {"intent": "question", "content": f"{SHIMS} (put off: separate PR)", "content_hash": "x"}
    assert with_state(old) == {"intent": "question", "content": SHIMS, "content_hash": idea_hash(SHIMS),
                               "state": "deferred"}  # fmt: skip
    decision = {"intent": "decision", "content": "Deferred: x", "content_hash": "y"}
    assert with_state(decision) == decision
