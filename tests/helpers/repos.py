"""A real git repository with two worktrees made by `git worktree add`, for project-identity tests."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Worktrees:
    """The main checkout and two worktrees of one repository, each with a `src/` subdirectory."""

    main: Path
    a: Path
    b: Path


def git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_worktrees(base: Path) -> Worktrees:
    """`<base>/spotter` with worktrees `<base>/spotter-a` and `<base>/wt/spotter-b` (outside the repo)."""
    main = (base / "spotter").resolve()
    (main / "src").mkdir(parents=True)
    (main / "src" / "app.py").write_text("print('spotter')\n")
    git("init", "-q", "-b", "main", cwd=main)
    git("add", "src/app.py", cwd=main)
    git("commit", "-q", "-m", "start", cwd=main)
    a, b = base.resolve() / "spotter-a", base.resolve() / "wt" / "spotter-b"
    git("worktree", "add", "-q", "-b", "feature-a", str(a), cwd=main)
    git("worktree", "add", "-q", "-b", "feature-b", str(b), cwd=main)
    return Worktrees(main=main, a=a, b=b)
