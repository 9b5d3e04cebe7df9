"""Store: exactly-once ingest of real transcripts, FTS, statistics, and the one-owner lock."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.store.db import DatabaseError
from cairn.store.lock import StoreLockedError
from cairn.store.outbox import SOURCES
from cairn.store.store import FileCursor, Store, idea_hash, iso_utc, message_hash
from tests.store.ingesting import LARGE, MAIN, MEDIUM, SIDECHAIN, SMALL, ingest, project_copy, read
from tests.store.procs import run
from tests.transcripts.plain import plain_lines


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    opened = await Store.open(settings)
    yield opened
    await opened.close()


async def message_keys(store: Store) -> list[tuple[str, int, str]]:
    rows = await store.db.fetchall(
        "SELECT f.path, m.line, m.content_hash FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "ORDER BY f.path, m.line, m.content_hash"
    )
    return [tuple(r) for r in rows]


async def test_ingests_every_shared_transcript(store: Store, real_files: list[Path]) -> None:
    expected = 0
    for path in real_files:
        result, messages = read(path)
        stats = await store.ingest(path, result, messages)
        assert stats.messages_added == len(messages)
        assert stats.messages_skipped_duplicate == 0
        expected += len(messages)
        cursor = await store.file_cursor(path)
        assert cursor == FileCursor(result.offset, result.line, result.inode)
    assert await store.db.scalar("SELECT count(*) FROM messages") == expected
    assert await store.db.scalar("SELECT count(*) FROM transcript_files") == len(real_files)

    session = await store.db.fetchone("SELECT * FROM sessions WHERE id = ?", (SMALL.stem,))
    assert session is not None
    _, small_messages = read(SMALL)
    assert session["message_count"] == len(small_messages)
    assert session["cwd"] == "/path/to/Demo"
    assert session["started_at"] == "2025-09-03T00:47:19.293Z"
    assert session["last_at"] == max(iso_utc(m.timestamp) for m in small_messages if m.timestamp)
    project = await store.db.fetchone("SELECT * FROM projects WHERE id = ?", (session["project_id"],))
    assert project is not None and (project["path"], project["name"]) == ("/path/to/Demo", "Demo")

    # The summary line of the large transcript has no sessionId: it joins the file's session.
    orphans = await store.db.scalar(
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE f.path = ? AND m.session_id IS NULL",
        (str(LARGE),),
    )
    assert orphans == 0
    # A JSONL file with no transcript messages gets a cursor but no session.
    hook_logs = await store.db.fetchone(
        "SELECT session_id, byte_offset FROM transcript_files WHERE path LIKE '%sample_hook_logs.jsonl'"
    )
    assert hook_logs is not None and hook_logs["session_id"] is None and hook_logs["byte_offset"] > 0


async def test_message_columns_round_trip(store: Store) -> None:
    result, messages = read(MAIN)
    await store.ingest(MAIN, result, messages)
    with_tools = next(m for m in messages if m.tool_calls)
    row = await store.db.fetchone(
        "SELECT * FROM messages WHERE line = ? AND content_hash = ?",
        (with_tools.line, message_hash(with_tools.role, with_tools.kind, with_tools.text)),
    )
    assert row is not None
    assert row["text"] == with_tools.text
    assert (row["role"], row["kind"], row["end_line"]) == (
        with_tools.role,
        with_tools.kind,
        with_tools.end_line,
    )
    assert (row["byte_start"], row["byte_end"]) == (with_tools.byte_start, with_tools.byte_end)
    assert row["uuid"] == with_tools.uuid and row["message_id"] == with_tools.message_id
    assert json.loads(row["tool_calls"]) == [c.model_dump(mode="json") for c in with_tools.tool_calls]
    assert row["timestamp"] == iso_utc(with_tools.timestamp)
    noise = [m for m in messages if m.is_noise]
    assert noise
    assert await store.db.scalar("SELECT count(*) FROM messages WHERE is_noise = 1") == len(noise)


async def test_same_read_twice_is_a_no_op(store: Store) -> None:
    result, messages = read(MEDIUM)
    first = await store.ingest(MEDIUM, result, messages)
    keys = await message_keys(store)
    cursor = await store.file_cursor(MEDIUM)
    pending = await store.db.scalar("SELECT count(*) FROM vector_outbox")

    again = await store.ingest(MEDIUM, result, messages)

    assert first.messages_added == len(messages) > 0
    assert (again.messages_added, again.messages_skipped_duplicate) == (0, len(messages))
    assert await message_keys(store) == keys
    assert await store.file_cursor(MEDIUM) == cursor
    assert await store.db.scalar("SELECT count(*) FROM vector_outbox") == pending
    assert await store.db.scalar("SELECT message_count FROM sessions") == len(messages)


async def test_replaying_an_older_read_after_a_crash_changes_nothing(store: Store, tmp_path: Path) -> None:
    """The daemon applied read 1 and read 2, crashed, and re-applies read 1 from a stale memory."""
    lines = LARGE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b"".join(lines[:200]))
    read1 = read(path)
    await store.ingest(path, *read1)
    with path.open("ab") as fh:
        fh.write(b"".join(lines[200:]))
    await ingest(store, path)
    keys, cursor = await message_keys(store), await store.file_cursor(path)

    stats = await store.ingest(path, *read1)

    assert stats.messages_added == 0
    assert await message_keys(store) == keys
    assert await store.file_cursor(path) == cursor  # never moved backwards


async def test_incremental_reads_store_exactly_what_one_read_does(store: Store, tmp_path: Path) -> None:
    data = LARGE.read_bytes()
    path = tmp_path / "appending.jsonl"
    path.write_bytes(b"")
    step = len(data) // 7 + 13  # cuts lines in half: the reader must hold partial lines back
    for end in range(step, len(data) + step, step):
        path.write_bytes(data[:end])
        await ingest(store, path)
    # Each read is normalised on its own (tool names and split assistant turns are resolved within a
    # read), so texts can differ from one whole-file read; the lines they cover must not.
    _, whole = read(path)
    rows = await store.db.fetchall("SELECT line, end_line, kind FROM messages")
    covered = sorted(n for r in rows for n in range(r["line"], r["end_line"] + 1))
    assert covered == sorted(n for m in whole for n in range(m.line, m.end_line + 1))
    assert len(covered) == len(set(covered))  # no line stored twice
    assert (await store.file_cursor(path)) == FileCursor(len(data), data.count(b"\n"), os.stat(path).st_ino)


async def test_a_failure_inside_ingest_leaves_offset_and_messages_untouched(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = MEDIUM.read_bytes().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:20]))
    await ingest(store, path)
    keys, cursor = await message_keys(store), await store.file_cursor(path)
    sessions = [tuple(r) for r in await store.db.fetchall("SELECT * FROM sessions")]
    outbox = await store.db.scalar("SELECT count(*) FROM vector_outbox")
    with path.open("ab") as fh:
        fh.write(b"".join(lines[20:]))

    async def explode(self: Store, conn: object, session_ids: list[str]) -> None:
        raise RuntimeError("killed after the messages were inserted")

    monkeypatch.setattr(Store, "_refresh_sessions", explode)
    with pytest.raises(RuntimeError, match="killed"):
        await ingest(store, path)

    assert await message_keys(store) == keys
    assert await store.file_cursor(path) == cursor
    assert [tuple(r) for r in await store.db.fetchall("SELECT * FROM sessions")] == sessions
    assert await store.db.scalar("SELECT count(*) FROM vector_outbox") == outbox
    async with store.db.write() as conn:  # the full-text index rolled back with its rows
        await conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")

    monkeypatch.undo()
    await ingest(store, path)  # the retry completes it, exactly once
    _, whole = read(path)
    assert await store.db.scalar("SELECT count(*) FROM messages") == len(whole)


async def test_a_rewritten_file_restarts_and_keeps_old_messages(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(MEDIUM, path)
    await ingest(store, path)
    before = await store.db.scalar("SELECT count(*) FROM messages")
    replacement = tmp_path / "replacement.jsonl"
    shutil.copyfile(SMALL, replacement)
    replacement.replace(path)  # a new inode at the same path

    result, messages = read(path, await store.file_cursor(path))
    assert result.restarted
    old = {(line, digest) for _, line, digest in await message_keys(store)}
    new = {(m.line, message_hash(m.role, m.kind, m.text)) for m in messages} - old
    assert 0 < len(new) < len(messages)  # some lines are identical in both files: stored once
    stats = await store.ingest(path, result, messages)

    assert stats.messages_added == len(new)
    assert stats.messages_skipped_duplicate == len(messages) - len(new)
    assert await store.db.scalar("SELECT count(*) FROM messages") == before + len(new)
    assert await store.file_cursor(path) == FileCursor(result.offset, result.line, result.inode)


async def test_subagent_files_are_marked_and_belong_to_their_session(store: Store, tmp_path: Path) -> None:
    main = project_copy(MAIN, tmp_path, name="c45af7b1-cb7c-4e51-93db-8cbb250a877a.jsonl")
    agent = project_copy(
        SIDECHAIN, tmp_path, name="c45af7b1-cb7c-4e51-93db-8cbb250a877a/subagents/agent-7f3a.jsonl"
    )
    await ingest(store, main)
    await ingest(store, agent)
    rows = {
        Path(r["path"]).name: r
        for r in await store.db.fetchall(
            "SELECT path, session_id, is_subagent, agent_id FROM transcript_files"
        )
    }
    assert rows[main.name]["is_subagent"] == 0
    sub = rows["agent-7f3a.jsonl"]
    assert sub["is_subagent"] == 1
    assert sub["session_id"] == "c45af7b1-cb7c-4e51-93db-8cbb250a877a"
    assert sub["agent_id"]
    assert await store.db.scalar("SELECT count(*) FROM sessions") == 1


async def test_project_falls_back_to_the_transcript_directory(store: Store, tmp_path: Path) -> None:
    path = project_copy(SMALL, tmp_path, project="-home-ann-site")
    result, messages = read(path)
    for message in messages:
        message.cwd = None
    await store.ingest(path, result, messages)
    project = await store.db.fetchone(
        "SELECT p.path, p.name FROM projects p JOIN sessions s ON s.project_id = p.id"
    )
    assert project is not None and project["name"] == "-home-ann-site"
    assert project["path"] == str(tmp_path / "-home-ann-site")


async def test_fts_finds_ingested_text_and_follows_updates_and_deletes(store: Store) -> None:
    await ingest(store, SMALL)

    async def hits(query: str) -> list[int]:
        rows = await store.db.fetchall(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (query,)
        )
        return [r[0] for r in rows]

    found = await hits("codebase")
    assert found
    texts = [await store.db.scalar("SELECT text FROM messages WHERE id = ?", (i,)) for i in found]
    assert all("codebase" in t.lower() for t in texts)
    assert await hits("analyzing") == await hits("analyze")  # porter stemming

    target = found[0]
    async with store.db.write() as conn:
        await conn.execute("UPDATE messages SET text = 'zanzibar quokka' WHERE id = ?", (target,))
    assert target not in await hits("codebase")
    assert await hits("quokka") == [target]

    async with store.db.write() as conn:
        await conn.execute("DELETE FROM messages WHERE id = ?", (target,))
    assert await hits("quokka") == []
    async with store.db.write() as conn:
        await conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")


async def test_stats_describe_the_store(store: Store, real_files: list[Path]) -> None:
    for path in real_files:
        await ingest(store, path)
    async with store.db.write() as conn:
        await conn.execute(
            "INSERT INTO ideas (session_id, intent, content, content_hash) VALUES (?, 'decision', ?, ?)",
            (
                SMALL.stem,
                "Keep SQLite as the source of truth",
                idea_hash("Keep SQLite as the source of truth"),
            ),
        )
        await conn.execute("INSERT INTO work_queue (path) VALUES ('/x.jsonl')")
    stats = await store.stats()
    data = stats.model_dump(mode="json")
    json.dumps(data)
    total = await store.db.scalar("SELECT count(*) FROM messages")
    assert stats.messages == total == sum(stats.messages_by_role.values())
    assert set(stats.messages_by_role) <= {"user", "assistant", "system", "summary"}
    sessions = {
        obj["sessionId"] for path in real_files for _, obj in plain_lines(path) if obj.get("sessionId")
    }
    assert stats.sessions == len(sessions) and stats.transcript_files == len(real_files)
    assert stats.projects >= 1
    assert stats.ideas == 1 and stats.ideas_by_intent == {"decision": 1}
    assert stats.queue_by_status == {"pending": 1}
    passages = await store.db.scalar("SELECT count(*) FROM message_passages")
    assert stats.message_passages == passages > 0
    # Queued: the messages and passages `message_vectors` and `passage_vectors` embed (no others: they
    # never get one, so tool output and noise are not queued), and the idea.
    embedded = await store.db.scalar(f"SELECT count(*) FROM ({SOURCES['passages'].all_sql()})")
    assert 0 < embedded < passages
    prose = await store.db.scalar(f"SELECT count(*) FROM ({SOURCES['messages'].all_sql()})")
    assert 0 < prose < total
    assert stats.pending_vectors == prose + embedded + 1
    assert stats.vectors == {
        "ideas": 0,
        "spans": 0,
        "entities": 0,
        "messages": 0,
        "chunks": 0,
        "associations": 0,
        "passages": 0,
    }
    assert stats.schema_version >= 3 and stats.db_size_bytes > 0
    assert stats.first_message_at is not None and stats.last_message_at is not None
    assert stats.first_message_at < stats.last_message_at


def test_iso_utc_matches_sqlite_format() -> None:
    moment = datetime(2025, 9, 3, 2, 47, 19, 293456, tzinfo=timezone(timedelta(hours=2)))
    assert iso_utc(moment) == "2025-09-03T00:47:19.293Z"
    assert iso_utc(datetime(2025, 1, 1)) == "2025-01-01T00:00:00.000Z"


def test_idea_hash_normalises_case_and_whitespace() -> None:
    assert idea_hash("Use  SQLite\n as truth") == idea_hash("use sqlite as TRUTH")
    assert idea_hash("use sqlite") != idea_hash("use chroma")


OPEN_STORE = """
    import asyncio, sys
    from cairn.config import Settings
    from cairn.store.lock import StoreLockedError
    from cairn.store.store import Store

    async def main():
        try:
            store = await Store.open(Settings.load(sys.argv[1]))
        except StoreLockedError as exc:
            print(exc)
            sys.exit(3)
        print("opened", store.db.schema_version)
        await store.close()

    asyncio.run(main())
