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

import pytest

from cairn.config import Settings
from cairn.store.store import Store
from tests.daemon.helpers import Daemons, query
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.learn import BILLING, EXPECTED_FIGURES, LOGIN, SHOP, fill


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
