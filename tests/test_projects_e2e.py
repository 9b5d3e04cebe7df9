"""Issue 17, part 1 end to end: a repository with two worktrees is one project for every face.

Real transcripts are laid out as Claude Code does (one directory per cwd, named by the cwd with `/`
and `.` replaced by `-`), their cwds moved into a real repository made with `git worktree add`: the
demo session ran in a subdirectory of worktree B, a real viewer session in worktree A. A real
fasthooks session stays where it ran (`/workspace`), a project of its own.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cairn.config import Settings
from cairn.recall.context import find_project, session_context
from cairn.store.identity import claude_dir_name
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.paths import REAL_TRANSCRIPTS, REPO_ROOT
from tests.helpers.repos import Worktrees, make_worktrees

pytestmark = pytest.mark.process

DEMO = REPO_ROOT / "cairn" / "demo" / "demo-session.jsonl"
DEMO_SESSION = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001"
VIEWER = REAL_TRANSCRIPTS / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
VIEWER_SESSION = VIEWER.stem
QUERY = "orders database postgres"
FASTHOOKS = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"


@dataclass(frozen=True)
class World:
    home: Path
    repo: Worktrees

    @property
    def subdir_a(self) -> Path:
        return self.repo.a / "src"


def lay_out(source: Path, projects: Path, old_cwd: str | None, new_cwd: str) -> Path:
    """`source` as Claude Code would have written it had the session run in `new_cwd`."""
    text = source.read_text()
    if old_cwd is not None:
        text = text.replace(json.dumps(old_cwd)[1:-1], new_cwd)
    target = projects / claude_dir_name(new_cwd) / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("projects-e2e")
    repo = make_worktrees(root / "src")
    (repo.b / "src" / "api").mkdir(parents=True)
    projects = root / "claude-projects"
    files = [
        lay_out(DEMO, projects, "/home/dev/acme-api", str(repo.b / "src" / "api")),
        lay_out(VIEWER, projects, "/path/to/Demo", str(repo.a)),
        lay_out(FASTHOOKS, projects, None, "/workspace"),
    ]
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "cairn-home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(projects))
        report = cairn_json("index", *map(str, files), "--model", "offline")
        assert report["runs_failed"] == 0 and report["messages_added"] > 50
        yield World(home=root / "cairn-home", repo=repo)


def test_cairn_projects_shows_one_project_with_its_worktrees(world: World) -> None:
    listed = cairn_json("projects")
    mine = [p for p in listed if p["path"] == str(world.repo.main)]
    assert len(mine) == 1, listed
    project = mine[0]
    assert project["name"] == "spotter" and project["found_by"] == "git" and project["sessions"] == 2
    assert sorted(project["worktrees"]) == sorted([str(world.repo.a), str(world.repo.b)])
    assert {entry["path"]: entry["sessions"] for entry in project["paths"]} == {
        str(world.repo.a): 1,
        str(world.repo.b / "src" / "api"): 1,
    }
    assert claude_dir_name(str(world.repo.a)) in project["claude_dirs"]
    assert [p["path"] for p in listed if p["path"] != str(world.repo.main)] == ["/workspace"]
    table = cairn("projects").stdout
    assert "spotter" in table and "covers" in table, "a column left out at 80 columns is named"
    wide = cairn("projects", "--wide").stdout
    assert "worktree" in wide and "spotter" in wide


def _sessions(page: dict[str, Any]) -> set[str]:
    return {r["session"]["id"] for r in page["results"] if r.get("session")}


def test_search_from_a_subdirectory_of_worktree_a_finds_worktree_b(world: World) -> None:
    page = cairn_json("search", QUERY, "--project", str(world.subdir_a))
    assert DEMO_SESSION in _sessions(page), "the demo session ran in worktree B"
    by_name = cairn_json("search", QUERY, "--project", claude_dir_name(str(world.repo.a)))
    assert _sessions(by_name) == _sessions(page)
    assert _sessions(cairn_json("search", QUERY, "--project", "spotter")) == _sessions(page)
    # The fasthooks session is not in the repository's project.
    assert not _sessions(page) - {DEMO_SESSION, VIEWER_SESSION}


def test_an_unknown_project_points_to_cairn_projects(world: World) -> None:
    page = cairn_json("search", "postgres", "--project", "/nowhere/at/all")
    notices = " ".join(page.get("notices", []))
    assert "`cairn projects`" in notices and "cairn stats" not in notices
    failed = cairn("ideas", "--project", "no-such-project", check=False)
    assert failed.returncode != 0 and "cairn projects" in failed.stdout + failed.stderr


async def test_mcp_search_with_a_worktree_subdirectory_as_project(world: World) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cairn", "mcp"],
        env={"CAIRN_HOME": str(world.home), "CAIRN_MODEL": "offline"},
        cwd=str(world.subdir_a),
    )
    async with Client(server) as client:
        result = await client.call_tool("search", {"query": QUERY, "project": str(world.subdir_a)})
        assert not result.is_error, result.content
        page = json.loads(result.content[0].text)
    # MCP results are compact (no session): the same search by the CLI says where each came from.
    cli = cairn_json("search", QUERY, "--project", str(world.subdir_a), "--limit", "50")
    session_of = {r["id"]: r["session"]["id"] for r in cli["results"] if r.get("session")}
    found = [r["id"] for r in page["results"]]
    assert found and set(found) <= set(session_of)
    assert DEMO_SESSION in {session_of[i] for i in found}, "the demo session ran in worktree B"


async def test_session_start_in_a_worktree_subdirectory_recalls_the_repository(
    world: World, embedding_function: EmbeddingFunction[Documents]
) -> None:
    settings = Settings.load(world.home)
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        project = await find_project(store.db, str(world.subdir_a))
        assert project is not None and project.path == str(world.repo.main)
        recall = await session_context(store.db, settings, project)
        assert recall.text is not None and recall.ids
        sessions = await store.db.fetchall(
            f"SELECT DISTINCT session_id FROM ideas WHERE id IN ({','.join('?' * len(recall.ids))})",
            tuple(recall.ids),
        )
        assert DEMO_SESSION in {row["session_id"] for row in sessions}, "worktree B's memory is recalled"
    finally:
        await store.close()
