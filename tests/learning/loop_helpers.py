"""What the feedback-loop tests share: a real project on disk, transcripts of it, and the real capture path.

Transcripts are built with `tests.helpers.builders.Transcript`, written as JSONL and read back through
`cairn.transcripts.read_from` + `tool_events` (for the pure learner) or captured with the real
`cairn.ingest.sync_file` (for the loop), so the tests see exactly what the daemon would.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.ingest import FileSync, sync_file
from cairn.learning.learner import LearnerConfig, SearchLearner
from cairn.store.db import Database
from cairn.store.store import Store
from cairn.transcripts import read_from
from cairn.transcripts.tool_events import ToolEvent, tool_events
from tests.helpers.builders import Transcript

LOGIN_BUTTON = "src/features/auth/LoginButton.tsx"
USERS_ROUTES = "src/api/routes/users.ts"
PROJECT_FILES = {
    LOGIN_BUTTON: "export function LoginButton() {\n  return <button>Sign in</button>;\n}\n",
    "src/components/Button.tsx": "export function Button() {\n  return <button />;\n}\n",
    USERS_ROUTES: "export async function createUser(req, res) {\n  res.status(201).json({});\n}\n",
    "README.md": "# Acme web\n",
}


def make_project(root: Path, files: dict[str, str] | None = None) -> Path:
    """A project directory with real files; returns its real path (what capture stores as the project)."""
    for name, text in (PROJECT_FILES if files is None else files).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root.resolve()


def events_of(transcript: Transcript, path: Path) -> list[ToolEvent]:
    """The transcript written to `path` and read back as tool events."""
    transcript.write(path)
    return list(tool_events(read_from(path).entries))


def run_learner(events: list[ToolEvent], **config: Any) -> SearchLearner:
    return SearchLearner(LearnerConfig(**config)).feed(events)


def login_button_scenario(project: Path, *, session_id: str | None = None) -> Transcript:
    """Seed 000 scenario 1: a weak search, a Grep that finds the file, a Read of it, the next prompt."""
    t = Transcript(project, session_id=session_id)
    t.user("find the login button component")
    t.search("login button component", [0.42, 0.31])
    t.tool(
        "Grep",
        {"pattern": "login.*button", "glob": "*.tsx", "-i": True},
        LOGIN_BUTTON,
        structured={"mode": "files_with_matches", "filenames": [LOGIN_BUTTON], "numFiles": 1},
    )
    t.tool("Read", {"file_path": str(project / LOGIN_BUTTON)}, PROJECT_FILES[LOGIN_BUTTON])
    t.say("LoginButton.tsx renders the sign-in button.")
    t.user("great, now update the styling")
    return t


async def capture(store: Store, path: Path, settings: Settings) -> FileSync:
    """One incremental read of `path` through the real capture path (learning included when on)."""
    report = await sync_file(store, path, settings)
    assert report.error is None, report.error
    return report


async def rows(db: Database, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[sqlite3.Row] = await db.fetchall(sql, params)
    return [tuple(row) for row in found]


async def associations(db: Database) -> list[tuple[Any, ...]]:
    """(query, rel_path, source, times_learned, grep_patterns, original_score) of every association."""
    return await rows(
        db,
        "SELECT query, rel_path, source, times_learned, grep_patterns, original_score "
        "FROM search_associations ORDER BY id",
    )


async def sessions(db: Database) -> list[tuple[Any, ...]]:
    """(query, status, best_score, reads, greps, error) of every learning session."""
    return await rows(
        db,
        "SELECT query, status, best_score, reads, greps, error FROM learning_sessions ORDER BY id",
    )
