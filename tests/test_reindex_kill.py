"""`cairn reindex` stopped half-way (Ctrl-C, or SIGKILL), in a real process: a rerun finishes it.

The store is built by a real `cairn backfill --model offline`; the re-index runs a changed offline
model (every idea gains a mark) in a child process, which is killed once a few sessions have been
swapped — a condition read from the store, not a fixed sleep. At the kill point and after the rerun,
what `cairn ideas` and `cairn search` return holds, for every session, either its whole old
generation or its whole new one: never both, never neither. Messages are never touched.

"Whole" is measured against the runs that made each generation, never against each other: the old
generation is what the backfill stored, the new one what the same re-index run without a kill on a
copy of the backfilled store makes. The two generations need not hold the same number of ideas: the
offline indexer keeps a candidate out when a stored idea already says it, and a session's re-index
sees every other session's memory (the later sessions' too, and the earlier ones' new generation)
where its backfill saw only the earlier sessions'.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.backfill import DEMO_PROJECT, rows
from tests.helpers.builders import Transcript
from tests.helpers.cli import cairn_json

pytestmark = pytest.mark.process

MARK = "[v2] "
KILL_AFTER = 3  # sessions swapped before the kill

# A changed offline model, in the child process: ideas get `MARK`; `CAIRN_TEST_SLOW` seconds per run
# keep the re-index going long enough to be killed between two of its sessions' commits.
CHANGED_MODEL = f"""
import os, sys, time
from cairn.agent.offline import model as offline

original = offline.build_result

def build_result(*args, **kwargs):
    result = original(*args, **kwargs)
    time.sleep(float(os.environ.get("CAIRN_TEST_SLOW", "0")))
    ideas = [i.model_copy(update={{"content": {MARK!r} + i.content}}) for i in result.ideas]
    return result.model_copy(update={{"ideas": ideas}})

