"""`cairn redact --rescan`: secrets stored under older rules leave SQLite, FTS and Chroma; resumable.

The store is filled the way an older cairn filled it: a transcript captured with redaction switched
off (the rules of that time let these two secrets through), and the indexer's and file index's rows
written as they would have been from that text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.rescan import MARKER_NAME, TABLES, rescan, rules_fingerprint
from cairn.store import outbox
from cairn.store.store import Store
from cairn.transcripts.redact import redact
from tests.helpers.rescan import MYSQL, SECRETS, URL, _leaky_store

# What FTS5's unicode61 tokenizer makes of SECRETS: `-pMyS3cretPW` is one token, `p@ssW0rdAt` two.
FTS_TERMS = ('"pMyS3cretPW"', '"ssW0rdAt"')
FTS_TABLES = ("messages_fts", "message_passages_fts", "ideas_fts", "spans_fts", "file_chunks_fts")
VECTOR_KINDS = ("messages", "passages", "ideas", "spans", "entities", "chunks", "associations")


async def _rows_with_secrets(store: Store) -> list[str]:
    found = []
    for table in TABLES:
        for column in table.columns:
            for secret in SECRETS:
                n = await store.db.scalar(
                    f"SELECT count(*) FROM {table.name} WHERE instr({column}, ?)", (secret,)
                )
                if n:
                    found.append(f"{table.name}.{column}: {secret}")
    if await store.db.scalar("SELECT count(*) FROM file_documents WHERE instr(keywords, 'MyS3cretPW')"):
        found.append("file_documents.keywords")
    return found


async def _fts_hits(store: Store) -> list[str]:
    hits = []
    for table in FTS_TABLES:
        for term in FTS_TERMS:
            if await store.db.scalar(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (term,)):
                hits.append(f"{table}: {term}")
    return hits


async def _documents_with_secrets(store: Store, settings: Settings) -> dict[tuple[str, int], str]:
    """Every vector document (as the outbox builds it from SQLite) that holds a secret, by (kind, id)."""
    found = {}
    for kind, source in outbox.sources_for(settings.passage_vectors).items():
        ids = [row["id"] for row in await store.db.fetchall(source.all_sql())]
        rows = await store.db.fetchall(source.load_sql(), (json.dumps(ids),))
        for row in rows:
            if any(secret in row["document"] for secret in SECRETS):
                found[(kind, row["id"])] = row["document"]
    return found


async def _current_documents(store: Store, settings: Settings, keys: list[tuple[str, int]]) -> list[str]:
    sources = outbox.sources_for(settings.passage_vectors)
    documents = []
    for kind, item in keys:
        row = await store.db.fetchone(sources[kind].load_sql(), (json.dumps([item]),))
        assert row is not None, (kind, item)
        documents.append(row["document"])
    return documents


def _stored_vectors(store: Store, keys: list[tuple[str, int]]) -> np.ndarray:
    """Chroma keeps vectors only (no documents): what it holds for each item, as rows of a matrix."""
    vectors = []
    for kind, item in keys:
        stored = store.vectors.get_embeddings(kind, [str(item)])
        assert str(item) in stored, (kind, item)
        vectors.append(stored[str(item)])
    return np.array(vectors)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise: is the stored vector the embedding of that text (cosine ~ 1)?"""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1) > 0.999


