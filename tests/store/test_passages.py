"""Message passages in the store: written once with their message, gone with it, vectors through the
outbox for the passages the `passage_vectors` setting picks, rebuilt by reindex-vectors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store import outbox
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.store.ingesting import read
from tests.store.passage_transcript import DEEP_SENTENCE, HIDDEN_FILE, LONG_ANSWER, long_session


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return long_session(tmp_path / "work").write(tmp_path / "projects" / "-work" / "s.jsonl")


async def open_store(
    home: Path, embedding_function: EmbeddingFunction[Documents], **overrides: object
) -> Store:
    settings = Settings.load(home, **overrides)
    return await Store.open(settings, vectors=VectorIndex(settings, embedding_function))


@pytest.fixture
async def synced(store: Store, transcript: Path) -> AsyncIterator[Store]:
    report = await sync_paths(store, [transcript], store.settings)
    assert not report.errors
    yield store


async def passages_of(store: Store) -> dict[str, list[tuple[int, int, int, str]]]:
    """(seq, start, end, text) of each message's passages, by message kind."""
    rows = await store.db.fetchall(
        "SELECT m.kind, p.seq, p.char_start, p.char_end, p.text FROM message_passages AS p "
        "JOIN messages AS m ON m.id = p.message_id ORDER BY p.id"
    )
    found: dict[str, list[tuple[int, int, int, str]]] = {}
    for row in rows:
        found.setdefault(row["kind"], []).append(
            (row["seq"], row["char_start"], row["char_end"], row["text"])
        )
    return found


async def test_capture_stores_passages_of_long_messages_once(synced: Store, transcript: Path) -> None:
    store = synced
    found = await passages_of(store)
    assert set(found) == {"tool_result", "text"}  # the long result and the long answer; short ones none
    tool_text = "".join(text for *_, text in found["tool_result"])
    assert HIDDEN_FILE in tool_text  # the clipped middle, kept in full
    stored = await store.db.scalar("SELECT text FROM messages WHERE kind = 'tool_result'")
    assert HIDDEN_FILE not in stored  # while the message keeps its clipped display text
    answer = [(start, end, text) for _, start, end, text in found["text"]]
    assert all(LONG_ANSWER[start:end] == text for start, end, text in answer)
    assert DEEP_SENTENCE in answer[-1][2]

    before = await store.db.scalar("SELECT count(*) FROM message_passages")
    # Replaying the same read adds nothing: its messages are stored, so their passages are too.
    result, messages = read(transcript)
    stats = await store.ingest(transcript, result, messages)
    assert (stats.messages_added, stats.passages_added) == (0, 0)
    report = await sync_paths(store, [transcript], store.settings)
    assert report.messages_added == 0
    assert await store.db.scalar("SELECT count(*) FROM message_passages") == before
    assert (await store.stats()).message_passages == before


async def test_text_passages_beyond_the_first_get_vectors_by_default(synced: Store) -> None:
    store = synced
    rows = await store.db.fetchall(
        "SELECT p.id, p.seq, m.kind FROM message_passages AS p JOIN messages AS m ON m.id = p.message_id"
    )
    expected = {str(r["id"]) for r in rows if r["kind"] == "text" and r["seq"] > 0}
    assert expected and store.vectors.get_ids("passages") == expected
    assert await outbox.pending(store.db) == 0  # the others were never queued for nothing
    metadata = store.vectors.query("passages", DEEP_SENTENCE, 1, metadata=True)[0].metadata
    message = await store.db.fetchone("SELECT id, session_id FROM messages WHERE text = ?", (LONG_ANSWER,))
    assert metadata["message_id"] == message["id"] and metadata["session_id"] == message["session_id"]
    assert metadata["kind"] == "text" and metadata["role"] == "assistant" and metadata["project"]
    stats = await store.stats()
    assert stats.vectors is not None and stats.vectors["passages"] == len(expected)


@pytest.mark.parametrize(
    ("policy", "kinds"), [("all", {"text", "tool_result"}), ("prose", {"text"}), ("none", set())]
)
async def test_passage_vectors_is_a_setting(
    cairn_home: Path,
    embedding_function: EmbeddingFunction[Documents],
    transcript: Path,
    policy: str,
    kinds: set[str],
) -> None:
    async with await open_store(cairn_home, embedding_function, passage_vectors=policy) as store:
        await sync_paths(store, [transcript], store.settings)
        rows = await store.db.fetchall(
            "SELECT p.id, p.seq, m.kind FROM message_passages AS p JOIN messages AS m ON m.id = p.message_id"
        )
        expected = {str(r["id"]) for r in rows if r["kind"] in kinds and r["seq"] > 0}
        assert store.vectors.get_ids("passages") == expected
        assert await outbox.pending(store.db) == 0


async def test_deleting_a_message_deletes_its_passages_and_their_vectors(synced: Store) -> None:
    store = synced
    message = await store.db.scalar("SELECT id FROM messages WHERE text = ?", (LONG_ANSWER,))
    passages = {
        str(r[0])
        for r in await store.db.fetchall("SELECT id FROM message_passages WHERE message_id = ?", (message,))
    }
    assert passages & store.vectors.get_ids("passages")
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM messages WHERE id = ?", (message,))
    assert (
        await store.db.scalar("SELECT count(*) FROM message_passages WHERE message_id = ?", (message,)) == 0
    )
    assert (
        await store.db.scalar(
            "SELECT count(*) FROM message_passages_fts WHERE message_passages_fts MATCH 'nightly'"
        )
        == 0
    )
    await store.sync_vectors()
    assert not passages & store.vectors.get_ids("passages")
    assert await store.db.scalar("SELECT count(*) FROM message_passages") > 0  # the other message's stay


async def test_reindex_vectors_rebuilds_the_passages_collection(synced: Store) -> None:
    store = synced
    expected = store.vectors.get_ids("passages")
    store.vectors.reset("passages")
    assert store.vectors.count("passages") == 0
    await store.reindex_vectors()
    assert store.vectors.get_ids("passages") == expected


async def test_messages_stored_without_passages_get_them_at_reindex(
    cairn_home: Path, embedding_function: EmbeddingFunction[Documents], transcript: Path
) -> None:
    async with await open_store(cairn_home, embedding_function, passages=False) as store:
        await sync_paths(store, [transcript], store.settings)
        assert await store.db.scalar("SELECT count(*) FROM message_passages") == 0
        assert store.vectors.count("passages") == 0
    async with await open_store(cairn_home, embedding_function) as store:
        await store.reindex_vectors()
        found = await passages_of(store)
        # Cut from the stored text: the answer in full, the clipped tool result as clipped.
        assert DEEP_SENTENCE in found["text"][-1][3]
        assert HIDDEN_FILE not in "".join(text for *_, text in found.get("tool_result", []))
        assert store.vectors.count("passages") == len([p for p in found["text"] if p[0] > 0])
        count = await store.db.scalar("SELECT count(*) FROM message_passages")
        assert await store.add_missing_passages() == 0
        assert await store.db.scalar("SELECT count(*) FROM message_passages") == count
