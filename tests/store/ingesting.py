"""Reading real transcripts into a Store the way the daemon does: read, normalise, ingest."""

from __future__ import annotations

import shutil
from pathlib import Path

from cairn.store.store import FileCursor, IngestStats, Store
from cairn.transcripts import Message, ReadResult, normalise, read_from
from tests.helpers.paths import REAL_TRANSCRIPTS

VIEWER = REAL_TRANSCRIPTS / "claude-code-viewer"
FASTHOOKS = REAL_TRANSCRIPTS / "fasthooks"
SMALL = VIEWER / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
MEDIUM = VIEWER / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
LARGE = VIEWER / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
MAIN = FASTHOOKS / "sample_main_transcript.jsonl"
SIDECHAIN = FASTHOOKS / "sample_agent_sidechain.jsonl"


def read(path: Path, cursor: FileCursor | None = None) -> tuple[ReadResult, list[Message]]:
    result = read_from(
        path,
        cursor.offset if cursor else 0,
        line=cursor.line if cursor else None,
        inode=cursor.inode if cursor else None,
    )
    return result, normalise(result.entries)


async def ingest(store: Store, path: Path) -> IngestStats:
    """Ingest what is new in `path` since the store's cursor."""
    result, messages = read(path, await store.file_cursor(path))
    return await store.ingest(path, result, messages)


def project_copy(source: Path, root: Path, project: str = "-work-demo", name: str | None = None) -> Path:
    """A copy of `source` laid out like ~/.claude/projects/<project>/<name>."""
    target = root / project / (name or source.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target
