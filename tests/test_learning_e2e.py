"""Issue 6's "done when", through the CLI in real processes: a weak search, the agent's fallback, learning.

The seed's first scenario (000 §7): the agent searches cairn for "login button component", gets a weak
answer, greps and reads `src/features/auth/LoginButton.tsx`, and the person moves on. Replayed through
`cairn index`, cairn must index that file and learn the association, so that a later
`cairn content --concept "login button"` ranks the file first — where before it was not found at all.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.helpers.builders import Transcript
from tests.helpers.cli import cairn, cairn_json

BUTTON = """\
import { ReactNode } from "react";

export type ButtonProps = { variant?: "primary" | "ghost"; onClick?: () => void; children: ReactNode };

/** The design system's base button: every clickable control renders one. */
export function Button({ variant = "ghost", onClick, children }: ButtonProps) {
  return (
    <button className={`btn btn-${variant}`} onClick={onClick}>
      {children}
    </button>
  );
}
"""

LOGIN_BUTTON = """\
import { Button } from "../../components/Button";
import { useAuth } from "./useAuth";

/** Starts the OAuth sign-in flow; shown in the header while signed out. */
export function LoginButton() {
  const { signIn, pending } = useAuth();
  return (
    <Button variant="primary" onClick={signIn}>
      {pending ? "Signing in" : "Sign in"}
    </Button>
  );
}
"""

README = """\
# webapp

A small React app: components in src/components, features in src/features, the API in src/api.
Run `npm run dev` to start it.
"""


def make_project(root: Path) -> Path:
    project = root / "webapp"
    for rel, text in {
        "src/components/Button.tsx": BUTTON,
        "src/features/auth/LoginButton.tsx": LOGIN_BUTTON,
        "README.md": README,
    }.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return project


def earlier_session(project: Path, start: datetime) -> Transcript:
    """A session that read the base Button and the README: the file index knows those two."""
    t = Transcript(project, start=start)
    t.user("what does the base button look like?")
    t.tool("Read", {"file_path": str(project / "src/components/Button.tsx")}, BUTTON)
    t.tool("Read", {"file_path": str(project / "README.md")}, README)
    t.say("The base Button takes a variant and renders a styled <button>.")
    t.user("thanks")
    return t


def login_session(project: Path, start: datetime) -> Transcript:
    """Seed 000 §7, scenario 1, as Claude Code writes it."""
    login = project / "src/features/auth/LoginButton.tsx"
    t = Transcript(project, start=start)
    t.user("find the login button component")
    t.search("login button component", [0.42])
    t.tool(
        "Grep",
        {"pattern": "login.*button", "glob": "*.tsx", "-i": True},
        f"Found 1 file\n{login}",
        structured={"mode": "files_with_matches", "filenames": [str(login)], "numFiles": 1},
    )
    t.tool("Read", {"file_path": str(login)}, LOGIN_BUTTON)
    t.say("It is src/features/auth/LoginButton.tsx: it renders the primary Button and calls signIn.")
    t.user("great, now update the styling")
    return t


def content(concept: str) -> list[dict[str, object]]:
    page = cairn_json("content", "--concept", concept, "--min-score", "0")
    return list(page["results"])


def test_a_learned_search_ranks_the_file_it_found_first(cairn_home: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    start = datetime.now(UTC) - timedelta(hours=2)
    transcripts = tmp_path / "claude-projects" / "-webapp"
    earlier = earlier_session(project, start).write(transcripts / "earlier.jsonl")
    cairn_json("index", str(earlier), "--model", "offline")

    before = [str(r["document_id"]) for r in content("login button")]
    assert any(doc.endswith("src/components/Button.tsx") for doc in before), before
    assert not any(doc.endswith("LoginButton.tsx") for doc in before), before

    session = login_session(project, start + timedelta(hours=1)).write(transcripts / "login.jsonl")
    cairn_json("index", str(session), "--model", "offline")

    after = content("login button")
    assert str(after[0]["document_id"]) == str(project / "src/features/auth/LoginButton.tsx"), after[:3]
    stats = cairn_json("learn", "stats")
    assert stats["sessions_resolved"] == 1 and stats["associations_created"] == 1, stats
    assert stats["sessions_started"] == 1 and stats["active_sessions"] == 0
    associations = cairn_json("learn", "associations")
    assert [(a["query"], a["source"]) for a in associations] == [("login button component", "learned")]
    # What a person sees: the lifted file, its lines, and why it was lifted.
    table = cairn("content", "--concept", "login button", env={"COLUMNS": "200"}).stdout
    assert "LoginButton.tsx:1-12" in table and "found after the search 'login button component'" in table
    panel = cairn("show", str(after[0]["chunk_id"]), env={"COLUMNS": "200"}).stdout
    assert "learned from searches" in panel and "'login button component'" in panel

    # Reading the same transcript again — in place, then a copy elsewhere — learns nothing twice.
    cairn_json("index", str(session), "--model", "offline")
    (tmp_path / "elsewhere").mkdir()
    copy = shutil.copy(session, tmp_path / "elsewhere" / "login.jsonl")
    cairn_json("index", str(copy), "--model", "offline")
    again = cairn_json("learn", "stats")
    assert again["sessions_resolved"] == 1 and again["associations_created"] == 1, again
    assert again["association_repeats"] == 0


def test_with_learning_off_files_are_indexed_but_nothing_is_learned(cairn_home: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    session = login_session(project, datetime.now(UTC) - timedelta(hours=1)).write(
        tmp_path / "t" / "login.jsonl"
    )
    env = {"CAIRN_LEARN_FROM_SEARCH": "false"}
    cairn("index", str(session), "--model", "offline", "--json", env=env)

    stats = cairn_json("learn", "stats", env=env)
    assert stats["enabled"] is False
    assert stats["searches_seen"] == 0 and stats["associations_created"] == 0
    docs = [str(r["document_id"]) for r in content("sign in button")]
    assert str(project / "src/features/auth/LoginButton.tsx") in docs
    messages = cairn_json("content", "--term", "login button component")
    assert messages["results"], "capture is not affected by switching learning off"
