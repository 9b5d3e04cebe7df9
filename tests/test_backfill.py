"""`cairn backfill` end to end: real processes on a fake ~/.claude/projects, real SQLite and Chroma."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from cairn.backfill import Session, discover_sessions, parse_since, select_sessions
from cairn.cli.progress import short_session
from cairn.pricing import PRICES, Price, cost, price_for
from cairn.store.identity import claude_dir_name
from tests.helpers.backfill import DEMO_PROJECT, rows
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.helpers.repos import make_worktrees

VIEWER = sorted((REAL_TRANSCRIPTS / "claude-code-viewer").glob("*.jsonl"))
MAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
SIDECHAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_agent_sidechain.jsonl"
MAIN_SESSION = "c45af7b1-cb7c-4e51-93db-8cbb250a877a"


def lay_out(projects: Path, project: str = DEMO_PROJECT) -> Path:
    """Claude Code's layout: `<project>/<session>.jsonl`, subagents under `<session>/subagents/`."""
    root = projects / project
    (root / MAIN_SESSION / "subagents").mkdir(parents=True)
    for path in VIEWER:
        shutil.copy(path, root / path.name)
    shutil.copy(MAIN, root / f"{MAIN_SESSION}.jsonl")
    shutil.copy(SIDECHAIN, root / MAIN_SESSION / "subagents" / "agent-af1ff21.jsonl")
    return root


def first_timestamp(path: Path) -> str:
    """The first top-level timestamp of a transcript, read with plain json (independently of cairn)."""
    for raw in path.read_text().splitlines():
        value = json.loads(raw)
        if isinstance(value.get("timestamp"), str):
            return value["timestamp"]
    raise AssertionError(f"no timestamp in {path}")


def idea_keys(home: Path, projects: Path) -> list[tuple[object, ...]]:
    """Every idea as (file relative to the projects dir, line, intent, content), sorted, repeats kept."""
    found = rows(
        home,
        "SELECT f.path, i.source_line, i.intent, i.content FROM ideas i "
        "JOIN transcript_files f ON f.id = i.source_file_id",
    )
    return sorted((str(Path(str(p)).relative_to(projects.resolve())), *rest) for p, *rest in found)


@pytest.mark.slow
def test_dry_run_spends_nothing_then_backfill_indexes_oldest_first_once(cairn_home: Path) -> None:
    projects = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    root = lay_out(projects)
    expected = sorted(
        [p.stem for p in VIEWER] + [MAIN_SESSION],
        key=lambda s: first_timestamp(root / f"{s}.jsonl"),
    )

    dry = cairn_json("backfill", "--dry-run", "--model", "anthropic:claude-haiku-4-5")
    assert rows(cairn_home, "SELECT count(*) FROM index_runs") == [(0,)]
    assert rows(cairn_home, "SELECT count(*) FROM ideas") == [(0,)]
    assert [s["session"] for s in dry["sessions"]] == expected
    for session in dry["sessions"]:
        assert session["messages"] > 0 and session["input_tokens"] > session["message_tokens"] > 0
        assert session["model_cost_usd"] > 0 and session["cost_usd"]["offline"] == 0
    subagent = next(s for s in dry["sessions"] if s["session"] == MAIN_SESSION)
    assert len(subagent["files"]) == 2, "the subagent transcript belongs to its parent session"
    total = dry["total"]
    assert total["model_cost_usd"] == pytest.approx(
        cost("claude-haiku-4-5", total["input_tokens"], total["output_tokens"]), abs=1e-4
    )
    offline = cairn_json("backfill", "--dry-run", "--model", "offline")
    assert offline["total"]["model_cost_usd"] == 0 and offline["total"]["batches"] == total["batches"]

    done = cairn_json("backfill", "--model", "offline")
    assert done["sessions_total"] == done["sessions_done"] == 4 and not done["interrupted"]
    assert [s["session"] for s in done["sessions"]] == expected
    assert done["runs_failed"] == 0 and done["runs_ok"] == done["batches"] == total["batches"]
    assert sum(s["messages"] for s in done["sessions"]) == total["messages"]
    assert sum(done["applied"]["ideas_by_intent"].values()) > 0
    assert rows(cairn_home, "SELECT count(*), min(mode), max(mode) FROM index_runs") == [
        (done["batches"], "backfill", "backfill")
    ]
    # Ideas were created session after session, in the order the sessions happened.
    first_idea = dict(
        rows(
            cairn_home,
            "SELECT f.session_id, min(i.id) FROM ideas i JOIN transcript_files f ON f.id = i.source_file_id "
            "GROUP BY f.session_id",
        )
    )
    assert sorted(first_idea, key=lambda s: first_idea[s]) == [s for s in expected if s in first_idea]
    assert rows(
        cairn_home,
        "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
        "WHERE m.end_line > f.indexed_line",
    ) == [(0,)]
    ideas_before = idea_keys(cairn_home, projects)

    # Not a terminal: one plain line per session on stderr, no escape codes; nothing is indexed twice.
    again = cairn("backfill", "--model", "offline")
    assert "\x1b[" not in again.stdout + again.stderr
    lines = [line for line in again.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[1] for line in lines] == [f"{short_session(s)}:" for s in expected]
    assert all(": 0 messages, 0 ideas, at " in line for line in lines)
    assert idea_keys(cairn_home, projects) == ideas_before
    assert rows(cairn_home, "SELECT count(*) FROM index_runs") == [(done["batches"],)]


