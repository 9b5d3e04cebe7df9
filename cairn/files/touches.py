"""Which files the coding agent touched, read from its tool calls: the file index's to-do list.

A file is worth indexing when the agent needed it: it read or edited it, or a Grep or Glob turned it
up. Read and edit tools name the file in their input; Grep and Glob name files only in their result,
so those are taken from the result — Claude Code's structured `toolUseResult.filenames` when it has
one, else the result text (one path per line, or `path:line:text` in Grep's content mode). A call
and its result may arrive in different incremental reads: a result whose call is not among the
events gets the call's tool name from `tool_names`, which the caller fills from the store.

Nothing here checks whether a path may be indexed; that is the policy's job when the file is read.
Paths are only made absolute (against the working directory the transcript recorded) and capped:
one broad Glob must not queue a whole repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cairn.transcripts.tool_events import ToolEvent, ToolOutput, ToolUse

TouchReason = Literal["read", "edit", "grep", "glob"]

#: Tools whose input names the one file they touch, and the input key holding it.
_PATH_TOOLS: dict[str, tuple[TouchReason, str]] = {
    "Read": ("read", "file_path"),
    "Edit": ("edit", "file_path"),
    "MultiEdit": ("edit", "file_path"),
    "Write": ("edit", "file_path"),
    "NotebookEdit": ("edit", "notebook_path"),
}
#: Tools whose result lists the files they found.
_SEARCH_TOOLS: dict[str, TouchReason] = {"Grep": "grep", "Glob": "glob"}

# Result lines that are not paths: headers, footers, notices.
_NOT_A_PATH = re.compile(r"^(?:No files found|No matches found|Found \d+ (?:files?|matches?)\b|\[|\(|--$)")
# Grep's content mode: `path:12:text` (with -n) or `path:text`. Context lines (`path-12-text`) are left
# out: a file name such as `2024-01-15-post.md` makes them ambiguous, and their file has match lines too.
_NUMBERED_LINE = re.compile(r"^(?P<path>[^:\n]+?):\d+:")
_PLAIN_LINE = re.compile(r"^(?P<path>[^:\s]*/[^:\s]*):")


@dataclass(frozen=True)
class Touch:
    """A file the agent touched: the path as an absolute path when the transcript allowed, and why."""

    path: str
    reason: TouchReason
    session_id: str | None
    cwd: str | None


def touched_files(
    events: Iterable[ToolEvent], *, per_result: int, tool_names: Mapping[str, str] | None = None
) -> list[Touch]:
    """Every file touched in `events`, first touch first, each path once.

    A read or edit whose result is an error touched nothing (the file was not there, or the edit did
    not apply); a Grep or Glob contributes at most `per_result` paths per result.
    """
    events = list(events)
    failed = {event.tool_use_id for event in events if isinstance(event, ToolOutput) and event.is_error}
    names = dict(tool_names or {})
    inputs: dict[str, dict[str, Any]] = {}
    touches: dict[str, Touch] = {}

    def keep(raw: str, reason: TouchReason, session_id: str | None, cwd: str | None) -> None:
        path = _absolute(raw, cwd)
        if path and path not in touches:
            touches[path] = Touch(path=path, reason=reason, session_id=session_id, cwd=cwd)

    for event in events:
        if isinstance(event, ToolUse):
            names[event.id] = event.name
            inputs[event.id] = event.input
            spec = _PATH_TOOLS.get(event.name)
            if spec is not None and event.id not in failed:
                raw = event.input.get(spec[1])
                if isinstance(raw, str):
                    keep(raw, spec[0], event.session_id, event.cwd)
        elif isinstance(event, ToolOutput) and not event.is_error:
            reason = _SEARCH_TOOLS.get(names.get(event.tool_use_id, ""))
            if reason is not None:
                mode = (
                    _grep_mode(event.structured, inputs.get(event.tool_use_id)) if reason == "grep" else None
                )
                for raw in _listed_paths(event, mode)[: max(per_result, 0)]:
                    keep(raw, reason, event.session_id, event.cwd)
    return list(touches.values())


def _grep_mode(structured: Any, tool_input: dict[str, Any] | None) -> str:
    """`content`, `files` (one path per line) or `unknown` (the call is in an earlier read)."""
    mode = structured.get("mode") if isinstance(structured, dict) else None
    if mode is None and tool_input is not None:
        mode = tool_input.get("output_mode") or "files_with_matches"
    if mode == "content":
        return "content"
    return "unknown" if mode is None else "files"


def _listed_paths(output: ToolOutput, mode: str | None) -> list[str]:
    """The paths a Glob (`mode` None) or Grep result names, in order, without repeats."""
    structured = _structured_filenames(output.structured)
    if structured:
        return structured
    paths: list[str] = []
    for line in output.text.splitlines():
        line = line.strip()
        if not line or _NOT_A_PATH.match(line):
            continue
        if mode == "content" or (mode == "unknown" and not _looks_like_path(line)):
            # Without line numbers only a path with a directory in it is trusted: `self.x: int` is code.
            match = _NUMBERED_LINE.match(line) or _PLAIN_LINE.match(line)
            if match is None:
                continue
            line = match.group("path")
        if _looks_like_path(line):
            paths.append(line)
    return list(dict.fromkeys(paths))


def _structured_filenames(structured: Any) -> list[str]:
    if not isinstance(structured, dict):
        return []
    filenames = structured.get("filenames")
    if not isinstance(filenames, list):
        return []
    return list(dict.fromkeys(name for name in filenames if isinstance(name, str) and name))


def _looks_like_path(text: str) -> bool:
    """A whole line that could be a path: no `:` (content-mode separator), one line, a name with a
    slash or a dot in it. Bare words and line numbers are not taken for paths."""
    if ":" in text or len(text) > 4096 or text.isdigit():
        return False
    return "/" in text or "." in text.lstrip(".")


def _absolute(raw: str, cwd: str | None) -> str | None:
    """`raw` made absolute against `cwd` without resolving symlinks or `..` (the policy does that on
    the real file system; collapsing `..` textually here could hide an escape)."""
    raw = raw.strip()
    if not raw or "\0" in raw:
        return None
    if raw.startswith("~"):
        return raw  # the policy expands it for the user the daemon runs as
    path = Path(raw)
    if path.is_absolute() or cwd is None:
        return raw
    return str(Path(cwd) / path)
