"""Where a path the agent named really is, and whether that is inside the session's project.

Transcripts name files as the agent saw them: absolute, relative to the shell's working directory, or
through a symlink. Indexing and learning may only ever touch files inside the project, so every path
is resolved to its real location first — a symlink pointing out of the project or a `..` that climbs
out of it resolves outside, and is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class ProjectPath:
    """A real path inside a project, and the same path relative to the project's real directory."""

    absolute: Path
    relative: str


def resolve_in_project(
    project_dir: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> ProjectPath | None:
    """`path` (absolute, else relative to `cwd`, else to the project) resolved, if inside the project.

    None when it resolves outside the project or to the project directory itself. The file need not
    exist: whether it does is the caller's next question.
    """
    raw = Path(os.path.expanduser(os.fspath(path)))
    if not raw.is_absolute():
        raw = Path(cwd if cwd is not None else project_dir) / raw
    try:
        root = Path(project_dir).resolve()
        real = raw.resolve()
    except (OSError, RuntimeError):  # a symlink loop, an unreadable component
        return None
    try:
        relative = real.relative_to(root)
    except ValueError:
        return None
    if relative == Path("."):
        return None
    return ProjectPath(absolute=real, relative=PurePosixPath(*relative.parts).as_posix())