async def test_rescan_removes_the_two_leaked_secrets_from_sqlite_fts_and_chroma(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await _leaky_store(store, settings, tmp_path, monkeypatch)
    # The attack reproduced: both secrets are in rows, full-text indexes and vectors of every kind.
    leaked = await _rows_with_secrets(store)
    for where in ("messages.text", "messages.tool_calls", "message_passages.text", "ideas.content",
                  "topic_spans.summary", "entities.canonical_name", "file_chunks.content",
                  "search_associations.query", "file_documents.keywords"):  # fmt: skip
        assert any(item.startswith(where) for item in leaked), where
    assert len(await _fts_hits(store)) >= 6
    leaky = await _documents_with_secrets(store, settings)
    assert {kind for kind, _item in leaky} == set(VECTOR_KINDS)
    keys = sorted(leaky)
    old_embeddings = np.array(store.vectors.embed([leaky[key] for key in keys]))
    assert _same(_stored_vectors(store, keys), old_embeddings).all()
    messages_before = await store.db.scalar("SELECT count(*) FROM messages")

    report = await rescan(store, settings)

    assert report.finished and not report.resumed and report.vectors_error is None
    assert await _rows_with_secrets(store) == []
    assert await _fts_hits(store) == []
    assert await _documents_with_secrets(store, settings) == {}
    # Every vector made from a secret was re-made from the redacted text.
    stored = _stored_vectors(store, keys)
    new_embeddings = np.array(store.vectors.embed(await _current_documents(store, settings, keys)))
    assert _same(stored, new_embeddings).all()
    # (A long message's own vector reads its first 256 word pieces only: a secret deeper in never
    # reached it, so old and new embeddings agree there. Its passages' vectors carry it instead.)
    differs = ~_same(old_embeddings, new_embeddings)
    assert differs.sum() >= len(VECTOR_KINDS)
    assert not _same(stored[differs], old_embeddings[differs]).any()
    assert await store.db.scalar("SELECT count(*) FROM vector_outbox") == 0
    counts = {name: (c.scanned, c.changed) for name, c in report.tables.items()}
    assert counts["messages"][1] >= 3 and counts["ideas"] == (1, 1) and counts["file_chunks"] == (1, 1)
    assert not (settings.home / MARKER_NAME).exists()
    # Markers, not holes: what the text said is still there.
    texts = "\n".join(row[0] for row in await store.db.fetchall("SELECT text FROM messages"))
    assert "-p[REDACTED:password]" in texts and "postgres://u:[REDACTED:url_password]@host/db" in texts
    assert await store.db.scalar("SELECT keywords FROM file_documents") == '["deploy", "shop"]'
    # Passages still tile their message: ranges moved with the shorter text.
    rows = await store.db.fetchall(
        "SELECT char_start, char_end, text FROM message_passages ORDER BY message_id, seq"
    )
    assert all(r["char_end"] - r["char_start"] == len(r["text"]) for r in rows)
    # The hashes follow the text: reading the transcript again (today's rules) stores nothing twice.
    async with store.db.write() as conn:
        await conn.execute("UPDATE transcript_files SET byte_offset = 0, line = 0")
    await sync_file(store, path, settings)
    assert await store.db.scalar("SELECT count(*) FROM messages") == messages_before

    again = await rescan(store, settings)
    assert again.finished and sum(c.changed for c in again.tables.values()) == 0


async def test_rescan_redacts_branch_names_and_file_request_paths(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stored before branch names and file-request paths went through redaction: a branch named after a
    # token, and a request for a file whose name holds one (twice: once as the redacted path exists).
    await _leaky_store(store, settings, tmp_path, monkeypatch)
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    branch = f"feat/{token}"
    async with store.db.write() as conn:
        await conn.execute("UPDATE sessions SET git_branch = ?", (branch,))
        await conn.execute("UPDATE messages SET git_branch = ?", (branch,))
        project = (await (await conn.execute("SELECT id FROM projects")).fetchone())[0]
        for path in (f"notes/{token}.txt", f"keys/{token}", "keys/[REDACTED:github_token]"):
            await conn.execute(
                "INSERT INTO file_requests (project_id, path, reason) VALUES (?, ?, 'read')", (project, path)
            )
    leaked = (
        "SELECT (SELECT count(*) FROM sessions WHERE instr(git_branch, ?)) + (SELECT count(*) FROM messages "
    )
    leaked += "WHERE instr(git_branch, ?)) + (SELECT count(*) FROM file_requests WHERE instr(path, ?))"
    assert await store.db.scalar(leaked, (token, token, token)) > 3

    report = await rescan(store, settings)

    assert report.finished
    assert await store.db.scalar(leaked, (token, token, token)) == 0
    assert report.tables["sessions"].changed == 1 and report.tables["file_requests"].changed == 2
    paths = sorted(row[0] for row in await store.db.fetchall("SELECT path FROM file_requests"))
    assert len(paths) == 2 and all("[REDACTED" in path for path in paths), "the duplicate folded"
    assert await store.db.scalar("SELECT git_branch FROM sessions") == redact(branch)


async def test_an_interrupted_rescan_resumes_where_it_stopped(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _leaky_store(store, settings, tmp_path, monkeypatch)
    total = await store.db.scalar("SELECT count(*) FROM messages")
    batches = 0

    def stop_after_one_batch() -> bool:
        nonlocal batches
        batches += 1
        return batches > 1

    first = await rescan(store, settings, batch=2, should_stop=stop_after_one_batch)
    assert not first.finished and first.tables["messages"].scanned == 2
    marker = json.loads((settings.home / MARKER_NAME).read_text())
    assert marker["rules"] == rules_fingerprint() and marker["done"] == {"messages": 2}
    assert (settings.home / MARKER_NAME).stat().st_mode & 0o077 == 0

    second = await rescan(store, settings, batch=2)
    assert second.resumed and second.finished
    assert second.tables["messages"].scanned == total - 2
    assert await _rows_with_secrets(store) == []
    assert not (settings.home / MARKER_NAME).exists()


async def test_a_marker_from_other_rules_starts_over(store: Store, settings: Settings) -> None:
    (settings.home / MARKER_NAME).write_text(json.dumps({"rules": "older", "done": {"messages": 10**9}}))
    report = await rescan(store, settings)
    assert not report.resumed and report.finished


def _cairn(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "cairn", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


@pytest.mark.process
async def test_cairn_redact_rescan_on_the_command_line(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _leaky_store(store, settings, tmp_path, monkeypatch)
    await store.close()  # the command takes the store's lock itself (no daemon runs here)

    proc = _cairn("redact", "--rescan", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["finished"] and data["changed"] >= 7 and data["tables"]["messages"]["changed"] >= 3

    reopened = await Store.open(settings)
    try:
        assert await _rows_with_secrets(reopened) == []
        assert await _fts_hits(reopened) == []
    finally:
        await reopened.close()

    shown = _cairn("redact", stdin=f"{MYSQL}\n{URL}\n")
    assert shown.returncode == 0 and not any(secret in shown.stdout for secret in SECRETS)
