"""A token in a session's working directory is stored nowhere: every path and name cairn keeps of a
session — its cwd on every message, the project's root and name, `project_paths`, the file requests and
learned reads below it, the vectors' metadata, the export — goes through the redaction message text
gets, and `cairn redact --rescan` fixes a store an older cairn filled with such paths in clear.

Transcripts are laid out as Claude Code lays them out (one directory per cwd, named after it), so the
token is also in the transcript's own path: capture needs that path to read the file again, so
`transcript_files.path` is the one column allowed to hold it (the export writes it redacted).
"""

from __future__ import annotations

import importlib
import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings as ChromaSettings

from cairn.agent.schema import BatchMessage, IndexBatch, SessionUpdate, extract_batch, render_batch_prompt
from cairn.config import Settings
from cairn.files.index import drain_requests
from cairn.files.policy import Refusal, admit
from cairn.files.requests import request_files
from cairn.ingest import sync_file
from cairn.recall.context import find_project
from cairn.rescan import rescan
from cairn.store.identity import claude_dir_name
from cairn.store.store import Store
from cairn.store.vectors import VECTOR_KINDS, collection_name
from cairn.transcripts.redact import redact
from tests.helpers.builders import Transcript
from tests.helpers.cli import cairn, cairn_json

GITHUB = "ghp_" + "Qw3rTy9Uio" * 3 + "P4sD5f"
ANTHROPIC = "sk-ant-api03-" + "Lm8Nb7Vc6X" * 4
#: What is searched for: the part of each token no marker or ordinary text contains.
BODIES = ("Qw3rTy9Uio", "Lm8Nb7Vc6X")
#: The transcript's own place, which capture reads the file from again (see the module docstring).
TRANSCRIPT_PATHS = {"transcript_files.path"}

ORDERS = "def total(orders):\n    return sum(order.amount for order in orders)\n"


def make_app(root: Path) -> Path:
    """A project directory on disk with one source file."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "orders.py").write_text(ORDERS, encoding="utf-8")
    return root


def working_session(cwd: Path | str, start: datetime) -> Transcript:
    """A weak cairn search, a Grep and a Read below the cwd, and the person moving on: capture requests
    the files, the feedback loop learns the read."""
    source = f"{cwd}/src/orders.py"
    t = Transcript(cwd, start=start)
    t.user("where is the orders total computed?")
    t.search("orders total", [0.31])
    t.tool(
        "Grep",
        {"pattern": "def total", "path": str(cwd)},
        f"Found 1 file\n{source}",
        structured={"mode": "files_with_matches", "filenames": [source], "numFiles": 1},
    )
    t.tool("Read", {"file_path": source}, ORDERS)
    t.say("The total is computed in src/orders.py by summing each order's amount.")
    t.user("good, leave it as it is")
    return t


def lay_out(transcript: Transcript, projects: Path) -> Path:
    """Where Claude Code writes the transcript of a session that ran in its cwd."""
    target = projects / claude_dir_name(transcript.cwd) / f"{transcript.session_id}.jsonl"
    return transcript.write(target)


def leaks(database: Path, bodies: tuple[str, ...] = BODIES) -> set[str]:
    """Every `table.column` of the SQLite store holding one of `bodies`: every table (the FTS5 indexes'
    shadow tables included, blobs read as bytes) and every column."""
    found = set()
    wanted = [body.encode() for body in bodies]
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        tables = [str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info('{table}')")]
            for row in conn.execute(f"SELECT * FROM '{table}'"):
                for column, value in zip(columns, row, strict=True):
                    data = value.encode() if isinstance(value, str) else value
                    if isinstance(data, bytes) and any(body in data for body in wanted):
                        found.add(f"{table}.{column}")
    return found


def vector_leaks(home: Path, bodies: tuple[str, ...] = BODIES) -> list[str]:
    """Every vector whose document or metadata holds one of `bodies`, read through Chroma itself."""
    client = chromadb.PersistentClient(
        path=str(home / "chroma"), settings=ChromaSettings(anonymized_telemetry=False)
    )
    found = []
    names = {collection.name for collection in client.list_collections()}
    for kind in VECTOR_KINDS:
        if collection_name(kind) not in names:
            continue
        got = client.get_collection(collection_name(kind)).get(include=["documents", "metadatas"])
        for item, document, metadata in zip(
            got["ids"], got["documents"] or [], got["metadatas"] or [], strict=False
        ):
            text = json.dumps([document, metadata])
            if any(body in text for body in bodies):
                found.append(f"{kind} {item}: {text[:200]}")
    return found


def chroma_log_holding(home: Path, bodies: tuple[str, ...] = BODIES) -> bool:
    """Whether Chroma's own SQLite file (metadata, its write log, free pages) holds one of `bodies`.

    Its HNSW segment files are not searched: Chroma writes their unused slots from uninitialised memory
    (`cairn.lifecycle.hnsw_scrub`), and this process's memory held the raw transcripts and the old rows."""
    data = (home / "chroma" / "chroma.sqlite3").read_bytes()
    return any(body.encode() in data for body in bodies)


