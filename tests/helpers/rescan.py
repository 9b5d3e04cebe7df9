"""A store captured with the old rules' blind spot (secrets stored unredacted), for the rescan tests of the
command line (tests/test_rescan.py) and the daemon (tests/daemon/test_rescan_daemon.py)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.store.store import Store, idea_hash
from tests.helpers.builders import Transcript

MYSQL = "mysql -u root -pMyS3cretPW shop"
URL = "postgres://u:p@ssW0rdAt@host/db"
SECRETS = ("MyS3cretPW", "ssW0rdAt")


def _long_prose(secret: str) -> str:
    """A message long enough for passages, with the secret deep in it (a later passage gets a vector)."""
    filler = " ".join(
        f"The migration step {i} copies the orders table and checks the counts." for i in range(60)
    )
    return f"{filler}\n\nTo connect I used {secret} and it worked.\n\n{filler}"


def _transcript(cwd: Path) -> Transcript:
    t = Transcript(cwd)
    t.user(f"the database is at {URL}, please check the orders")
    t.tool(
        "Bash", {"command": MYSQL, "description": "open the shop database"}, "Welcome to the MySQL monitor."
    )
    t.say(_long_prose(URL))
    return t


async def _leaky_store(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Capture with the old rules' blind spot (no redaction at all), then the derived rows."""
    normalise = importlib.import_module("cairn.transcripts.normalise")  # the package shadows the name

    with monkeypatch.context() as patch:
        patch.setattr(normalise, "redact", lambda text: text)
        path = _transcript(tmp_path / "project").write(tmp_path / "session.jsonl")
        report = await sync_file(store, path, settings)
    assert report.error is None and report.messages_added >= 3
    async with store.db.write() as conn:
        file_id = (await (await conn.execute("SELECT id FROM transcript_files")).fetchone())[0]
        session = (await (await conn.execute("SELECT id FROM sessions")).fetchone())[0]
        idea = f"The shop database is reached with {MYSQL}"
        await conn.execute(
            """INSERT INTO ideas (session_id, source_file_id, source_line, intent, content, content_hash)
               VALUES (?, ?, 1, 'context', ?, ?)""",
            (session, file_id, idea, idea_hash(idea)),
        )
        await conn.execute(
            "INSERT INTO topic_spans (session_id, file_id, name, summary, start_line) VALUES (?, ?, ?, ?, 1)",
            (session, file_id, "Database access", f"Connected via {URL}"),
        )
        await conn.execute(
            "INSERT INTO entities (canonical_name, type) VALUES (?, 'technology')", (f"shop db {URL}",)
        )
        project = (await (await conn.execute("SELECT id FROM projects")).fetchone())[0]
        cursor = await conn.execute(
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size, keywords) "
            "VALUES (?, 'deploy.sh', 'x', 10, ?) RETURNING id",
            (project, json.dumps(["deploy", "pMyS3cretPW", "shop"])),
        )
        document = (await cursor.fetchone())[0]
        await conn.execute(
            "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content) "
            "VALUES (?, 0, 1, 2, ?)",
            (document, f"#!/bin/sh\n# deploy the shop\n{MYSQL} < schema.sql\n"),
        )
        await conn.execute(
            "INSERT INTO search_associations (query, file_path, project_id) VALUES (?, ?, ?)",
            (f"how to run {MYSQL}", str(tmp_path / "project" / "deploy.sh"), project),
        )
    await store.sync_vectors()
    return path