def test_since_and_project_filter(cairn_home: Path) -> None:
    projects = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    lay_out(projects)
    other = projects / "-srv-other-app"
    other.mkdir()
    shutil.copy(VIEWER[0], other / "0b7c5e2a-3d41-4c8e-9f6a-cafe00000002.jsonl")
    found = discover_sessions([projects])

    def sessions(since: str | None = None, project: str | None = None) -> list[str]:
        chosen = select_sessions(found, since=parse_since(since) if since else None, project=project)
        return [s.session_id for s in chosen]

    assert len(sessions()) == 5
    assert sessions(project="other-app") == ["0b7c5e2a-3d41-4c8e-9f6a-cafe00000002"]
    assert sessions(project="/srv/other") == ["0b7c5e2a-3d41-4c8e-9f6a-cafe00000002"]
    assert len(sessions(project="/home/dev/demo")) == 4
    # The fasthooks session's cwd is /workspace: found by its cwd, not only its directory name.
    assert sessions(project="/workspace") == [MAIN_SESSION]
    # Sessions are filtered by their last message's time, which the copies keep (not the file mtime).
    assert sessions(since="2026-01-01") == [MAIN_SESSION]
    assert sessions(since="2030-01-01") == []

    # The same through the command line, with PATHS narrowing the roots.
    chosen = cairn_json("backfill", "--dry-run", "--project", "demo", "--since", "2026-01-01")
    assert [s["session"] for s in chosen["sessions"]] == [MAIN_SESSION]
    assert rows(cairn_home, "SELECT count(*) FROM index_runs") == [(0,)]
    by_path = cairn_json("backfill", "--dry-run", str(other))
    assert [s["session"] for s in by_path["sessions"]] == ["0b7c5e2a-3d41-4c8e-9f6a-cafe00000002"]

    bad = cairn("backfill", "--since", "last tuesday", check=False)
    assert bad.returncode == 2 and "not a date" in bad.stderr and "Traceback" not in bad.stderr


def test_prices_and_dates() -> None:
    assert price_for("anthropic:claude-haiku-4-5-20251001") == PRICES["claude-haiku-4-5"]
    assert price_for("anthropic:claude-opus-4-1-20250805") == PRICES["claude-opus-4-1"]
    assert price_for("offline") == Price(0.0, 0.0)
    assert price_for("ollama:llama3") is None and cost("ollama:llama3", 10, 10) is None
    assert cost("claude-sonnet-4-5", 1_000_000, 100_000) == pytest.approx(3.0 + 1.5)
    assert parse_since("2025-09-01") == datetime(2025, 9, 1).astimezone()  # local midnight
    with pytest.raises(ValueError, match="not a date"):
        parse_since("last tuesday")