offline.build_result = build_result
from cairn.cli import app
app(sys.argv[1:], prog_name="cairn")
"""


# Eight short team-written sessions, each about a subject of its own, so each keeps its ideas.
SUBJECTS = [
    ("Postgres", "connection pool", "pgbouncer", "transaction mode"),
    ("Redis", "cache stampede", "a lock key", "jittered expiry"),
    ("Kafka", "consumer lag", "the partition count", "sticky assignment"),
    ("Nginx", "upload limit", "client_max_body_size", "a 50 MB ceiling"),
    ("Terraform", "state drift", "the remote backend", "state locking in DynamoDB"),
    ("Webpack", "bundle size", "moment locales", "an IgnorePlugin rule"),
    ("Celery", "duplicate emails", "acks_late", "an idempotency key"),
    ("OAuth", "token refresh", "the clock skew", "a 60 second leeway"),
]


def distinct_sessions(projects: Path) -> None:
    root = projects / DEMO_PROJECT
    root.mkdir(parents=True)
    for i, (tech, symptom, cause, fix) in enumerate(SUBJECTS):
        t = Transcript(f"/home/dev/{tech.lower()}-service", session_id=f"{i:08d}-aaaa-4bbb-8ccc-{i:012d}")
        t.user(f"Why does {tech} show {symptom} in production?")
        t.say(f"The problem is that {cause} causes {symptom} when traffic spikes.")
        t.user(f"Should we switch to {fix}?")
        t.say(f"We decided to use {fix} for {tech}, because it removes the {symptom}.")
        t.say(f"Fixed: {tech} now runs with {fix}; the {symptom} is gone and the tests pass.")
        (root / f"{t.session_id}.jsonl").write_text(t.text())


def memory(env: dict[str, str]) -> dict[str, Counter[tuple[str, str]]]:
    """Per session, the ideas `cairn ideas` shows, as (intent, content) with their multiplicity."""
    result: dict[str, Counter[tuple[str, str]]] = {}
    for idea in cairn_json("ideas", "--limit", "10000", env=env):
        result.setdefault(idea["session"], Counter())[(idea["intent"], idea["content"])] += 1
    return result


def uninterrupted_reindex(
    home: Path, copy: Path, command: list[str], env: dict[str, str]
) -> dict[str, Counter[tuple[str, str]]]:
    """The memory the re-index makes when nothing stops it, run on a copy of the store at `home`."""
    shutil.copytree(home, copy)
    reference = {**env, "CAIRN_HOME": str(copy)}
    run = subprocess.run(command, capture_output=True, text=True, env=reference, timeout=600)
    assert run.returncode == 0, run.stderr
    return memory(reference)


def generations(env: dict[str, str]) -> dict[str, Counter[bool]]:
    """Per session, how many ideas `cairn ideas` shows of the new generation (True) and the old."""
    shown = cairn_json("ideas", "--limit", "10000", env=env)
    result: dict[str, Counter[bool]] = {}
    for idea in shown:
        result.setdefault(idea["session"], Counter())[idea["content"].startswith(MARK)] += 1
    return result


def searched(env: dict[str, str]) -> dict[str, set[bool]]:
    """Per subject's session, which generations hybrid search (words and vectors) finds ideas of."""
    result: dict[str, set[bool]] = {}
    for tech, *_rest in SUBJECTS:
        found = cairn_json("search", tech, "--kind", "ideas", env=env)["results"]
        for hit in found:
            result.setdefault(hit["session"]["id"], set()).add(hit["content"].startswith(MARK))
    return result


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_a_reindex_stopped_half_way_is_finished_by_a_rerun(
    cairn_home: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    projects = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    distinct_sessions(projects)
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    backfilled = cairn_json("backfill", "--model", "offline", env=env)
    assert backfilled["runs_failed"] == 0 and backfilled["sessions_done"] == backfilled["sessions_total"]
    old_generation = memory(env)
    sessions = set(old_generation)
    assert len(sessions) > KILL_AFTER + 2 and all(old_generation.values())
    assert not any(content.startswith(MARK) for ideas in old_generation.values() for _, content in ideas)
    messages = rows(cairn_home, "SELECT id, file_id, line, content_hash FROM messages ORDER BY id")

    script = tmp_path / "changed_model.py"
    script.write_text(CHANGED_MODEL)
    command = [sys.executable, str(script), "reindex", "--model", "offline", "--json"]
    new_generation = uninterrupted_reindex(cairn_home, tmp_path / "uninterrupted-home", command, env)
    assert set(new_generation) == sessions and all(new_generation.values())
    assert all(content.startswith(MARK) for ideas in new_generation.values() for _, content in ideas)
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "CAIRN_TEST_SLOW": "0.4"},
    )
    deadline = time.monotonic() + 300
    swapped = 0
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(sqlite3.OperationalError):  # the migration may still be creating it
            swapped = rows(cairn_home, "SELECT count(*) FROM reindex_sessions")[0][0]
        if swapped >= KILL_AFTER:
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the re-index ended before it could be killed: {proc.stderr}"
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    if signum == signal.SIGINT:
        # Ctrl-C: the batch in flight ends, the session in progress is dropped, the report says so.
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr and "cairn reindex` again" in stderr
        report = json.loads(stdout)
        assert report["interrupted"] and report["sessions_swapped"] < report["sessions_total"]
    else:
        assert proc.returncode == -signal.SIGKILL

    at_kill = generations(env)
    done = {s for (s,) in rows(cairn_home, "SELECT session_id FROM reindex_sessions")}
    assert KILL_AFTER <= len(done) < len(sessions)
    assert set(at_kill) == sessions  # no session lost its memory
    for session, counts in at_kill.items():
        new, old = counts[True], counts[False]
        assert not (new and old), f"{session} shows both generations: {counts}"
        assert bool(new) == (session in done)
    # Each session shows its whole generation: the swapped ones all the uninterrupted run made of them.
    assert memory(env) == {s: new_generation[s] if s in done else old_generation[s] for s in sessions}
    found = searched(env)
    assert set(found) == sessions
    assert found == {session: {session in done} for session in sessions}
    assert rows(cairn_home, "SELECT id, file_id, line, content_hash FROM messages ORDER BY id") == messages

    rerun = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["sessions_already_done"] == len(done)
    assert report["sessions_swapped"] == len(sessions) - len(done)
    assert report["runs_failed"] == 0 and not report["interrupted"]
    assert {session: set(counts) for session, counts in generations(env).items()} == {
        session: {True} for session in sessions
    }
    assert memory(env) == new_generation  # as if it had never been stopped
    assert rows(cairn_home, "SELECT id, file_id, line, content_hash FROM messages ORDER BY id") == messages
    assert searched(env) == {session: {True} for session in sessions}
    assert rows(cairn_home, "SELECT count(*) FROM reindex_jobs WHERE finished_at IS NULL") == [(0,)]
    assert not (cairn_home / "reindex-scratch").exists()
