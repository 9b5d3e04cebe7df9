"""The offline indexer's learned model: it loads offline, finds labelled statements in a real session,
refuses a broken weights file in one line, and its training script rebuilds the shipped file exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.agent.offline.classifier import WEIGHTS_ENV, WeightsError, chosen, load_weights, score_session
from cairn.agent.offline.learned import learned_candidates
from cairn.evals.labelled import labelled_session, read_transcript
from cairn.evals.splits import REPO
from cairn.evals.truth import SessionTruth

FIXTURES = REPO / "tests" / "fixtures" / "transcripts"
TRUTH = REPO / "evals" / "datasets" / "session-truth-dev" / "truth.json"
SHARED = REPO.parent / "shared"
REBASE = "entireio-cli/5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl"


def _truth(key: str) -> SessionTruth:
    return SessionTruth.model_validate(json.loads(TRUTH.read_text())[key])


def test_the_shipped_model_finds_the_labelled_decisions_and_fixes_of_a_real_session() -> None:
    session = labelled_session(REBASE, FIXTURES / REBASE, _truth(REBASE))
    found = learned_candidates(session.view)
    lines = [c.line for c in found]
    truth = _truth(REBASE)
    near = [d for d in truth.decisions if any(abs(line - d.line) <= 3 for line in lines)]
    assert len(near) >= 2, (lines, [d.line for d in truth.decisions])
    intents = {"decision", "problem", "solution", "question", "todo", "conclusion"}
    assert all(c.intent in intents for c in found)
    assert all(len(c.content.split()) >= 4 and len(c.content) <= 300 for c in found)
    # The model chooses: a few messages per hundred, not every one.
    scored = score_session(session.view)
    assert 0 < len(chosen(scored)) < len(scored) / 3


def test_a_fix_said_as_a_tool_call_reads_as_the_words_that_introduced_it() -> None:
    view, _spans = read_transcript(FIXTURES / REBASE)
    calls = [c for c in learned_candidates(view) if c.content.endswith(")") and " (" in c.content]
    assert calls, "the rebase session's fixes are edits the model picks"
    for candidate in calls:
        message = view.by_line(candidate.line)
        assert message is not None and "[tool_use" in message.text
        assert not candidate.content.startswith("[tool_use")


def test_a_broken_weights_file_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "weights.json"
    broken.write_text('{"kinds": ["decision"]}')
    monkeypatch.setenv(WEIGHTS_ENV, str(broken))
    with pytest.raises(WeightsError, match=r"weights\.json.*train_indexer\.py"):
        load_weights()


def test_another_weights_file_is_used_when_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = json.loads((REPO / "cairn" / "agent" / "offline" / "weights.json").read_text())
    shipped["threshold"] = 1.01  # nothing can pass: the named file, not the shipped one, decides
    other = tmp_path / "strict.json"
    other.write_text(json.dumps(shipped))
    monkeypatch.setenv(WEIGHTS_ENV, str(other))
    view, _spans = read_transcript(FIXTURES / REBASE)
    assert learned_candidates(view) == []


@pytest.mark.process
@pytest.mark.skipif(not (SHARED / "corpus").is_dir(), reason="needs ../shared/corpus (labelled transcripts)")
def test_the_training_script_rebuilds_the_shipped_weights_byte_for_byte() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "train_indexer.py"), "--check", "--shared", str(SHARED)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rebuilt byte for byte" in done.stdout


GC = "entireio-cli/03a1382e-ecd5-42c4-b3d4-5c659e165904.jsonl"


def test_what_was_settled_is_stated_never_an_offer_or_a_next_step() -> None:
    """The message that explains the worktree index corruption closes with "Want me to disable auto-GC
    …?": the conclusion is what it explains, since the person has not taken the offer; and "Now we need
    to confirm it's `worktree.Status()`" announces a step, it settles nothing."""
    view, _spans = read_transcript(FIXTURES / GC)
    found = learned_candidates(view)
    explained = [c for c in found if c.line == 179]
    assert explained and not explained[0].content.endswith("?"), explained
    assert not [c for c in found if c.content.startswith(("Want me to", "Now we need to"))]
