"""request_files and drain_requests: the queue between capture and the file index."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.files.index import DrainReport, drain_requests
from cairn.files.requests import FileReason, request_files
from cairn.files.touches import touched_files
from cairn.store.store import Store
from cairn.transcripts import read_from
from cairn.transcripts.tool_events import tool_events
from tests.helpers.builders import Transcript


async def _request(store: Store, project_id: int, touches: list[tuple[str, FileReason]]) -> int:
    async with store.db.write() as conn:
        return await request_files(conn, project_id, touches)


async def _requests(store: Store) -> dict[str, tuple[str, str, str | None, int]]:
    rows = await store.db.fetchall("SELECT path, reason, status, outcome, attempts FROM file_requests")
    return {row["path"]: (row["reason"], row["status"], row["outcome"], row["attempts"]) for row in rows}


async def test_requests_are_upserted_once_per_path_and_bad_ones_dropped(
    store: Store, project_id: int, project_dir: Path
) -> None:
    a, b = str(project_dir / "a.py"), str(project_dir / "b.py")
    bad: list[tuple[str, FileReason]] = [("", "read"), (a, "nonsense")]  # type: ignore[list-item]
    assert await _request(store, project_id, [(a, "read"), (b, "grep"), (a, "edit"), *bad]) == 2
    assert await _requests(store) == {a: ("edit", "pending", None, 0), b: ("grep", "pending", None, 0)}
    assert await _request(store, project_id, []) == 0


async def test_the_callers_transaction_decides(store: Store, project_id: int, project_dir: Path) -> None:
    try:
        async with store.db.write() as conn:
            await request_files(conn, project_id, [(str(project_dir / "a.py"), "read")])
            raise RuntimeError("capture failed")
    except RuntimeError:
        pass
    assert await _requests(store) == {}


async def test_drain_indexes_skips_and_fails_with_counted_reasons(
    store: Store, settings: Settings, project_id: int, project_dir: Path, tmp_path: Path
) -> None:
    (project_dir / "src" / "app.py").write_text("def main():\n    return 1\n")
    (project_dir / ".env").write_text("TOKEN=abc\n")
    (project_dir / "logo.png").write_bytes(b"\x89PNG\x00\x00")
    (tmp_path / "outside.py").write_text("x = 1\n")
    paths: dict[str, FileReason] = {
        str(project_dir / "src" / "app.py"): "read",
        str(project_dir / ".env"): "read",
        str(project_dir / "logo.png"): "glob",
        str(project_dir / "missing.py"): "edit",
        str(project_dir / "src"): "glob",
        str(tmp_path / "outside.py"): "read",
        "x" * 300: "read",
    }
    await _request(store, project_id, list(paths.items()))

    report = await drain_requests(store.db, settings)
    assert report == DrainReport(
        indexed=1,
        unchanged=0,
        skipped=5,
        failed=1,
        by_reason={"binary": 1, "missing": 1, "not_a_file": 1, "outside_project": 1, "secret": 1},
    )
    requests = await _requests(store)
    assert requests[str(project_dir / "src" / "app.py")] == ("read", "indexed", None, 1)
    assert requests[str(project_dir / ".env")] == ("read", "skipped", "secret", 1)
    assert requests[str(tmp_path / "outside.py")][1:3] == ("skipped", "outside_project")
    failed = requests["x" * 300]
    assert failed[1] == "failed" and failed[2] is not None and "too long" in failed[2]
    assert await store.db.scalar("SELECT count(*) FROM file_requests WHERE done_at IS NULL") == 0
    assert await store.db.scalar("SELECT group_concat(rel_path) FROM file_documents") == "src/app.py"

    # Nothing pending: a second drain does nothing.
    assert (await drain_requests(store.db, settings)).total == 0


async def test_a_touched_file_is_requested_again_and_found_unchanged(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    path = str(project_dir / "src" / "app.py")
    (project_dir / "src" / "app.py").write_text("def main():\n    return 1\n")
    await _request(store, project_id, [(path, "read")])
    await drain_requests(store.db, settings)
    await store.sync_vectors()

    await _request(store, project_id, [(path, "edit")])
    assert (await _requests(store))[path] == ("edit", "pending", None, 1)
    report = await drain_requests(store.db, settings)
    assert (report.unchanged, report.total) == (1, 1)
    assert (await _requests(store))[path] == ("edit", "unchanged", None, 2)
    assert await store.db.scalar("SELECT count(*) FROM vector_outbox") == 0


async def test_drain_respects_its_limit_oldest_first(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    for name in ("first", "second", "third"):
        (project_dir / f"{name}.py").write_text(f"{name} = 1\n")
        await _request(store, project_id, [(str(project_dir / f"{name}.py"), "read")])
    report = await drain_requests(store.db, settings, limit=2)
    assert report.indexed == 2
    statuses = {Path(p).stem: status for p, (_, status, _, _) in (await _requests(store)).items()}
    assert statuses == {"first": "indexed", "second": "indexed", "third": "pending"}


@pytest.mark.process
async def test_gitignored_files_are_skipped_in_a_drain(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(project_dir)], check=True)
    (project_dir / ".gitignore").write_text("dist/\n")
    (project_dir / "dist").mkdir()
    (project_dir / "dist" / "bundle.js").write_text("bundle()\n")
    (project_dir / "src" / "app.ts").write_text("export const app = 1;\n")
    await _request(
        store,
        project_id,
        [(str(project_dir / "dist" / "bundle.js"), "glob"), (str(project_dir / "src" / "app.ts"), "glob")],
    )
    report = await drain_requests(store.db, settings)
    assert (report.indexed, report.by_reason) == (1, {"ignored": 1})


async def test_a_request_for_a_project_whose_directory_is_gone_is_skipped(
    store: Store, settings: Settings, project_id: int, project_dir: Path
) -> None:
    await _request(store, project_id, [(str(project_dir / "src" / "app.py"), "read")])
    project_dir.rename(project_dir.with_name("moved"))
    report = await drain_requests(store.db, settings)
    assert (report.skipped, report.by_reason) == (1, {"missing": 1})


async def test_from_transcript_to_searchable_chunks(
    store: Store, settings: Settings, project_id: int, project_dir: Path, tmp_path: Path
) -> None:
    """The path capture takes: tool events -> touches -> requests -> drain -> FTS and vectors."""
    (project_dir / "src" / "LoginButton.tsx").write_text("export const LoginButton = () => <button/>;\n")
    (project_dir / "src" / "api.ts").write_text("export function createUser() {}\n")
    (project_dir / ".env").write_text("SECRET=1\n")
    t = Transcript(project_dir)
    t.user("where is the login button?")
    t.tool("Grep", {"pattern": "Login"}, "Found 1 file\nsrc/LoginButton.tsx")
    t.tool("Read", {"file_path": str(project_dir / "src" / "api.ts")}, "1→export function createUser() {}")
    t.tool("Read", {"file_path": ".env"}, "SECRET=1")
    events = list(tool_events(read_from(t.write(tmp_path / "t.jsonl")).entries))
    touches = touched_files(events, per_result=settings.files_per_result)
    await _request(store, project_id, [(touch.path, touch.reason) for touch in touches])

    report = await drain_requests(store.db, settings)
    assert (report.indexed, report.by_reason) == (2, {"secret": 1})
    found = await store.db.fetchall(
        """
        SELECT d.rel_path FROM file_chunks_fts AS f
        JOIN file_chunks AS c ON c.id = f.rowid JOIN file_documents AS d ON d.id = c.document_id
        WHERE file_chunks_fts MATCH 'LoginButton'
        """
    )
    assert [row["rel_path"] for row in found] == ["src/LoginButton.tsx"]
    await store.sync_vectors()
    assert store.vectors.count("chunks") == 2
    hits = store.vectors.query("chunks", "user creation endpoint", n=1, metadata=True)
    assert hits[0].metadata["rel_path"] == "src/api.ts"


async def test_a_path_holding_a_secret_is_stored_redacted_and_skipped_unread(
    store: Store, project_id: int, project_dir: Path, settings: Settings
) -> None:
    """Issue 30: a path such as `feat/ghp_…/notes.md` was stored raw in `file_requests.path`."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    secret_dir = project_dir / token
    secret_dir.mkdir()
    (secret_dir / "notes.md").write_text("nothing to see\n")
    plain = str(project_dir / "a.py")
    assert await _request(store, project_id, [(str(secret_dir / "notes.md"), "read"), (plain, "read")]) == 2
    stored = await _requests(store)
    assert not any(token in path for path in stored)
    [(redacted, state)] = [(p, s) for p, s in stored.items() if p != plain]
    assert "[REDACTED:github_token]" in redacted and state == ("read", "skipped", "secret", 0)
    report = await drain_requests(store.db, settings)
    assert report.total == 1, "only the plain path is read"
    assert (await _requests(store))[redacted] == state, "never read: nothing of it is indexed"