"""


@pytest.mark.process
async def test_a_second_process_cannot_open_the_store(settings: Settings) -> None:
    store = await Store.open(settings)
    try:
        refused = run(OPEN_STORE, str(settings.home))
        assert refused.returncode == 3, refused.stderr
        assert f"cairn store at {settings.home} is in use by process {os.getpid()}" in refused.stdout
        assert "cairn daemon stop" in refused.stdout
    finally:
        await store.close()
    allowed = run(OPEN_STORE, str(settings.home))
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.startswith("opened")


async def test_a_second_open_in_the_same_process_is_refused(store: Store, settings: Settings) -> None:
    with pytest.raises(StoreLockedError):
        await Store.open(settings)


async def test_a_failed_open_releases_the_lock(settings: Settings) -> None:
    settings.home.mkdir(parents=True)
    settings.db_path.write_bytes(b"not sqlite at all " * 200)
    with pytest.raises(DatabaseError, match="not a usable SQLite database"):
        await Store.open(settings)
    settings.db_path.unlink()
    async with await Store.open(settings) as store:
        assert store.db.schema_version >= 3


async def test_close_is_idempotent_and_releases_everything(settings: Settings) -> None:
    store = await Store.open(settings)
    await store.close()
    await store.close()
    reopened = await Store.open(settings)
    await reopened.close()
