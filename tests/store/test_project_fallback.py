"""Sessions whose directories do not exist on this machine are grouped by their recorded paths alone.

The real transcripts under tests/fixtures/transcripts ran on other machines: git cannot answer,
so the stored cwd decides (`.worktrees/<name>` joins the directory above it), and each transcript's
Claude Code directory name is recorded as a name of its project.
"""

from __future__ import annotations

from pathlib import Path

from cairn.search.projects import resolve_projects
from cairn.store.identity import claude_dir_name
from cairn.store.memory import list_projects
from cairn.store.store import Store
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.store.ingesting import ingest

ALEX = "/Users/alex/workspace/cli"  # ran in its worktree `/Users/alex/workspace/cli/.worktrees/1`
SOPH = "/Users/soph/Work/entire/devenv/cli"


def laid_out(root: Path) -> list[Path]:
    """Every real transcript with a cwd, copied into the Claude Code directory named after its cwd."""
    files = []
    for source in sorted(REAL_TRANSCRIPTS.glob("*/*.jsonl")):
        text = source.read_text()
        marker = '"cwd":"'
        if marker not in text:
            continue
        cwd = text.split(marker, 1)[1].split('"', 1)[0]
        target = root / claude_dir_name(cwd) / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        files.append(target)
    return files


async def test_gone_paths_fall_back_to_the_recorded_cwd_and_worktree_layout(
    store: Store, tmp_path: Path
) -> None:
    files = laid_out(tmp_path / "claude-projects")
    for path in files:
        await ingest(store, path)
    projects = {p["path"]: p for p in await list_projects(store.db)}
    assert set(projects) == {ALEX, SOPH, "/path/to/Demo", "/Users/chip/dev/ai-music", "/workspace"}
    alex = projects[ALEX]
    assert alex["found_by"] == "layout" and alex["name"] == "cli"
    assert alex["worktrees"] == [f"{ALEX}/.worktrees/1"]
    assert alex["sessions"] == 2 and [p["path"] for p in alex["paths"]] == [f"{ALEX}/.worktrees/1"]
    assert projects[SOPH]["sessions"] == 3 and projects[SOPH]["found_by"] == "cwd"
    assert projects["/path/to/Demo"]["sessions"] == 3
    # Every spelling a user may have at hand names the project: a path inside the worktree, the
    # Claude Code directory name, the root; the shared name `cli` names both repositories.
    alex_id = alex["id"]
    for value in (f"{ALEX}/.worktrees/1/cmd/entire", claude_dir_name(f"{ALEX}/.worktrees/1"), ALEX):
        assert [pid for pid, _ in await resolve_projects(store.db, value)] == [alex_id], value
    assert {path for _, path in await resolve_projects(store.db, "cli")} == {ALEX, SOPH}
    assert await resolve_projects(store.db, "/Users/alex/elsewhere") == []