# Enough single-batch sessions that a backfill is still running when its first batch lands.
COPIES = 8


def many_sessions(projects: Path) -> None:
    root = projects / DEMO_PROJECT
    root.mkdir(parents=True)
    for i in range(COPIES):
        for j, path in enumerate((VIEWER[0], VIEWER[1])):
            shutil.copy(path, root / f"{i:04d}{j:04d}-3d41-4c8e-9f6a-cafe00000000.jsonl")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[object, ...]]:
    """The ideas of an uninterrupted backfill of `many_sessions`, keyed independently of the home."""
    base = tmp_path_factory.mktemp("reference")
    many_sessions(base / "projects")
    env = {"CAIRN_HOME": str(base / "home"), "CAIRN_CLAUDE_PROJECTS_DIR": str(base / "projects")}
    report = cairn_json("backfill", "--model", "offline", env=env)
    assert report["sessions_done"] == 2 * COPIES and report["runs_failed"] == 0
    keys = idea_keys(base / "home", base / "projects")
    assert keys and len(keys) == len(set(keys))
    return keys


@pytest.mark.process
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_interrupted_backfill_resumes_without_duplicates(
    cairn_home: Path, reference: list[tuple[object, ...]], signum: signal.Signals
) -> None:
    projects = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    many_sessions(projects)
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cairn", "backfill", "--model", "offline", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    # Generous: capture and embedding come first, and take minutes on a loaded 2-core machine.
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if rows(cairn_home, "SELECT count(*) FROM index_runs")[0][0] > 0:
                break
        except sqlite3.OperationalError:
            pass  # the store is not created yet
        time.sleep(0.01)
    assert proc.poll() is None, "the backfill finished before it could be interrupted"
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=300)
    applied = rows(cairn_home, "SELECT count(*) FROM index_runs WHERE outcome = 'ok'")[0][0]
    assert 0 < applied < 2 * COPIES
    if signum == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr and "cairn backfill` again" in stderr
        report = json.loads(stdout)
        assert report["interrupted"] and report["sessions_done"] < report["sessions_total"]
        # Stopped after the batch in flight: every run it started was applied and reported.
        assert report["runs_ok"] == report["batches"] == applied
    else:
        assert proc.returncode == -signal.SIGKILL

    resumed = cairn_json("backfill", "--model", "offline")
    assert resumed["runs_failed"] == 0 and not resumed["interrupted"]
    assert resumed["sessions_done"] == 2 * COPIES
    assert resumed["batches"] == 2 * COPIES - applied
    assert idea_keys(cairn_home, projects) == reference


def test_without_history_the_demo_session_is_backfilled(cairn_home: Path) -> None:
    """A new user's first `scripts/start` has no ~/.claude/projects yet: cairn shows itself on its demo."""
    data = cairn_json("backfill")
    assert data["sessions_total"] == 1 and data["sessions_done"] == 1
    assert data["runs_ok"] == 1 and sum(data["applied"]["ideas_by_intent"].values()) > 0
    assert cairn_json("backfill")["batches"] == 0
    # An explicit filter that matches nothing is not silently replaced by the demo.
    assert cairn_json("backfill", "--project", "no-such-project")["sessions_total"] == 0


def test_project_filter_takes_a_directory_inside_the_repository(tmp_path: Path) -> None:
    """From a subdirectory of one worktree, `backfill --project .` picks the sessions of every worktree
    of that repository, and no other project's."""
    trees = make_worktrees(tmp_path / "repos")
    other = tmp_path / "elsewhere"
    other.mkdir()
    found = [
        Session(key=f"/p/{n}", session_id=n, project=claude_dir_name(str(cwd)), files=[], cwd=str(cwd))
        for n, cwd in (("a", trees.a), ("b", trees.b / "src"), ("main", trees.main), ("other", other))
    ]

    chosen = select_sessions(found, project=str(trees.a / "src"))

    assert [s.session_id for s in chosen] == ["a", "b", "main"]
    assert [s.session_id for s in select_sessions(found, project=str(other))] == ["other"]
