"""The vector outbox against a real SQLite and a real embedded Chroma: consistency across crashes."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cairn.config import Settings
from cairn.store import outbox
from cairn.store.outbox import SOURCES
from cairn.store.store import Store
from cairn.store.vectors import VECTOR_KINDS
from tests.store.ingesting import MAIN, SMALL, ingest
from tests.store.outbox_helpers import add_memory, assert_consistent


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    opened = await Store.open(settings)
    yield opened
    await opened.close()


def test_sources_cover_every_vector_kind() -> None:
    assert set(SOURCES) == set(VECTOR_KINDS)


async def test_sync_makes_chroma_match_sqlite(store: Store) -> None:
    await ingest(store, SMALL)
    await ingest(store, MAIN)
    ids = await add_memory(store, SMALL.stem)
    pending = await outbox.pending(store.db)
    assert pending > 0
    assert pending == await store.db.scalar(
        f"SELECT (SELECT count(*) FROM ({SOURCES['messages'].all_sql()})) + (SELECT count(*) FROM ideas) "
        "+ (SELECT count(*) FROM topic_spans) + (SELECT count(*) FROM entities) "
        "+ (SELECT count(*) FROM file_chunks) + (SELECT count(*) FROM search_associations) "
        f"+ (SELECT count(*) FROM ({SOURCES['passages'].all_sql()}))"  # the others are never queued
    )
    seen: list[tuple[int, int]] = []

    applied = await store.sync_vectors(progress=lambda done, total: seen.append((done, total)))

    assert applied == pending
    assert seen[0] == (0, pending) and seen[-1] == (pending, pending)
    assert await outbox.pending(store.db) == 0
    await assert_consistent(store)
    noise = await store.db.scalar("SELECT count(*) FROM messages WHERE is_noise = 1")
    assert noise > 0
    assert store.vectors.count("messages") < await store.db.scalar("SELECT count(*) FROM messages")

    # Metadata lets search filter superseded ideas out and scope by project.
    current = store.vectors.query("ideas", "where do vectors live", 5, where={"superseded": False})
    assert [hit.id for hit in current] == [str(ids["new"])]
    collection = store.vectors._collection("ideas")
    meta = collection.get(ids=[str(ids["old"])], include=["metadatas"])["metadatas"][0]
    assert meta["superseded"] is True and meta["intent"] == "decision"
    assert meta["session_id"] == SMALL.stem and meta["project"] == "/path/to/Demo"
    message_meta = store.vectors._collection("messages").get(limit=1, include=["metadatas"])["metadatas"][0]
    assert {"session_id", "role", "kind", "project"} <= set(message_meta)

    assert await store.sync_vectors() == 0  # nothing left to do


async def test_updates_and_deletes_reach_chroma(store: Store) -> None:
    await ingest(store, SMALL)
    ids = await add_memory(store, SMALL.stem)
    await store.sync_vectors()
    message_id = await store.db.scalar("SELECT min(id) FROM messages WHERE is_noise = 0")
    passage_of = await store.db.scalar(
        "SELECT message_id FROM message_passages WHERE id = ?", (ids["passage"],)
    )

    async with store.db.write() as conn:
        await conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
        await conn.execute("DELETE FROM entity_aliases")
        await conn.execute("UPDATE messages SET is_noise = 1 WHERE id = ?", (message_id + 1,))
        await conn.execute("UPDATE topic_spans SET name = 'Vector storage' WHERE id = ?", (ids["span"],))
    ops = dict(
        (tuple(r[:2]), r[2]) for r in await store.db.fetchall("SELECT kind, item_id, op FROM vector_outbox")
    )
    assert ops[("messages", message_id)] == "delete"
    assert ops[("entities", ids["entity"])] == "upsert"
    # The passage goes with its message (deleted) or follows its metadata (now noise): queued either way.
    assert ops.pop(("passages", ids["passage"])) == ("delete" if passage_of == message_id else "upsert")
    assert passage_of in (message_id, message_id + 1)
    assert len(ops) == 4

    await store.sync_vectors()

    await assert_consistent(store)
    assert str(message_id) not in store.vectors.get_ids("messages")
    assert str(message_id + 1) not in store.vectors.get_ids("messages")  # now noise: no vector
    hits = store.vectors.query("spans", "vector storage", 1)
    assert hits[0].id == str(ids["span"]) and hits[0].score > 0.5


async def test_crash_between_chroma_write_and_outbox_delete_replays_cleanly(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ingest(store, SMALL)
    pending = await outbox.pending(store.db)

    async def crash(db: object, rows: object) -> None:
        raise KeyboardInterrupt("killed after the Chroma upsert")

    monkeypatch.setattr(outbox, "_acknowledge", crash)
    with pytest.raises(KeyboardInterrupt):
        await store.sync_vectors()
    monkeypatch.undo()
    written = store.vectors.get_ids("messages")
    assert written  # Chroma got the vectors ...
    assert await outbox.pending(store.db) == pending  # ... but the outbox still holds every row

    assert await store.sync_vectors() == pending

    assert store.vectors.get_ids("messages") == written
    assert store.vectors.count("messages") == len(written)
    await assert_consistent(store)


async def test_a_change_committed_during_the_chroma_write_stays_queued(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ingest(store, SMALL)
    target = await store.db.scalar("SELECT min(id) FROM messages WHERE is_noise = 0")
    pending = await outbox.pending(store.db)
    real_apply = outbox._apply
    rounds: list[list[int]] = []

    async def apply_then_edit(db: Any, vectors: Any, source: Any, ids: list[int]) -> None:
        await real_apply(db, vectors, source, ids)
        rounds.append(list(ids))
        if len(rounds) == 1:  # an edit commits after its old text was sent to Chroma
            async with db.write() as conn:
                await conn.execute(
                    "UPDATE messages SET text = 'quokka census in zanzibar' WHERE id = ?", (target,)
                )

    monkeypatch.setattr(outbox, "_apply", apply_then_edit)
    seen: list[tuple[int, int]] = []
    applied = await store.sync_vectors(progress=lambda done, total: seen.append((done, total)))

    assert rounds[1] == [target]  # the first acknowledgement left the edited row queued
    assert seen[1] == (pending, pending + 1)
    assert applied == pending + 1
    assert await outbox.pending(store.db) == 0
    assert store.vectors.query("messages", "quokka census in zanzibar", 1)[0].id == str(target)
    await assert_consistent(store)


async def test_reindex_restores_every_vector_after_chroma_is_lost(settings: Settings) -> None:
    async with await Store.open(settings) as store:
        await ingest(store, SMALL)
        await ingest(store, MAIN)
        await add_memory(store, SMALL.stem)
        await store.sync_vectors()
        before = {kind: store.vectors.get_ids(kind) for kind in VECTOR_KINDS}
    assert all(before.values())

    shutil.rmtree(settings.chroma_dir)

    async with await Store.open(settings) as store:
        assert all(store.vectors.count(kind) == 0 for kind in VECTOR_KINDS)
        restored = await store.reindex_vectors()
        assert restored == sum(len(ids) for ids in before.values())
        assert {kind: store.vectors.get_ids(kind) for kind in VECTOR_KINDS} == before
        assert await outbox.pending(store.db) == 0
        await assert_consistent(store)
        stats = await store.stats()
        assert stats.vectors == {kind: len(before[kind]) for kind in VECTOR_KINDS}


async def test_reindex_drops_strays_sqlite_does_not_have(store: Store) -> None:
    await ingest(store, SMALL)
    await store.sync_vectors()
    store.vectors.upsert("messages", ["999999"], ["a stray vector"], None)
    assert "999999" in store.vectors.get_ids("messages")
    await store.reindex_vectors()
    await assert_consistent(store)


async def test_enqueue_requeues_items_explicitly(store: Store) -> None:
    await ingest(store, SMALL)
    await store.sync_vectors()
    ids = [r[0] for r in await store.db.fetchall("SELECT id FROM messages WHERE is_noise = 0 LIMIT 3")]
    async with store.db.write() as conn:
        await outbox.enqueue(conn, "messages", ids)
    assert await outbox.pending(store.db) == 3
    assert await store.sync_vectors() == 3
    await assert_consistent(store)
    async with store.db.write() as conn:
        with pytest.raises(ValueError, match="unknown vector kind"):
            await outbox.enqueue(conn, "pages", [1])
