"""index_file against a real store: what is written, what is re-embedded, what is dropped."""

from __future__ import annotations

import json
from pathlib import Path

from cairn.config import Settings
from cairn.files.index import index_file
from cairn.store.store import Store


def _small_chunks(settings: Settings) -> Settings:
    return settings.model_copy(update={"files_chunk_tokens": 120, "files_chunk_overlap": 0.0})


def _module(names: list[str], body: str = "compute") -> str:
    return "\n\n".join(
        f"def {name}(value):\n" + "".join(f"    step_{i} = {body}_{name}(value, {i})\n" for i in range(8))
        for name in names
    )


async def _outbox(store: Store) -> dict[int, str]:
    rows = await store.db.fetchall("SELECT item_id, op FROM vector_outbox WHERE kind = 'chunks'")
    return {int(row["item_id"]): row["op"] for row in rows}


async def _chunks(store: Store) -> dict[int, tuple[int, str]]:
    rows = await store.db.fetchall("SELECT id, chunk_index, content FROM file_chunks ORDER BY chunk_index")
    return {int(row["id"]): (int(row["chunk_index"]), row["content"]) for row in rows}


async def test_a_new_file_becomes_a_document_with_chunks_fts_and_vectors(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    source = project_dir / "src" / "LoginButton.tsx"
    source.write_text(
        "export const LoginButton = () => {\n  return <button onClick={signIn}>Sign in</button>;\n};\n"
    )
    outcome = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert (outcome.status, outcome.reason, outcome.chunks) == ("indexed", None, 1)

    document = await store.db.fetchone("SELECT * FROM file_documents WHERE id = ?", (outcome.document_id,))
    assert document is not None
    assert (document["rel_path"], document["size"], document["line_count"]) == (
        "src/LoginButton.tsx",
        source.stat().st_size,
        3,
    )
    assert json.loads(document["keywords"])[0] == "LoginButton"
    chunk = await store.db.fetchone("SELECT * FROM file_chunks WHERE document_id = ?", (outcome.document_id,))
    assert chunk is not None and (chunk["chunk_index"], chunk["start_line"], chunk["end_line"]) == (0, 1, 3)

    found = await store.db.fetchall(
        "SELECT rowid FROM file_chunks_fts WHERE file_chunks_fts MATCH ?", ("button AND signIn",)
    )
    assert [row["rowid"] for row in found] == [chunk["id"]]

    assert await _outbox(store) == {chunk["id"]: "upsert"}
    await store.sync_vectors()
    hits = store.vectors.query("chunks", "login button component", n=1, metadata=True)
    assert hits[0].id == str(chunk["id"])
    assert hits[0].metadata["rel_path"] == "src/LoginButton.tsx"
    assert hits[0].metadata["project_id"] == project_id


async def test_an_unchanged_file_writes_nothing_and_embeds_nothing(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    settings = _small_chunks(settings)
    source = project_dir / "src" / "calc.py"
    source.write_text(_module([f"step_{n}" for n in range(10)]))
    first = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert first.status == "indexed" and first.chunks > 3
    await store.sync_vectors()
    indexed_at = await store.db.scalar("SELECT indexed_at FROM file_documents")
    before = await _chunks(store)

    again = await index_file(store.db, settings, project_id, project_dir, "src/calc.py")
    assert (again.status, again.document_id, again.chunks) == ("unchanged", first.document_id, first.chunks)
    assert await _outbox(store) == {}
    assert await store.sync_vectors() == 0
    assert await _chunks(store) == before
    assert await store.db.scalar("SELECT indexed_at FROM file_documents") == indexed_at


async def test_a_changed_file_requeues_only_its_changed_chunks(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    settings = _small_chunks(settings)
    names = [f"step_{n}" for n in range(12)]
    source = project_dir / "src" / "calc.py"
    source.write_text(_module(names))
    await index_file(store.db, settings, project_id, project_dir, str(source))
    await store.sync_vectors()
    before = await _chunks(store)

    source.write_text(_module(names[:-1]) + "\n\n" + _module(names[-1:], body="changed"))
    outcome = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert outcome.status == "indexed"
    after = await _chunks(store)
    changed = {chunk_id for chunk_id, row in after.items() if before.get(chunk_id) != row}
    assert changed and len(changed) < len(after) / 2
    assert set(await _outbox(store)) == changed, "exactly the changed chunks are re-embedded"
    assert set(before) == set(after), "chunks keep their rows; changed ones are updated in place"
    assert await store.sync_vectors() == len(changed)
    assert store.vectors.count("chunks") == len(after)
    updated = await store.db.fetchall(
        "SELECT rowid FROM file_chunks_fts WHERE file_chunks_fts MATCH 'changed_step_11'"
    )
    assert {row["rowid"] for row in updated} <= changed and updated


async def test_a_shorter_file_drops_its_surplus_chunks_and_their_vectors(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    settings = _small_chunks(settings)
    source = project_dir / "src" / "calc.py"
    source.write_text(_module([f"step_{n}" for n in range(12)]))
    await index_file(store.db, settings, project_id, project_dir, str(source))
    await store.sync_vectors()
    before = await _chunks(store)

    source.write_text(_module([f"step_{n}" for n in range(3)]))
    outcome = await index_file(store.db, settings, project_id, project_dir, str(source))
    after = await _chunks(store)
    assert outcome.chunks == len(after) < len(before)
    assert sorted(index for index, _ in after.values()) == list(range(len(after)))
    gone = set(before) - set(after)
    outbox = await _outbox(store)
    assert {i for i, op in outbox.items() if op == "delete"} == gone
    await store.sync_vectors()
    assert store.vectors.get_ids("chunks") == {str(i) for i in after}


async def test_a_deleted_file_loses_its_document_chunks_and_vectors(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    source = project_dir / "src" / "gone.py"
    source.write_text(_module(["soon_gone"]))
    await index_file(store.db, settings, project_id, project_dir, str(source))
    await store.sync_vectors()
    assert store.vectors.count("chunks") == 1

    source.unlink()
    outcome = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert (outcome.status, outcome.reason) == ("skipped", "missing")
    assert await store.db.scalar("SELECT count(*) FROM file_documents") == 0
    assert await store.db.scalar("SELECT count(*) FROM file_chunks") == 0
    assert (
        await store.db.scalar("SELECT count(*) FROM file_chunks_fts WHERE file_chunks_fts MATCH 'soon_gone'")
        == 0
    )
    await store.sync_vectors()
    assert store.vectors.count("chunks") == 0


async def test_a_file_swapped_for_a_symlink_out_of_the_project_is_dropped(
    store: Store, settings: Settings, project_id: int, project_dir: Path, tmp_path: Path
) -> None:
    source = project_dir / "src" / "config.py"
    source.write_text("DEBUG = True\n")
    await index_file(store.db, settings, project_id, project_dir, str(source))
    private = tmp_path / "private.txt"
    private.write_text("not the project's\n")
    source.unlink()
    source.symlink_to(private)
    outcome = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert (outcome.status, outcome.reason) == ("skipped", "outside_project")
    assert await store.db.scalar("SELECT count(*) FROM file_documents") == 0


async def test_a_file_that_became_too_large_is_dropped(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    source = project_dir / "src" / "data.json"
    source.write_text('{"a": 1}\n')
    await index_file(store.db, settings, project_id, project_dir, str(source))
    source.write_text("[" + "1," * settings.files_max_bytes + "1]")
    outcome = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert (outcome.status, outcome.reason) == ("skipped", "too_large")
    assert await store.db.scalar("SELECT count(*) FROM file_documents") == 0


async def test_secrets_in_file_text_are_redacted_before_storing(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5" * 9
    source = project_dir / "src" / "client.py"
    source.write_text(f'API_KEY = "{key}"\nclient = Client(API_KEY)\n')
    await index_file(store.db, settings, project_id, project_dir, str(source))
    content = await store.db.scalar("SELECT content FROM file_chunks")
    keywords = await store.db.scalar("SELECT keywords FROM file_documents")
    assert key not in content and "[REDACTED" in content
    assert key not in keywords
    # The hash is of the file's bytes, so the next request still sees it unchanged.
    again = await index_file(store.db, settings, project_id, project_dir, str(source))
    assert again.status == "unchanged"


async def test_an_empty_file_is_a_document_without_chunks(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    (project_dir / "src" / "__init__.py").write_text("")
    outcome = await index_file(store.db, settings, project_id, project_dir, "src/__init__.py")
    assert (outcome.status, outcome.chunks) == ("indexed", 0)
    assert await store.db.scalar("SELECT line_count FROM file_documents") == 0


async def test_an_unreadable_path_is_a_failed_outcome_not_an_exception(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    outcome = await index_file(store.db, settings, project_id, project_dir, "x" * 300)
    assert outcome.status == "failed"
    assert outcome.reason is not None and "too long" in outcome.reason
