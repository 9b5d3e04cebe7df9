"""`cairn backfill` and `cairn eval` with `--model claude-code`, as a user runs them.

The real Claude Code CLI (claude-agent-sdk's bundled one) talks to the fake Messages API, which answers
every batch it is sent with one idea per session of that batch: so what the store holds afterwards can
be checked against what the model was asked, batch by batch.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests

from cairn.agent.claude_code_tools import TOOL_PREFIX
from cairn.agent.schema import extract_batch
from cairn.evals.record import read_recording
from tests.agent.claude_code_helpers import batch_prompt, clis_of, idea_per_session, require_cli
from tests.agent.fake_anthropic import FakeAnthropic
from tests.evals import make_dataset
from tests.helpers.cli import cairn_json
from tests.helpers.hostile_disks import run_cairn
from tests.helpers.paths import REAL_TRANSCRIPTS


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeAnthropic]:
    require_cli()
    with FakeAnthropic(tool_prefix=TOOL_PREFIX) as server:
        server.responder = lambda body: idea_per_session(server, body)
        yield server


def cli_env(fake: FakeAnthropic, home: Path) -> dict[str, str]:
    """What the CLI needs from cairn's environment: the fake, a key, a home of its own."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def asked(fake: FakeAnthropic) -> Counter[tuple[str, int, str]]:
    """The ideas the fake answered with: (session, line, content) for each batch it was sent."""
    ideas: Counter[tuple[str, int, str]] = Counter()
    for body in fake.requests:
        prompt = batch_prompt(body)
        assert prompt is not None
        for update in extract_batch(prompt).updates:
            if update.messages:
                line = update.messages[0].line
                ideas[
                    (update.session, line, f"Claude Code indexed session {update.session} from line {line}")
                ] += 1
    return ideas


@pytest.mark.process
def test_backfill_over_real_transcripts_stores_what_claude_code_answered(
    fake: FakeAnthropic, tmp_path: Path
) -> None:
    transcripts = tmp_path / "transcripts"
    shutil.copytree(REAL_TRANSCRIPTS, transcripts)
    home, cli_home = tmp_path / "cairn-home", tmp_path / "cli-home"

    done = run_cairn(
        home, "backfill", str(transcripts), "--model", "claude-code", "--json", **cli_env(fake, cli_home)
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    with sqlite3.connect(home / "cairn.db") as db:
        runs = db.execute("SELECT model, outcome, input_tokens, output_tokens FROM index_runs").fetchall()
        stored = Counter(
            (session, line, content)
            for session, line, content in db.execute(
                "SELECT f.session_id, i.source_line, i.content FROM ideas i "
                "JOIN transcript_files f ON f.id = i.source_file_id"
            )
        )
        unindexed = db.execute(
            "SELECT count(*) FROM messages m JOIN transcript_files f ON f.id = m.file_id "
            "WHERE m.line > f.indexed_line"
        ).fetchone()
    # One request per batch, each answered at once with its final result, all applied.
    assert len(runs) == len(fake.requests) > 1, report
    assert {(model, outcome) for model, outcome, *_ in runs} == {("claude-code:claude-haiku-4-5", "ok")}
    assert all((inputs, outputs) == (100, 20) for _, _, inputs, outputs in runs)
    assert stored == asked(fake) and max(stored.values()) == 1
    assert unindexed == (0,)
    assert clis_of(cli_home) == []
    # The CLI kept no transcript of the indexing sessions (cairn would capture them as the user's).
    assert list(cli_home.rglob("*.jsonl")) == []


def test_eval_records_through_claude_code_and_replays_the_same_scores(
    fake: FakeAnthropic, tmp_path: Path, cairn_home: Path
) -> None:
    dataset = make_dataset(tmp_path / "tiny")
    recording = tmp_path / "claude-code.jsonl"
    cli_home = tmp_path / "cli-home"
    args = ("eval", "indexing", "--dataset", str(dataset))
    with override_allow_model_requests(True):
        recorded = cairn_json(
            *args, "--model", "claude-code", "--record", str(recording), env=cli_env(fake, cli_home)
        )
    assert recorded["model"] == "claude-code:claude-haiku-4-5"
    assert recorded["cost"]["batches"] == len(fake.requests) >= 1
    ideas = recorded["metrics"]["ideas"]
    assert recorded["cost"]["failed_runs"] == 0 and ideas["tp"] + ideas["fp"] >= 1
    assert read_recording(recording).model == "claude-code:claude-haiku-4-5"
    assert clis_of(cli_home) == []

    sent = len(fake.requests)
    replayed = cairn_json(*args, "--replay", str(recording))
    assert len(fake.requests) == sent  # a replay reaches no model
    assert replayed["model"] == recorded["model"]
    assert replayed["metrics"] == recorded["metrics"]
    for figure in ("batches", "input_tokens", "output_tokens", "requests", "tool_calls"):
        assert replayed["cost"][figure] == recorded["cost"][figure], figure
