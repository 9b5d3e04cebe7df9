"""Finding Claude Code session transcripts on disk, and telling them apart from other JSONL files.

Claude Code keeps one file per session under `~/.claude/projects/<project>/<session>.jsonl` and the
transcripts of a session's subagents under `<project>/<session>/subagents/agent-*.jsonl`. Other JSONL
files can sit beside them (hook logs, exports): cairn must not index those, so a file counts as a
transcript only when its first lines look like Claude Code entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from cairn.transcripts.entries import KNOWN_ENTRY_TYPES

_SNIFF_BYTES = 64 * 1024
_SNIFF_LINES = 5


def is_transcript(path: Path) -> bool:
    """True when one of the file's first lines parses as a Claude Code entry.

    An empty file (a session that has just started) counts: it will fill in.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    if not head.strip():
        return True
    lines = head.split(b"\n")
    if len(lines) == 1 and len(head) == _SNIFF_BYTES:
        # One line longer than the sniff window: judge it by the type tag Claude Code writes in it.
        return any(f'"type":"{t}"'.encode() in head for t in KNOWN_ENTRY_TYPES)
    for raw in lines[:_SNIFF_LINES]:
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") in KNOWN_ENTRY_TYPES:
            return True
    return False


def is_subagent_file(path: Path) -> bool:
    return path.parent.name == "subagents" and path.name.startswith("agent-")


def session_id_for(path: Path) -> str:
    """The session a transcript file belongs to, from Claude Code's file layout.

    `<session>.jsonl` → `<session>`; `<session>/subagents/agent-*.jsonl` → the parent `<session>`, so a
    subagent's work is indexed as part of the session that started it.
    """
    if is_subagent_file(path):
        return path.parent.parent.name
    return path.stem


def find_transcripts(roots: Iterable[Path]) -> Iterator[Path]:
    """Every transcript file under the given files or directories, sorted, each once."""
    seen: set[Path] = set()
    for root in roots:
        root = root.expanduser()
        candidates = sorted(root.rglob("*.jsonl")) if root.is_dir() else [root]
        for path in candidates:
            resolved = path.resolve()
            if resolved in seen or not path.is_file() or not is_transcript(path):
                continue
            seen.add(resolved)
            yield resolved