def query(home: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(f"file:{home / 'cairn.db'}?mode=ro", uri=True)) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def synced(cairn_home: Path, tmp_path: Path) -> dict[str, Path]:
    """Four sessions synced by a real `cairn sync`: two in a real directory whose name is a GitHub token
    (the same cwd, so one project), one in a cwd holding an Anthropic key that is not on this disk,
    and the same work in a directory without a secret (the control: nothing may change for it)."""
    projects = tmp_path / "claude-projects"
    secret = make_app(tmp_path / "work" / GITHUB / "app")
    plain = make_app(tmp_path / "work" / "plain" / "app")
    start = datetime.now(UTC) - timedelta(hours=3)
    lay_out(working_session(secret, start), projects)
    lay_out(working_session(secret, start + timedelta(hours=1)), projects)
    lay_out(working_session(f"/home/dev/{ANTHROPIC}/svc", start), projects)
    lay_out(working_session(plain, start), projects)
    report = cairn_json("sync")
    assert report["sync"]["messages_added"] >= 4 * 7 and not report["skipped"], report
    return {"home": cairn_home, "secret": secret, "plain": plain, "projects": projects}


def test_a_token_in_the_cwd_is_stored_nowhere_and_the_export_holds_none(synced: dict[str, Path]) -> None:
    home = synced["home"]
    # Each of these held the token in clear: the store's rows and full-text indexes, Chroma's vectors
    # and its log, the export.
    assert leaks(home / "cairn.db") == TRANSCRIPT_PATHS
    assert vector_leaks(home) == []
    assert not chroma_log_holding(home)
    exported = cairn("export").stdout
    assert not any(body in exported for body in BODIES)
    assert exported.count("[REDACTED:github_token]") >= 5 and "[REDACTED:anthropic_api_key]" in exported
    # The marker stands where the token was, on every row that names the session.
    redacted = redact(str(synced["secret"]))
    assert redacted == str(synced["secret"]).replace(GITHUB, "[REDACTED:github_token]")
    rows = query(home, "SELECT DISTINCT cwd FROM messages WHERE cwd LIKE '%REDACTED%' ORDER BY cwd")
    assert rows == [("/home/dev/[REDACTED:anthropic_api_key]/svc",), (redacted,)]


def test_one_cwd_is_still_one_project_and_a_plain_cwd_is_stored_as_before(synced: dict[str, Path]) -> None:
    home = synced["home"]
    redacted, plain = redact(str(synced["secret"])), str(synced["plain"])
    sessions = query(home, "SELECT cwd, project_id FROM sessions ORDER BY cwd")
    by_cwd: dict[object, set[object]] = {}
    for cwd, project in sessions:
        by_cwd.setdefault(cwd, set()).add(project)
    assert len(sessions) == 4 and len(by_cwd[redacted]) == 1, "two sessions of one cwd: one project"
    assert query(
        home, "SELECT path, name, found_by FROM projects WHERE id = ?", (by_cwd[redacted].pop(),)
    ) == [(redacted, "app", "cwd")]
    ideas = "SELECT count(*) FROM ideas i JOIN sessions s ON s.id = i.session_id WHERE s.cwd = ?"
    assert query(home, ideas, (redacted,)) != [(0,)], "the indexer named the redacted transcripts back"
    # Byte for byte what an earlier cairn stored for a cwd without a secret.
    assert query(home, "SELECT path, name FROM projects WHERE id = ?", (by_cwd[plain].pop(),)) == [
        (plain, "app")
    ]
    stored = query(home, "SELECT count(*) FROM messages WHERE cwd = ?", (plain,))
    assert stored == query(home, "SELECT message_count FROM sessions WHERE cwd = ?", (plain,)) != [(0,)]
    assert query(home, "SELECT kind, checkout FROM project_paths WHERE path = ?", (plain,)) == [
        ("cwd", plain)
    ]
    assert query(home, "SELECT count(*) FROM project_paths WHERE path = ?", (claude_dir_name(plain),)) == [
        (1,)
    ]


