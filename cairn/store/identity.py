"""Which repository a working directory belongs to, read from `.git` files on disk, cached per directory.

A project is the repository a developer works on, not one exact working directory: every worktree
and every subdirectory of a checkout belongs to the main repository's project. Git is never spawned
here (ingest asks once per new cwd): a checkout's `.git` is either a directory (the main checkout) or a
file `gitdir: <main>/.git/worktrees/<name>` whose `commondir` points back to `<main>/.git` (a worktree);
a `gitdir:` file without `commondir` (a submodule, a separate git dir) is a repository of its own.

When the directory is not a git checkout on this machine (gone, copied from elsewhere, never a
repository) only its spelling is left: `…/<repo>/.worktrees/<name>` and `…/<repo>/.claude/worktrees/<name>`
belong to `…/<repo>` (`layout`); everything else is decided by the store (see `cairn.store.projects`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

FoundBy = Literal["git", "layout", "cwd", "claude_dir"]
"""How a project's root was found: git files on disk, a worktree's path, the cwd itself, or (no cwd
at all) the Claude Code directory holding the transcript."""

_WORKTREE_LAYOUT = re.compile(r"^(?P<root>/.+?)/(?:\.worktrees|\.claude/worktrees)/[^/]+")
_CACHE_LIMIT = 4096
_cache: dict[str, Identity | None] = {}


@dataclass(frozen=True)
class Identity:
    """Where a cwd belongs: the project's `root` and the `checkout` (worktree or main) holding the cwd."""

    root: str
    checkout: str
    found_by: FoundBy


def claude_dir_name(cwd: str) -> str:
    """The directory name Claude Code gives a cwd's transcripts: `/` and `.` become `-`."""
    return re.sub(r"[/.]", "-", cwd)


def git_identity(cwd: str) -> Identity | None:
    """The repository holding `cwd` as git's files say, or None (not a directory, not in a checkout).

    Cached per cwd string: ingest resolves each distinct cwd once per process.
    """
    if cwd in _cache:
        return _cache[cwd]
    found = _read_git(cwd)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[cwd] = found
    return found


def layout_identity(cwd: str) -> Identity | None:
    """A worktree recognised by its path alone (`<repo>/.worktrees/<name>/…`), or None."""
    match = _WORKTREE_LAYOUT.match(cwd.rstrip("/"))
    if match is None:
        return None
    return Identity(root=match["root"], checkout=match[0], found_by="layout")


def is_inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or below it, by spelling."""
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def _read_git(cwd: str) -> Identity | None:
    start = Path(cwd)
    if not start.is_absolute() or not start.is_dir():
        return None
    for directory in (start, *start.parents):
        dotgit = directory / ".git"
        try:
            if dotgit.is_dir():
                top = os.path.realpath(directory)
                return Identity(root=top, checkout=top, found_by="git")
            if dotgit.is_file():
                return _from_gitdir_file(directory, dotgit)
        except OSError:
            return None
    return None


def _from_gitdir_file(directory: Path, dotgit: Path) -> Identity | None:
    """A worktree's (or submodule's) `.git` file: follow `gitdir:` and, for a worktree, `commondir`."""
    text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = (directory / text.removeprefix("gitdir:").strip()).resolve()
    checkout = os.path.realpath(directory)
    commondir = gitdir / "commondir"
    if not commondir.is_file():
        return Identity(root=checkout, checkout=checkout, found_by="git")
    common = (gitdir / commondir.read_text(encoding="utf-8", errors="replace").strip()).resolve()
    root = str(common.parent) if common.name == ".git" else str(common)
    return Identity(root=root, checkout=checkout, found_by="git")
