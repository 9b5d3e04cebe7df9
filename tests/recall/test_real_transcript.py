"""Recall over a real session with a resolved bug, end to end: a transcript nobody here wrote, indexed by
the offline model into a temporary store, served by a real daemon, asked by the command `cairn install`
writes — then the daemon replaced by one that never answers.

The session (entireio-cli, `03a1382e…`): `git status` broke in a worktree; the index was corrupted and
rebuilt with `git read-tree HEAD`; the hunt for why went through guesses (the migration, a bug in
go-git's `EnableDotGitCommonDir`) to the cause that held — go-git's `worktree.Status()` rewriting the
index — and the decision to replace `getStagedFiles` with `git diff --cached --name-only`. Recall must
hand a later session the fix and that decision, never the guesses.

The assertions name what the conversation said, not idea ids, and take the abandoned ideas from the
store itself, so they hold while the offline indexer's extraction improves.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.config import Settings
from tests.daemon.helpers import query
from tests.helpers.cli import cairn
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.helpers.recall_hook import HANG_S, fake_daemon, idea_ids, injected, new_session, run_hook, serving

pytestmark = pytest.mark.slow

TRANSCRIPT = REAL_TRANSCRIPTS / "entireio-cli" / "03a1382e-ecd5-42c4-b3d4-5c659e165904.jsonl"
CWD = "/Users/alex/workspace/cli/.worktrees/1"
GUESSES = ("EnableDotGitCommonDir", "migration is likely", "probably because the migration")
# Nine months old and said tersely, the ideas score under the default floor of 0.5 for most prompts;
# a lower one lets the guesses (which share the prompt's words) through the search, so leaving them
# out is recall's doing.
MIN_SCORE = "0.2"
PROMPT = "go-git worktree.Status corrupts the index again, what was the fix?"


def hook_input(event: str, session: str, **fields: str) -> dict[str, str]:
    return {
        "session_id": session,
        "transcript_path": f"/Users/alex/.claude/projects/-Users-alex-workspace-cli/{session}.jsonl",
        "cwd": CWD,
        "hook_event_name": event,
        **fields,
    }


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session indexed offline into a fresh CAIRN_HOME (no outside CAIRN_* settings)."""
    root = tmp_path_factory.mktemp("recall-real")
    home = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(home))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        mp.setenv("CAIRN_MODEL", "offline")
        mp.setenv("CAIRN_IDLE_EXIT_SECONDS", "3600")
        report = json.loads(
            cairn("index", str(TRANSCRIPT), "--model", "offline", "--json", timeout=900).stdout
        )
        assert report["runs_failed"] == 0
        yield home


def abandoned_ids(home: Path) -> set[int]:
    """What the indexer marked as replaced or refuted, read from the store."""
    rows = query(
        home,
        "SELECT id FROM ideas WHERE superseded_by IS NOT NULL "
        "UNION SELECT to_idea_id FROM relations WHERE relation_type = 'contradicts'",
    )
    return {int(row[0]) for row in rows}


def guess_ids(home: Path) -> set[int]:
    ids: set[int] = set()
    for guess in GUESSES:
        ids |= {
            int(row[0]) for row in query(home, "SELECT id FROM ideas WHERE instr(content, ?) > 0", (guess,))
        }
    return ids


@pytest.mark.xfail(
    strict=True,
    reason="the learned indexer stores none of the guesses in the words GUESSES names them by: 264 "
    "('the migration is likely the trigger') is told by its 'A single manual `git gc` …' sentence, 547 "
    "(the `EnableDotGitCommonDir` bug) by its 'When `OpenRepository()` opens the repo …' sentence, 603 "
    "not at all; and the fix of the broken index is not stored: at 59 ('Fixed — clean status') the model "
    "tells the '`git gc --auto` runs …' conclusion and at 724 ('index is fixed') it picks nothing, so "
    "SessionStart carries no 'read-tree HEAD'. The test needs the guesses told by their guessing "
    "sentences and the read-tree fix stored",
)
def test_the_fix_is_recalled_and_the_abandoned_guesses_are_not(home: Path) -> None:
    assert guess_ids(home), "control: the session's guesses were stored as ideas"
    left_out = abandoned_ids(home) | guess_ids(home)
    with serving(home, CAIRN_RECALL_MIN_SCORE=MIN_SCORE):
        session = new_session()
        start = injected(
            run_hook(home, hook_input("SessionStart", session, source="startup")), "SessionStart"
        )
        assert start is not None
        assert "read-tree HEAD" in start, "the fix of the broken index"
        assert "git diff --cached" in start, "the decision that removes the cause"
        assert not left_out & set(idea_ids(start))
        assert not any(guess in start for guess in GUESSES)

        # Control: the search itself ranks a guess above the floor for this prompt.
        found = json.loads(
            cairn("search", PROMPT, "--kind", "ideas", "--min-score", MIN_SCORE, "--json").stdout
        )
        assert guess_ids(home) & {int(r["id"]) for r in found["results"]}
        said = injected(
            run_hook(home, hook_input("UserPromptSubmit", new_session(), prompt=PROMPT)), "UserPromptSubmit"
        )
        assert said is not None
        assert "getStagedFiles" in said, "the fix of the cause"
        assert not left_out & set(idea_ids(said))
        assert not any(guess in said for guess in GUESSES)


@pytest.mark.process
def test_a_daemon_that_never_answers_counts_a_drop_that_status_reports(home: Path) -> None:
    # First the real daemon answers: the hand-off it injects is counted beside the drops.
    with serving(home):
        start = run_hook(home, hook_input("SessionStart", new_session(), source="startup"))
        assert injected(start, "SessionStart") is not None, "control: the real daemon injects the hand-off"
    before = json.loads(cairn("status", "--json").stdout)["recall"]
    assert before["injections"] > 0
    for left in ("cairn.sock", "daemon.pid", "daemon.warm"):  # what a killed daemon leaves behind
        (home / left).unlink(missing_ok=True)
    with fake_daemon(home, lambda _line: None) as requests:
        started = time.monotonic()
        proc = run_hook(home, hook_input("UserPromptSubmit", new_session(), prompt=PROMPT), deadline_ms=None)
        assert proc.stdout == b"" and time.monotonic() - started < HANG_S
        assert len(requests) == 1, "the hook asked, the daemon stayed silent"
    status = json.loads(cairn("status", "--json").stdout)["recall"]
    assert status["drops"] == before["drops"] + 1
    assert status["drops_by_reason"]["late"] == before["drops_by_reason"]["late"] + 1
    assert status["last_drop"]["event"] == "UserPromptSubmit" and status["last_drop"]["reason"] == "late"
    assert status["injections"] == before["injections"] and "hit_rate" in status, "a drop injects nothing"
    stats = json.loads(cairn("stats", "--json").stdout)
    assert stats["recall_drops"] == status["drops"] and stats["recall_injections"] == status["injections"]
    text = cairn("status").stdout
    assert "dropped" in text and "late" in text
    assert Settings.load(home).recall_enabled