def test_the_indexing_prompt_names_a_transcript_redacted() -> None:
    """The model is shown the transcript's path redacted; it names the file back by that path or its
    base name, which the validation of its answer accepts (the sessions above got their ideas)."""
    path = f"/home/dev/.claude/projects/-home-dev-{GITHUB}-app/5c0375b4.jsonl"
    batch = IndexBatch(
        updates=[
            SessionUpdate(
                session="5c0375b4", file_path=path, messages=[BatchMessage(line=1, role="user", content="hi")]
            )
        ]
    )
    prompt = render_batch_prompt(batch)
    assert all(body not in prompt for body in BODIES)
    shown = extract_batch(prompt).updates[0].file_path
    assert shown == redact(path) and Path(shown).name == Path(path).name
    assert batch.updates[0].file_path == path, "the batch itself keeps the path its cursors are found by"


@pytest.mark.process
async def test_the_raw_cwd_still_finds_its_project(synced: dict[str, Path], settings: Settings) -> None:
    """A hook and `--project` give the directory as it is on disk; the store holds it redacted."""
    secret = synced["secret"]
    async with await Store.open(settings) as store:
        for where in (secret, secret / "src"):
            found = await find_project(store.db, str(where))
            assert found is not None and found.path == redact(str(secret)), where
    shown = cairn_json("search", "orders total", "--project", str(secret), "--limit", "5")
    assert shown["results"], "the project is named by its real path"
    assert all(body not in json.dumps(shown) for body in BODIES), json.dumps(shown)[:3000]


def test_files_below_a_secret_directory_are_a_counted_skip(synced: dict[str, Path]) -> None:
    """Neither read nor learned from: the path would have to be stored to index them. The same work
    in the plain directory is indexed and learned from as before."""
    home, plain = synced["home"], str(synced["plain"])
    requests = query(home, "SELECT path, status, outcome FROM file_requests ORDER BY path")
    secret_rows = [row for row in requests if "REDACTED" in str(row[0])]
    assert secret_rows, requests
    assert {(status, outcome) for _path, status, outcome in secret_rows} == {("skipped", "secret")}
    assert (f"{plain}/src/orders.py", "indexed", None) in requests
    assert query(home, "SELECT rel_path FROM file_documents") == [("src/orders.py",)]
    associations = query(home, "SELECT file_path FROM search_associations")
    assert associations == [(f"{plain}/src/orders.py",)], "learned in the plain project only"
    reads = [json.loads(str(r[0])) for r in query(home, "SELECT reads FROM learning_sessions")]
    assert sorted(len(r) for r in reads) == [1, 1, 1, 1]
    files = cairn_json("files", "--status", "skipped")
    assert all(body not in json.dumps(files) for body in BODIES)


async def test_a_redacted_project_directory_is_refused_as_secret_without_reaching_the_disk(
    settings: Settings, tmp_path: Path
) -> None:
    """A project whose stored root held a secret names no directory: its files are refused as `secret`,
    counted by the drain, even where a directory of that very name exists."""
    decoy = make_app(tmp_path / "[REDACTED:github_token]" / "app")
    refused = admit(str(decoy), str(decoy / "src" / "orders.py"), max_bytes=10_000)
    assert isinstance(refused, Refusal) and refused.reason == "secret", refused

    async with await Store.open(settings) as store:
        async with store.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO projects (path, name) VALUES (?, 'app') RETURNING id", (str(decoy),)
            )
            project = int((await cursor.fetchone())[0])
            await request_files(conn, project, [("src/orders.py", "read"), (str(decoy / "README"), "edit")])
        report = await drain_requests(store.db, settings)
        assert (report.skipped, report.by_reason, report.indexed, report.failed) == (2, {"secret": 2}, 0, 0)
        assert await store.db.scalar("SELECT count(*) FROM file_documents") == 0


