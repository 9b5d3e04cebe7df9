"""The feedback loop through the real capture path: real SQLite, real project files, built transcripts."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn import derive
from cairn.config import Settings
from cairn.learning import loop
from cairn.learning.loop import learn
from cairn.learning.stats import learner_stats
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from cairn.transcripts import read_from
from cairn.transcripts.tool_events import tool_events
from tests.helpers.builders import Transcript
from tests.learning.loop_helpers import (
    LOGIN_BUTTON,
    PROJECT_FILES,
    USERS_ROUTES,
    associations,
    capture,
    login_button_scenario,
    make_project,
    rows,
    sessions,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "acme-web")


def transcript_path(tmp_path: Path, name: str | None = None) -> Path:
    return tmp_path / "claude" / "-acme-web" / f"{name or uuid.uuid4()}.jsonl"


async def test_the_login_button_scenario_learns_one_association(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    path = login_button_scenario(project).write(transcript_path(tmp_path))

    report = await capture(store, path, settings)

    assert report.messages_added > 0  # capture itself is untouched
    assert await sessions(store.db) == [
        (
            "login button component",
            "resolved",
            0.42,
            json.dumps([str(project / LOGIN_BUTTON)]),
            json.dumps(["login.*button"]),
            None,
        )
    ]
    assert await associations(store.db) == [
        ("login button component", LOGIN_BUTTON, "learned", 1, json.dumps(["login.*button"]), 0.42)
    ]
    [(file_path, project_path)] = await rows(
        store.db,
        "SELECT a.file_path, p.path FROM search_associations AS a JOIN projects AS p ON p.id = a.project_id",
    )
    assert (file_path, project_path) == (str(project / LOGIN_BUTTON), str(project))
    requested = await rows(store.db, "SELECT path, status FROM file_requests WHERE path = ?", (file_path,))
    assert requested == [(file_path, "indexed")]  # queued for the file index, which capture then drained
    learned_at = await store.db.scalar("SELECT learned_at FROM search_associations")
    assert str(learned_at).startswith("2025-09-03T10:00:")  # transcript time, not the time of capture

    stats = await learner_stats(store.db, settings)
    assert (stats.searches_seen, stats.sessions_started, stats.sessions_resolved) == (1, 1, 1)
    assert (stats.sessions_timed_out, stats.active_sessions, stats.errors) == (0, 0, 0)
    assert (stats.files_learned, stats.associations_created, stats.association_repeats) == (1, 1, 0)


async def test_the_user_creation_scenario_through_search_content(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = Transcript(project).user("where's the user creation endpoint?")
    t.search("user creation endpoint", [0.38, 0.21], tool="mcp__cairn__search_content")
    t.tool("Grep", {"pattern": "createUser|user.*create", "type": "ts"}, USERS_ROUTES)
    t.tool("Read", {"file_path": USERS_ROUTES}, PROJECT_FILES[USERS_ROUTES])  # relative to the cwd
    t.user("add validation to it")

    await capture(store, t.write(transcript_path(tmp_path)), settings)

    assert await associations(store.db) == [
        ("user creation endpoint", USERS_ROUTES, "learned", 1, json.dumps(["createUser|user.*create"]), 0.38)
    ]


async def test_a_strong_search_writes_a_dismissed_session_and_nothing_else(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = Transcript(project).user("find the login button")
    t.search("login button", [0.89])
    t.tool("Read", {"file_path": str(project / LOGIN_BUTTON)}, "...")
    t.user("thanks")

    await capture(store, t.write(transcript_path(tmp_path)), settings)

    assert [row[:3] for row in await sessions(store.db)] == [("login button", "dismissed", 0.89)]
    assert await associations(store.db) == []
    stats = await learner_stats(store.db, settings)
    assert (stats.searches_seen, stats.sessions_started) == (1, 0)


async def test_reads_outside_the_project_or_of_missing_files_learn_nothing(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "elsewhere" / "notes.md"
    secret.parent.mkdir()
    secret.write_text("not the project's\n")
    (project / "src" / "linked.md").symlink_to(secret)
    t = Transcript(project).user("where is the login button?")
    t.search("login button", [0.2])
    t.tool("Read", {"file_path": str(project / "src" / "linked.md")}, "...")  # symlink out of the project
    t.tool("Read", {"file_path": str(project / ".." / "elsewhere" / "notes.md")}, "...")  # `..` out of it
    t.tool("Read", {"file_path": str(project / "src" / "Deleted.tsx")}, "...")  # gone by now
    t.tool("Read", {"file_path": str(project)}, "EISDIR")  # the project itself
    t.user("ok")

    await capture(store, t.write(transcript_path(tmp_path)), settings)

    [session] = await sessions(store.db)
    assert session[1] == "resolved" and len(json.loads(session[3])) == 4
    assert await associations(store.db) == []
    # The file index saw the same reads and refused each one; nothing was requested for learning.
    assert await rows(store.db, "SELECT count(*) FROM file_requests WHERE reason = 'learned'") == [(0,)]
    refused = await rows(store.db, "SELECT status, outcome FROM file_requests ORDER BY outcome")
    assert refused and all(status == "skipped" for status, _ in refused), refused
    assert await rows(store.db, "SELECT count(*) FROM file_documents") == [(0,)]


async def test_the_window_expiring_times_the_session_out(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = Transcript(project).user("find the login button component")
    t.search("login button component", [0.42])
    t.wait(90)
    t.tool("Read", {"file_path": str(project / LOGIN_BUTTON)}, "...")
    t.user("ok")

    await capture(store, t.write(transcript_path(tmp_path)), settings)

    [session] = await sessions(store.db)
    assert session[:4] == ("login button component", "timed_out", 0.42, "[]")
    assert await associations(store.db) == []
    assert (await learner_stats(store.db, settings)).sessions_timed_out == 1


async def test_a_repeated_query_merges_into_one_association_and_is_counted(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    first = login_button_scenario(project)
    await capture(store, first.write(transcript_path(tmp_path)), settings)
    t = Transcript(project).user("the login button again?")
    t.wait(86_400)
    t.search("Login  Button   component", [0.35])
    t.tool("Glob", {"pattern": "**/Login*.tsx"}, LOGIN_BUTTON)
    t.tool("Read", {"file_path": str(project / LOGIN_BUTTON)}, "...")
    t.user("ok")

    await capture(store, t.write(transcript_path(tmp_path)), settings)

    patterns = json.dumps(["login.*button", "**/Login*.tsx"])  # united; the weakest score kept
    assert await associations(store.db) == [
        ("login button component", LOGIN_BUTTON, "learned", 2, patterns, 0.35)
    ]
    assert str(await store.db.scalar("SELECT learned_at FROM search_associations")).startswith("2025-09-04")
    stats = await learner_stats(store.db, settings)
    assert (stats.sessions_resolved, stats.associations_created, stats.association_repeats) == (2, 1, 1)


async def test_a_session_split_across_incremental_reads_resumes_from_the_store(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = login_button_scenario(project)
    path = transcript_path(tmp_path)
    path.parent.mkdir(parents=True)
    # prompt + search call | its result | grep call + result + read call | read result + text | prompt
    steps = [(2, "pending"), (1, "active"), (3, "active"), (2, "active"), (1, "resolved")]
    for lines, status in steps:
        t.append(path, lines)
        await capture(store, path, settings)
        assert [row[1] for row in await sessions(store.db)] == [status]

    assert await associations(store.db) == [
        ("login button component", LOGIN_BUTTON, "learned", 1, json.dumps(["login.*button"]), 0.42)
    ]


async def test_replaying_the_same_transcript_creates_no_second_association(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    path = login_button_scenario(project, session_id=str(uuid.uuid4())).write(transcript_path(tmp_path))
    await capture(store, path, settings)
    before = (await sessions(store.db), await associations(store.db))

    # Rewritten in place (a new inode: the reader starts the file over) ...
    replacement = path.with_suffix(".new")
    shutil.copyfile(path, replacement)
    os.replace(replacement, path)
    rewritten = await capture(store, path, settings)
    assert rewritten.restarted
    # ... and copied to another path.
    copy = transcript_path(tmp_path / "backup", path.stem)
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    await capture(store, copy, settings)

    assert (await sessions(store.db), await associations(store.db)) == before
    stats = await learner_stats(store.db, settings)
    assert (stats.searches_seen, stats.sessions_resolved, stats.association_repeats) == (1, 1, 0)


async def test_learning_switched_off_writes_nothing_but_messages_are_captured(
    cairn_home: Path, project: Path, tmp_path: Path
) -> None:
    settings = Settings.load(cairn_home, learn_from_search=False)
    path = login_button_scenario(project).write(transcript_path(tmp_path))
    async with await Store.open(settings) as store:
        report = await capture(store, path, settings)

        assert report.messages_added > 0
        assert await store.db.scalar("SELECT count(*) FROM messages") == report.messages_added
        assert await sessions(store.db) == []
        assert await associations(store.db) == []
        stats = await learner_stats(store.db, settings)
        assert stats.enabled is False and stats.searches_seen == 0


async def test_unreadable_results_are_stored_as_errors_and_queries_are_redacted(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5" * 4
    t = Transcript(project).user("login")
    t.tool("mcp__cairn__search", {"query": f"login button {key}"}, f"<html>proxy error {key}</html>")
    t.tool("Read", {"file_path": str(project / LOGIN_BUTTON)}, "...")
    t.user("ok")

    await capture(store, t.write(transcript_path(tmp_path)), settings)

    [(query, status, best, _reads, _greps, error)] = await sessions(store.db)
    assert (status, best) == ("resolved", 0.0)
    assert key not in query and key not in error and error.startswith("unreadable search result: not JSON")
    [association] = await associations(store.db)
    assert key not in association[0] and association[0].startswith("login button")
    stats = await learner_stats(store.db, settings)
    assert stats.errors == 1 and stats.recent_errors == [error]


async def test_a_failure_inside_the_loop_rolls_back_learning_only(
    store: Store, settings: Settings, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(loop, "record_association", broken)
    path = login_button_scenario(project).write(transcript_path(tmp_path))

    report = await capture(store, path, settings)

    assert report.messages_added > 0
    assert await sessions(store.db) == []  # rolled back to the savepoint, with nothing half-written
    assert await store.db.scalar("SELECT count(*) FROM messages") == report.messages_added
    assert report.derive_error == "learning: RuntimeError: disk on fire"


async def test_a_failure_queueing_touched_files_costs_neither_capture_nor_learning(
    store: Store, settings: Settings, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> list[object]:
        raise RuntimeError("unparseable tool result")

    monkeypatch.setattr(derive, "touched_files", broken)
    path = login_button_scenario(project).write(transcript_path(tmp_path))

    report = await capture(store, path, settings)

    assert (
        report.messages_added > 0
        and report.derive_error == "file requests: RuntimeError: unparseable tool result"
    )
    assert [row[:2] for row in await associations(store.db)] == [("login button component", LOGIN_BUTTON)]
    # Only the learned file was requested (and indexed); the failed part left nothing half-written.
    assert await rows(store.db, "SELECT reason, status FROM file_requests") == [("learned", "indexed")]


async def test_events_without_searches_cost_one_lookup(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = Transcript(project).user("run the tests")
    t.tool("Bash", {"command": "npm test"}, "ok")
    t.tool("Read", {"file_path": str(project / "README.md")}, "# Acme web")
    path = t.write(transcript_path(tmp_path))
    await capture(store, path, settings)
    events = list(tool_events(read_from(path).entries))
    file_id = int(await store.db.scalar("SELECT id FROM transcript_files"))
    statements: list[str] = []

    async with store.db.write() as conn:
        await conn.set_trace_callback(statements.append)
        failure = await learn(conn, file_id, events, settings)
        await conn.set_trace_callback(None)

    assert failure is None
    assert len(statements) == 1 and "learning_sessions" in statements[0]


async def test_learned_associations_are_embedded_by_the_outbox(
    settings: Settings, embedding_function: EmbeddingFunction[Documents], project: Path, tmp_path: Path
) -> None:
    path = login_button_scenario(project).write(transcript_path(tmp_path))
    async with await Store.open(settings, vectors=VectorIndex(settings, embedding_function)) as store:
        await capture(store, path, settings)
        association_id = await store.db.scalar("SELECT id FROM search_associations")

        await store.sync_vectors()

        assert store.vectors.get_ids("associations") == {str(association_id)}
        [hit] = store.vectors.query("associations", "login button", n=1, metadata=True)
        assert hit.id == str(association_id) and hit.metadata["rel_path"] == LOGIN_BUTTON
        assert hit.score > 0.8


async def test_a_resumed_session_carrying_the_search_over_learns_nothing_again(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    original = login_button_scenario(project)
    await capture(store, original.write(transcript_path(tmp_path)), settings)
    # Claude Code's resume writes the earlier lines again under the new session's id.
    resumed = json.loads(json.dumps(original.lines))
    for line in resumed:
        line["sessionId"] = "resumed-session"
    copy = transcript_path(tmp_path, "resumed-session")
    copy.write_text("".join(json.dumps(line) + "\n" for line in resumed), encoding="utf-8")
    await capture(store, copy, settings)

    stats = await learner_stats(store.db, settings)
    assert (stats.searches_seen, stats.sessions_resolved, stats.associations_created) == (1, 1, 1)
    assert stats.association_repeats == 0


async def test_a_path_the_file_system_refuses_to_look_at_costs_only_that_read(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = Transcript(project).user("where is the login button?")
    t.search("login button", [0.3])
    t.tool("Read", {"file_path": str(project / ("a" * 300))}, "File name too long", is_error=True)
    t.tool("Read", {"file_path": str(project / LOGIN_BUTTON)}, "export function LoginButton() {}")
    t.user("thanks")

    report = await capture(store, t.write(transcript_path(tmp_path)), settings)

    assert report.derive_error is None
    assert [row[:2] for row in await associations(store.db)] == [("login button", LOGIN_BUTTON)]


async def test_a_transcript_without_a_working_directory_has_no_project_files(
    store: Store, settings: Settings, project: Path, tmp_path: Path
) -> None:
    t = Transcript(project).user("where is the other session?")
    t.search("other session", [0.2])
    t.tool("Read", {"file_path": "other.jsonl"}, "...")  # relative, and no cwd to resolve it against
    t.user("thanks")
    for line in t.lines:
        del line["cwd"]  # the store files such a session under the transcripts' own folder
    path = t.write(transcript_path(tmp_path))
    (path.parent / "other.jsonl").write_text('{"note": "another session, not a project file"}\n')

    await capture(store, path, settings)

    assert await rows(store.db, "SELECT count(*) FROM file_requests") == [(0,)]
    assert await associations(store.db) == []


async def test_with_the_file_index_off_no_project_file_is_read(
    store: Store, cairn_home: Path, project: Path, tmp_path: Path
) -> None:
    settings = Settings.load(cairn_home, files_index=False)
    await capture(store, login_button_scenario(project).write(transcript_path(tmp_path)), settings)

    assert len(await associations(store.db)) == 1  # learning still learns the association
    assert await rows(store.db, "SELECT count(*) FROM file_documents") == [(0,)]
    assert await rows(store.db, "SELECT status FROM file_requests") == [("pending",)]  # waits for the index
