"""`cairn learn stats|associations|forget`, `cairn files` and the new `cairn stats` lines, end to end.

The store is filled with plain SQL, as the feedback loop and the file indexer would leave it, so these
tests check the faces (ops, JSON, tables, errors, the daemon's socket) without depending on how the
loop or the indexer get there. Each command runs as a real `python -m cairn` process on a real store.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from cairn.config import Settings
from cairn.store.store import Store
from tests.daemon.helpers import Daemons, query
from tests.helpers.cli import cairn, cairn_json

SHOP = "/srv/shop"
BILLING = "/srv/billing"
LOGIN = f"{SHOP}/src/components/LoginButton.tsx"

# What `learner_stats` must count from `fill`: six searches, of which two resolved, one timed out (with
# an error), one dismissed (strong), one active and one pending; one failed file request; three
# associations, two learned (one learned twice, used three times) and one from the indexing agent.
EXPECTED_FIGURES = {
    "searches_seen": 6,
    "sessions_started": 4,
    "sessions_resolved": 2,
    "sessions_timed_out": 1,
    "active_sessions": 2,
    "files_learned": 2,
    "associations_created": 2,
    "associations_from_agent": 1,
    "association_repeats": 1,
    "association_hits": 3,
    "errors": 2,
}


async def _id(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    async with conn.execute(sql + " RETURNING id", params) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def fill(store: Store) -> dict[str, int]:
    """Projects, indexed files, file requests, learning sessions and associations; ids by name."""
    ids: dict[str, int] = {}
    async with store.db.write() as conn:
        shop = await _id(conn, "INSERT INTO projects (path, name) VALUES (?, 'shop')", (SHOP,))
        billing = await _id(conn, "INSERT INTO projects (path, name) VALUES (?, 'billing')", (BILLING,))
        await conn.execute("INSERT INTO sessions (id, project_id, cwd) VALUES ('s-shop', ?, ?)", (shop, SHOP))
        ids["login_doc"] = await _id(
            conn,
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size, line_count, keywords, "
            "indexed_at) VALUES (?, 'src/components/LoginButton.tsx', 'h1', 900, 40, ?, "
            "'2025-09-03T10:00:00.000Z')",
            (shop, json.dumps(["LoginButton", "onLogin", "sign in"])),
        )
        ids["users_doc"] = await _id(
            conn,
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size, line_count, keywords, "
            "indexed_at) VALUES (?, 'app/users.py', 'h2', 300, 12, ?, '2025-09-02T10:00:00.000Z')",
            (billing, json.dumps(["create_user"])),
        )
        chunks = [
            (ids["login_doc"], 0, 1, 25, "export function LoginButton() {", 120),
            (ids["login_doc"], 1, 22, 40, "  return <button onClick={onLogin}>Sign in</button>", 80),
            (ids["users_doc"], 0, 1, 12, "def create_user(name): ...", 40),
        ]
        await conn.executemany(
            "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content, tokens) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            chunks,
        )
        requests = [
            (shop, LOGIN, "read", "indexed", None, 1, "2025-09-03T10:00:00.000Z"),
            (shop, f"{SHOP}/.env", "read", "skipped", "secret", 1, "2025-09-03T10:01:00.000Z"),
            (shop, f"{SHOP}/dist/bundle.js", "grep", "skipped", "ignored", 1, "2025-09-03T10:02:00.000Z"),
            (shop, f"{SHOP}/src/new.ts", "edit", "pending", None, 0, None),
            (billing, f"{BILLING}/app/users.py", "learned", "indexed", None, 1, "2025-09-02T10:00:00.000Z"),
            (billing, f"{BILLING}/data.db", "read", "failed", "OSError: [Errno 5] I/O error", 3, None),
        ]
        await conn.executemany(
            "INSERT INTO file_requests (project_id, path, reason, status, outcome, attempts, done_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            requests,
        )
        sessions = [
            ("t1", "login button component", 0.31, "resolved", None),
            ("t2", "user creation", 0.2, "resolved", None),
            ("t3", "payment retries", 0.0, "timed_out", "search result missing"),
            ("t4", "orders schema", 0.9, "dismissed", None),
            ("t5", "cart totals", 0.4, "active", None),
            ("t6", "checkout flow", None, "pending", None),
        ]
        await conn.executemany(
            "INSERT INTO learning_sessions (session_id, tool_use_id, project_id, tool_name, query, "
            "best_score, status, error, started_at) "
            "VALUES ('s-shop', ?, ?, 'mcp__cairn__search', ?, ?, ?, ?, '2025-09-03T10:00:00.000Z')",
            [(tool, shop, q, score, status, error) for tool, q, score, status, error in sessions],
        )
        associations = [
            ("login", "login button component", LOGIN, "src/components/LoginButton.tsx", shop, "learned",
             ["LoginButton"], 0.31, 2, 3, "2025-09-03T10:05:00.000Z"),
            ("users", "user creation", f"{BILLING}/app/users.py", "app/users.py", billing, "learned",
             [], 0.2, 1, 0, "2025-09-02T10:05:00.000Z"),
            ("auth", "auth flow", f"{SHOP}/src/auth.ts", "src/auth.ts", shop, "agent",
             [], None, 1, 0, "2025-09-01T10:05:00.000Z"),
        ]  # fmt: skip
        for name, q, path, rel, project, source, greps, score, times, hits, learned_at in associations:
            ids[name] = await _id(
                conn,
                "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source, "
                "grep_patterns, original_score, times_learned, hits, learned_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (q, q, path, rel, project, source, json.dumps(greps), score, times, hits, learned_at),
            )
    return ids


def fill_home(home: Path) -> dict[str, int]:
    async def run() -> dict[str, int]:
        async with await Store.open(Settings.load(home)) as store:
            return await fill(store)

    return asyncio.run(run())


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, int]]]:
    """A CAIRN_HOME filled once by `fill`, for the tests that only read it."""
    root = tmp_path_factory.mktemp("cli-learn")
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "cairn-home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        ids = fill_home(root / "cairn-home")
        yield root / "cairn-home", ids


WIDE = {"COLUMNS": "160"}  # table assertions look for whole values, which 80 columns may fold


def _error(*args: str) -> str:
    """The one error line a refused command prints; fails the test if it succeeds or crashes."""
    proc = cairn(*args, check=False, env=WIDE)
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.strip()


# learn stats


def test_learn_stats_json_is_the_learner_stats_of_the_store(filled: tuple[Path, dict[str, int]]) -> None:
    data = cairn_json("learn", "stats")
    assert {key: data[key] for key in EXPECTED_FIGURES} == EXPECTED_FIGURES
    assert data["enabled"] is True
    assert (data["threshold"], data["timeout_seconds"]) == (0.65, 60.0)
    assert sorted(data["recent_errors"]) == [
        f"{BILLING}/data.db: OSError: [Errno 5] I/O error",
        "search result missing",
    ]


def test_learn_stats_table_says_what_each_figure_means(filled: tuple[Path, dict[str, int]]) -> None:
    out = cairn("learn", "stats", env=WIDE).stdout
    assert "learning from searches: on" in out
    assert "under 0.65" in out and "within 60 s" in out
    for label in ("sessions started", "resolved", "timed out", "files learned", "associations learned"):
        assert label in out
    assert "Weak searches followed by reads" in out, "each figure comes with its meaning"


def test_learning_switched_off_still_reports_what_was_learned(filled: tuple[Path, dict[str, int]]) -> None:
    off = {"CAIRN_LEARN_FROM_SEARCH": "false"}
    data = cairn_json("learn", "stats", env=off)
    assert data["enabled"] is False
    assert data["associations_created"] == 2 and data["sessions_resolved"] == 2
    assert "learning from searches: off" in cairn("learn", "stats", env=off).stdout


# learn associations


def test_associations_json_lists_newest_first_with_counters(filled: tuple[Path, dict[str, int]]) -> None:
    _, ids = filled
    rows = cairn_json("learn", "associations")
    assert [row["id"] for row in rows] == [ids["login"], ids["users"], ids["auth"]]
    login = rows[0]
    assert login["query"] == "login button component"
    assert (login["file_path"], login["rel_path"]) == (LOGIN, "src/components/LoginButton.tsx")
    assert (login["project"], login["project_path"], login["source"]) == ("shop", SHOP, "learned")
    assert (login["times_learned"], login["hits"], login["original_score"]) == (2, 3, 0.31)
    assert login["grep_patterns"] == ["LoginButton"]
    assert {"learned_at", "last_used_at", "created_at", "reason"} <= set(login)


def test_associations_filters(filled: tuple[Path, dict[str, int]]) -> None:
    _, ids = filled
    assert [r["id"] for r in cairn_json("learn", "associations", "--source", "agent")] == [ids["auth"]]
    assert [r["id"] for r in cairn_json("learn", "associations", "--project", "billing")] == [ids["users"]]
    by_path = cairn_json("learn", "associations", "--project", SHOP, "--source", "learned")
    assert [r["id"] for r in by_path] == [ids["login"]]
    assert len(cairn_json("learn", "associations", "--limit", "1")) == 1


def test_associations_table(filled: tuple[Path, dict[str, int]]) -> None:
    out = cairn("learn", "associations", env=WIDE).stdout
    assert "associations (3)" in out
    assert "login button component" in out and "LoginButton.tsx" in out
    assert "2x, 3 hits" in out and "0.31" in out and "agent" in out and "shop" in out


def test_bad_filters_are_one_line_errors(filled: tuple[Path, dict[str, int]]) -> None:
    message = _error("learn", "associations", "--project", "nowhere")
    assert message.startswith("error:") and "no project 'nowhere' is stored" in message
    assert "\n" not in message
    assert "nowhere" in _error("files", "--project", "nowhere")
    assert "learned" in _error("learn", "associations", "--source", "robot")
    assert "pending" in _error("files", "--status", "lost")


# files


def test_files_json_shows_documents_and_requests(filled: tuple[Path, dict[str, int]]) -> None:
    _, ids = filled
    data = cairn_json("files")
    assert (data["documents_total"], data["chunks_total"]) == (2, 3)
    assert data["requests_by_status"] == {"failed": 1, "indexed": 2, "pending": 1, "skipped": 2}
    assert data["skipped_by_reason"] == {"ignored": 1, "secret": 1}
    login, users = data["documents"]
    assert login["id"] == ids["login_doc"] and users["id"] == ids["users_doc"]
    assert (login["rel_path"], login["path"], login["project"]) == (
        "src/components/LoginButton.tsx",
        LOGIN,
        "shop",
    )
    assert (login["chunks"], login["tokens"], login["line_count"]) == (2, 200, 40)
    assert login["keywords"] == ["LoginButton", "onLogin", "sign in"]
    assert len(data["requests"]) == 6


def test_files_filters(filled: tuple[Path, dict[str, int]]) -> None:
    skipped = cairn_json("files", "--status", "skipped")
    assert {(r["path"], r["outcome"]) for r in skipped["requests"]} == {
        (f"{SHOP}/.env", "secret"),
        (f"{SHOP}/dist/bundle.js", "ignored"),
    }
    billing = cairn_json("files", "--project", "billing")
    assert billing["documents_total"] == 1 and billing["chunks_total"] == 1
    assert billing["requests_by_status"] == {"failed": 1, "indexed": 1}
    assert [d["rel_path"] for d in billing["documents"]] == ["app/users.py"]
    assert len(cairn_json("files", "--limit", "1")["documents"]) == 1


def test_files_table(filled: tuple[Path, dict[str, int]]) -> None:
    out = cairn("files", env=WIDE).stdout
    assert "2 files indexed, 3 chunks" in out
    assert "skipped, by reason: ignored 1, secret 1" in out
    assert "LoginButton.tsx" in out and "onLogin" in out
    failed = cairn("files", "--status", "failed", env=WIDE).stdout
    assert "data.db" in failed and "I/O error" in failed and "LoginButton" not in failed


# stats


def test_stats_count_the_file_index_and_the_loop(filled: tuple[Path, dict[str, int]]) -> None:
    data = cairn_json("stats")
    assert (data["file_documents"], data["file_chunks"], data["search_associations"]) == (2, 3, 3)
    assert data["file_requests_by_status"] == {"failed": 1, "indexed": 2, "pending": 1, "skipped": 2}
    assert data["learning_sessions_by_status"] == {
        "active": 1,
        "dismissed": 1,
        "pending": 1,
        "resolved": 2,
        "timed_out": 1,
    }
    assert data["messages"] == 0 and "recall_injections" in data, "the older keys stay"
    out = cairn("stats", env=WIDE).stdout
    assert "2 files, 3 chunks" in out
    assert "4 weak searches: 2 resolved, 1 timed out; 3 associations" in out


def test_an_empty_store_says_how_things_get_there(cairn_home: Path) -> None:
    assert "No associations yet" in cairn("learn", "associations").stdout
    assert "Nothing in the file index yet" in cairn("files").stdout
    assert cairn_json("learn", "associations") == []
    stats = cairn_json("learn", "stats")
    assert {key: stats[key] for key in EXPECTED_FIGURES} == dict.fromkeys(EXPECTED_FIGURES, 0)


# forget


def _outbox(home: Path, item: int) -> list[tuple[object, ...]]:
    return query(home, "SELECT op FROM vector_outbox WHERE kind = 'associations' AND item_id = ?", (item,))


def test_forget_deletes_and_queues_the_vector_deletion(cairn_home: Path) -> None:
    ids = fill_home(cairn_home)
    out = cairn("learn", "forget", str(ids["login"])).stdout
    assert f"forgot 1 association: {ids['login']}" in out
    assert [r["id"] for r in cairn_json("learn", "associations")] == [ids["users"], ids["auth"]]
    assert _outbox(cairn_home, ids["login"]) == [("delete",)]
    assert cairn_json("learn", "stats")["associations_created"] == 1

    proc = cairn("learn", "forget", str(ids["users"]), "999", "--json", check=False)
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {"deleted": [ids["users"]], "missing": [999]}
    assert "no association 999" in proc.stderr and "Traceback" not in proc.stderr
    assert [r["id"] for r in cairn_json("learn", "associations")] == [ids["auth"]]
    assert cairn("learn", "forget", "0", check=False).returncode == 2, "ids start at 1"


# through the daemon


@pytest.mark.process
def test_the_commands_answer_the_same_through_the_daemon(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    monkeypatch.setenv("CAIRN_IDLE_EXIT_SECONDS", "60")
    ids = fill_home(cairn_home)
    commands = [
        ("learn", "stats"),
        ("learn", "associations"),
        ("learn", "associations", "--project", "shop"),
        ("files",),
        ("files", "--status", "skipped"),
    ]
    direct = [cairn_json(*args) for args in commands]
    refusal = _error("learn", "associations", "--project", "nowhere")
    daemons = Daemons(cairn_home)
    try:
        daemons.start()
        # The daemon holds the store lock: these can only be answered over its socket.
        assert [cairn_json(*args) for args in commands] == direct
        assert _error("learn", "associations", "--project", "nowhere") == refusal
        assert "forgot 1 association" in cairn("learn", "forget", str(ids["auth"])).stdout
        assert query(cairn_home, "SELECT count(*) FROM search_associations WHERE id = ?", (ids["auth"],)) == [
            (0,)
        ]
        assert "no association 12345" in _error("learn", "forget", "12345")
        daemons.stop()
    finally:
        daemons.cleanup()
    assert [r["id"] for r in cairn_json("learn", "associations")] == [ids["login"], ids["users"]]