async def _old_store(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A store as a cairn before this redaction filled it: the same transcript captured with the cwd
    and every project path in clear, an association and an indexed file below the secret directory."""
    normalise = importlib.import_module("cairn.transcripts.normalise")
    projects = importlib.import_module("cairn.store.projects")
    sessions = importlib.import_module("cairn.learning.sessions")
    secret = tmp_path / "work" / GITHUB / "app"
    path = lay_out(
        working_session(secret, datetime.now(UTC) - timedelta(hours=2)), tmp_path / "claude-projects"
    )
    with monkeypatch.context() as patch:
        for module in (projects, sessions):
            patch.setattr(module, "redact", lambda text: text, raising=False)  # (older code had none)
        # Messages keep today's text redaction; only the cwd went through untouched.
        patch.setattr(normalise, "redact", lambda text: text if text == str(secret) else redact(text))
        report = await sync_file(store, path, settings)
    assert report.error is None
    async with store.db.write() as conn:
        project = (await (await conn.execute("SELECT id FROM projects")).fetchone())[0]
        cursor = await conn.execute(
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size, keywords) "
            "VALUES (?, ?, 'x', 10, '[]') RETURNING id",
            (project, f"keys/{GITHUB}.txt"),
        )
        document = (await cursor.fetchone())[0]
        await conn.execute(
            "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content) "
            "VALUES (?, 0, 1, 1, 'the deploy key for the orders service')",
            (document,),
        )
        # Two associations with the path in clear, and the first again as today's rules would learn it
        # (the redacted path): the rescan folds that pair into one.
        await conn.executemany(
            "INSERT INTO search_associations (query, file_path, rel_path, project_id) VALUES (?, ?, ?, ?)",
            [
                (query_text, f"{directory}/src/orders.py", "src/orders.py", project)
                for query_text, directory in (
                    ("orders total", secret),
                    ("where is the orders total", secret),
                    ("orders total", redact(str(secret))),
                )
            ],
        )
    await store.sync_vectors()
    return path


@pytest.mark.process
async def test_rescan_redacts_the_paths_an_older_cairn_stored(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await _old_store(store, settings, tmp_path, monkeypatch)
    home = settings.home
    before = leaks(home / "cairn.db")
    for where in ("messages.cwd", "sessions.cwd", "projects.path", "project_paths.path",
                  "project_paths.checkout", "search_associations.file_path", "file_documents.rel_path",
                  "learning_sessions.reads"):  # fmt: skip
        assert where in before, (where, before)
    assert vector_leaks(home), "the project's path is in its vectors' metadata"

    # Capture under today's rules meanwhile: the new session of the same cwd files under the
    # redacted path, a second project until the rescan folds the old one into it.
    secret = tmp_path / "work" / GITHUB / "app"
    later = lay_out(
        working_session(secret, datetime.now(UTC) - timedelta(hours=1)), tmp_path / "claude-projects"
    )
    assert (await sync_file(store, later, settings)).error is None
    assert await store.db.scalar("SELECT count(*) FROM projects") == 2

    report = await rescan(store, settings)

    assert report.finished and report.vectors_error is None
    assert leaks(home / "cairn.db") == TRANSCRIPT_PATHS
    assert vector_leaks(home) == []
    assert not chroma_log_holding(home), "a vector's old metadata lingered in Chroma's log"
    exported = cairn("export").stdout
    assert not any(body in exported for body in BODIES)
    redacted = redact(str(secret))
    # One project again, at the redacted path, holding both sessions; its paths folded likewise.
    assert [tuple(r) for r in await store.db.fetchall("SELECT path, name FROM projects")] == [
        (redacted, "app")
    ]
    assert await store.db.scalar("SELECT count(DISTINCT project_id) FROM sessions") == 1
    assert await store.db.scalar("SELECT count(*) FROM project_paths WHERE kind = 'cwd'") == 1
    assert await store.db.scalar("SELECT count(*) FROM project_paths WHERE kind = 'claude_dir'") == 1
    # The association learned under both spellings is one, learned twice; the file named by a token
    # is gone with its chunks, as today's index would never have read it.
    rows = await store.db.fetchall(
        "SELECT query, file_path, times_learned FROM search_associations ORDER BY query"
    )
    assert [tuple(r) for r in rows] == [
        ("orders total", f"{redacted}/src/orders.py", 2),
        ("where is the orders total", f"{redacted}/src/orders.py", 1),
    ]
    assert await store.db.scalar("SELECT count(*) FROM file_documents") == 0
    assert await store.db.scalar("SELECT count(*) FROM file_chunks") == 0
    assert report.tables["projects"].changed == 1 and report.tables["project_paths"].changed >= 2
    # Reading the transcript again stores nothing twice; a second rescan finds nothing to change.
    messages = await store.db.scalar("SELECT count(*) FROM messages")
    async with store.db.write() as conn:
        await conn.execute("UPDATE transcript_files SET byte_offset = 0, line = 0")
    await sync_file(store, path, settings)
    assert await store.db.scalar("SELECT count(*) FROM messages") == messages
    again = await rescan(store, settings)
    assert again.finished and sum(c.changed for c in again.tables.values()) == 0


@pytest.mark.process
async def test_cairn_redact_rescan_fixes_the_paths_on_the_command_line(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _old_store(store, settings, tmp_path, monkeypatch)
    await store.close()  # the command takes the store's lock itself (no daemon runs here)
    assert "projects.path" in leaks(settings.home / "cairn.db")

    data = cairn_json("redact", "--rescan")

    assert data["finished"] and data["vectors_error"] is None
    assert leaks(settings.home / "cairn.db") == TRANSCRIPT_PATHS
    assert vector_leaks(settings.home) == [] and not chroma_log_holding(settings.home)
    assert data["tables"]["projects"]["changed"] == 1 and data["tables"]["sessions"]["changed"] == 1
    assert data["tables"]["project_paths"]["changed"] == 2  # the cwd and the Claude Code directory
