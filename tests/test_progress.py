"""Honest progress (issue 16, part 3): real `cairn` processes over real transcripts.

Each phase of a job — capture, embedding, indexing — shows progress: plain lines on a pipe, a live
display with counts, rate and ETA on a terminal; the summary's elapsed time is the whole command's
wall time; the summary shows figures, never a Python repr; `--json` keeps stdout parseable and the
per-session list; no third-party banner appears in any output.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from rich.console import Console

from cairn.cli.progress import JobProgress, duration
from cairn.config import Settings
from cairn.progress import Phases
from cairn.quiet import QUIET_ENV, quiet_third_party
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.helpers.progress import (
    ALONGSIDE_LINES,
    PHASE_LINES,
    assert_honest_elapsed,
    assert_no_banner,
    banner_env,
    lay_out_small,
    parse_duration,
    run_on_a_terminal,
    strip_escapes,
    summary_elapsed,
)

pytestmark = pytest.mark.process

REPR_MARKS = ("[{", "SessionResult(", "{'session'")


def timed(
    *args: str, env: dict[str, str], timeout: float = 600
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`python -m cairn ARGS` on pipes (not a terminal), and the wall time measured around it."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    wall = time.monotonic() - started
    assert proc.returncode == 0, (
        f"cairn {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )
    return proc, wall


def in_order(text: str, needles: tuple[str, ...]) -> None:
    positions = [text.find(n) for n in needles]
    assert all(p >= 0 for p in positions), f"missing one of {needles} in:\n{text}"
    assert positions == sorted(positions), f"{needles} out of order in:\n{text}"


@pytest.fixture
def projects(cairn_home: Path) -> Path:
    projects = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    lay_out_small(projects)
    return projects


def test_backfill_on_a_pipe_prints_each_phase_and_the_whole_wall_time(
    cairn_home: Path, projects: Path
) -> None:
    proc, wall = timed("backfill", "--model", "offline", env=banner_env())

    lines = proc.stderr.splitlines()
    in_order(proc.stderr, ALONGSIDE_LINES)
    in_order(proc.stderr, ("capture: done", "indexing: started", "indexing: done", "embedding: done"))
    assert "capture: started (2 files)" in lines
    done = {line.split(":")[0]: line for line in lines if ": done, " in line}
    assert re.search(r"2/2 files, \d+ messages in \S+ \(.* files/s, .* messages/s\)", done["capture"])
    assert re.search(r"(\d+)/\1 vectors in ", done["embedding"]), done["embedding"]
    assert re.search(r"\d+/\d+ messages, 2/2 sessions, \d+ ideas", done["indexing"])
    assert len([line for line in lines if line.startswith(("[1/2] ", "[2/2] "))]) == 2
    assert "\x1b[" not in proc.stdout + proc.stderr, "no escape codes on a pipe"

    assert_honest_elapsed(summary_elapsed(proc.stdout), wall)
    for mark in REPR_MARKS:
        assert mark not in proc.stdout, f"a Python repr ({mark!r}) in the summary:\n{proc.stdout}"
    assert re.search(r"sessions\s*│ 2 of 2 done", proc.stdout)
    assert re.search(r"vectors\s*│ [1-9][\d,]* written", proc.stdout)
    assert_no_banner(proc.stdout + proc.stderr)


def test_backfill_json_keeps_stdout_parseable_and_the_session_list(cairn_home: Path, projects: Path) -> None:
    proc, wall = timed("backfill", "--model", "offline", "--json", env=banner_env())

    data = json.loads(proc.stdout)  # progress went to stderr only
    assert [len(s["files"]) for s in data["sessions"]] == [1, 1]
    assert {s["session"] for s in data["sessions"]} == {
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        "sample_main_transcript",
    }
    assert data["messages_indexed"] == sum(s["messages"] for s in data["sessions"]) > 0
    assert data["vectors_written"] > 0 and data["messages_added"] > 0
    assert {"capture_seconds", "embed_seconds", "index_seconds"} <= data.keys()
    assert_honest_elapsed(data["wall_seconds"], wall)
    assert data["job_seconds"] <= data["wall_seconds"]
    in_order(proc.stderr, ALONGSIDE_LINES)
    assert_no_banner(proc.stdout + proc.stderr)


def test_backfill_on_a_terminal_shows_counts_rate_and_eta_per_phase(cairn_home: Path, projects: Path) -> None:
    drawn, wall = run_on_a_terminal(["backfill", "--model", "offline"], banner_env(), columns=200)
    plain = strip_escapes(drawn)
    assert "\x1b[" in drawn, "a terminal gets the live display"

    def last(label: str) -> str:
        frames = [line for line in re.split(r"[\r\n]", plain) if line.startswith(label)]
        assert frames, f"no {label} line drawn:\n{plain}"
        return frames[-1]

    # The last frame of each phase is its ended one: its ETA column says so.
    assert re.search(r"2/2 files, \d+ messages .*files/s, .*messages/s .* done", last("capture"))
    assert re.search(r"(\d+)/\1 vectors .*vectors/s .* done", last("embedding"))
    assert re.search(r"\d+/\d+ messages, 2/2 sessions, .*messages/s .* done", last("indexing"))
    assert any(re.search(r" eta (\?|\S+s)\s*$", line) for line in re.split(r"[\r\n]", plain)), "an ETA drawn"
    assert_honest_elapsed(summary_elapsed(plain), wall)
    assert abs(summary_elapsed(plain) - wall) <= 0.1 * wall + 1.0, "within 10 % of the wall time"
    assert_no_banner(plain)


def test_sync_and_index_on_a_pipe_show_their_phases(cairn_home: Path, projects: Path) -> None:
    files = [str(p) for p in sorted(projects.rglob("*.jsonl"))]
    synced, wall = timed("sync", "--model", "offline", *files, env=banner_env())
    in_order(synced.stderr, (*PHASE_LINES, "indexing: started", "indexing: done"))
    m = re.search(r"in (\S+) \(the whole command\)", synced.stdout)
    assert m, synced.stdout
    assert_honest_elapsed(parse_duration(m[1]), wall)

    indexed, wall = timed("index", "--model", "offline", *files, env=banner_env())
    in_order(indexed.stderr, ("capture: started (2 files)", "capture: done", "indexing: done"))
    assert "Read 0 new message(s)" in indexed.stdout
    assert_honest_elapsed(summary_elapsed(indexed.stdout), wall)
    assert_no_banner(synced.stdout + synced.stderr + indexed.stdout + indexed.stderr)


def test_the_environment_would_show_the_banner_without_cairn_switch(tmp_path: Path) -> None:
    """Control: in `banner_env` an agent run outside site-packages does print pydantic-ai's banner,
    so its absence from cairn's output is cairn's doing."""
    script = tmp_path / "run_agent.py"
    script.write_text(
        "from pydantic_ai import Agent\n"
        "from pydantic_ai.models.test import TestModel\n"
        "Agent(TestModel()).run_sync('hi')\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=banner_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "observability: off" in proc.stderr


def test_mcp_server_start_prints_no_banner(cairn_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", "mcp"],
        input="",
        capture_output=True,
        text=True,
        env=banner_env(CAIRN_MODEL="offline"),
        timeout=120,
    )
    assert_no_banner(proc.stdout + proc.stderr)
    assert "Traceback" not in proc.stderr


def test_quiet_sets_the_switch_but_keeps_the_user_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.cli import app

    for name in QUIET_ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit):
        app(["--version"])  # the entry point of every cairn process: commands, daemon, MCP server
    assert all(os.environ.get(name) == value for name, value in QUIET_ENV.items())
    monkeypatch.setenv("PYDANTIC_AI_NO_BANNER", "yes please")
    quiet_third_party()
    assert os.environ["PYDANTIC_AI_NO_BANNER"] == "yes please"


def test_plain_lines_give_counts_rate_and_eta() -> None:
    out, now = io.StringIO(), [100.0]
    progress = JobProgress(Console(file=out, width=200), live=False, interval=5.0, clock=lambda: now[0])
    with progress:
        progress({"step": "phase", "phase": "capture", "total": 4, "unit": "files"})
        now[0] += 2.0
        progress({"step": "advance", "phase": "capture", "advance": 1, "counts": {"messages": 40}})
        now[0] += 4.0  # 6 s since the start line: past the interval, a status line
        progress({"step": "advance", "phase": "capture", "advance": 1, "counts": {"messages": 20}})
        now[0] += 1.0  # within the interval: no line
        progress({"step": "advance", "phase": "capture", "advance": 1, "counts": {"messages": 10}})
        progress({"step": "end", "phase": "capture"})
        progress({"step": "reindex", "completed": 3})  # an older daemon's event: ignored
    assert out.getvalue().splitlines() == [
        "capture: started (4 files)",
        "capture: 2/4 files, 60 messages; 0.3 files/s, 10 messages/s; 6.0s elapsed, about 6.0s left",
        "capture: done, 3/4 files, 70 messages in 7.0s (0.4 files/s, 10 messages/s)",
    ]
    assert [duration(s) for s in (4.24, 185, 3725)] == ["4.2s", "3m05s", "1h02m"]


def _a_long_job(progress: JobProgress, now: list[float]) -> None:
    """Events of a big backfill, 4m07s in: capture done after 3m05s, embedding a third of the way,
    indexing 3,000 of 12,345 messages after 62 s (so 3m13s left at that rate)."""
    progress({"step": "phase", "phase": "capture", "total": 1234, "unit": "files"})
    progress({"step": "phase", "phase": "embed", "total": None, "unit": "vectors"})
    now[0] += 185
    progress({"step": "advance", "phase": "capture", "advance": 1234, "counts": {"messages": 123_456}})
    progress({"step": "end", "phase": "capture"})
    progress({"step": "update", "phase": "embed", "completed": 30_000, "total": 90_000})
    progress({"step": "phase", "phase": "index", "total": 12_345, "unit": "messages"})
    now[0] += 62
    progress({"step": "advance", "phase": "index", "advance": 3000, "counts": {"ideas": 456, "tokens": 9}})


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_live_display_shows_phase_elapsed_and_eta_whole_at_any_width(width: int) -> None:
    """Below ~200 columns rich cut the time columns to `0:0…` and the phases to `captu…`: the display
    now leaves out what matters least (rates, side counts, bar length) and never cuts those three."""
    out, now = io.StringIO(), [1000.0]
    console = Console(file=out, width=width, force_terminal=True, color_system=None)
    progress = JobProgress(console, live=True, clock=lambda: now[0])
    _a_long_job(progress, now)
    now[0] += 1.0  # a second later, no event: elapsed and ETA still move, drawn at render time
    console.print(progress.renderable())

    lines = [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
    assert len(lines) == 3, lines
    assert all(len(line) <= width for line in lines), lines
    assert "…" not in out.getvalue()
    capture, embedding, indexing = lines
    assert capture.startswith("capture ") and re.search(r" 3m05s done$", capture), capture
    assert embedding.startswith("embedding ") and re.search(r" 4m08s eta 8m16s$", embedding), embedding
    assert indexing.startswith("indexing ") and re.search(r" 1m03s eta 3m16s$", indexing), indexing
    assert "1,234/1,234 files, 123,456 messages" in capture and "3,000/12,345 messages" in indexing
    # What gives way when narrow: the rates first, then the counts other than the telling one.
    assert ("messages/s" in indexing) == (width >= 112)
    assert ("456 ideas" in indexing) == (width >= 150)


def test_a_session_line_fits_the_console_and_shows_tokens_only_when_billed() -> None:
    out = io.StringIO()
    progress = JobProgress(Console(file=out, width=80), live=False, clock=lambda: 5.0)
    event = {
        "step": "session",
        "session": "1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        "project": "-home-someone-src-github-com-an-organisation-a-repository-with-a-long-name",
        "of": 340,
        "messages": 1234,
        "ideas": 1,
        "input_tokens": 249_166,
        "output_tokens": 1000,
        "elapsed": 185.0,
    }
    with progress:
        progress({"step": "phase", "phase": "index", "total": 99_000, "unit": "messages"})
        progress({**event, "billed": False})
        progress(event)  # an older daemon's event: its tokens are shown, as they were
    _started, offline, paid = out.getvalue().splitlines()
    assert offline.startswith("[1/340] 1af7fc5e: 1,234 messages, 1 idea, at 3m05s (-home-someone")
    assert "token" not in offline and offline.endswith("…)") and len(offline) <= 80
    assert paid.startswith("[2/340] 1af7fc5e: 1,234 messages, 1 idea, 250,166 tokens, at 3m05s")
    assert len(paid) <= 80


def test_only_models_paid_per_token_are_billed() -> None:
    from cairn.pricing import billed

    assert not billed("offline") and not billed("ollama:llama3.2")
    assert not billed("openai-chat:qwen", "http://127.0.0.1:8080/v1")
    assert billed("anthropic:claude-haiku-4-5") and billed("openai-chat:gpt-5", "https://api.example.com/v1")


def test_the_summary_shows_what_the_memory_gained_and_no_bookkeeping() -> None:
    """It printed a second, 26-row table of the indexer's bookkeeping (`stopped │ None`, tool calls,
    requests) and an offline model's token counts, which read like spend."""
    from cairn.agent.indexer import IndexReport
    from cairn.cli.summaries import backfill_summary
    from cairn.daemon.jobs import index_json

    data = {
        **index_json(IndexReport()),
        "sessions_total": 2,
        "sessions_done": 2,
        "messages_added": 48,
        "messages_indexed": 40,
        "vectors_written": 30,
        "input_tokens": 249_166,
        "output_tokens": 1_000,
        "wall_seconds": 12.0,
    }
    data["applied"].update(
        ideas_by_intent={"decision": 2, "problem": 1}, spans_opened=3, questions_answered=1
    )

    def shown(billed: bool) -> str:
        out = io.StringIO()
        Console(file=out, width=80).print(backfill_summary(data, billed))
        return out.getvalue()

    offline = shown(billed=False)
    assert re.search(r"ideas\s*│ 3 \(decision 2, problem 1\)", offline) and "3 new, 0 updated" in offline
    assert "1 question answered" in offline and re.search(r"runs\s*│ 0 ok, 0 failed", offline)
    assert not re.search(r"None|stopped|tool calls|requests|tokens|249,166", offline), offline
    assert re.search(r"tokens\s*│ 249,166 in, 1,000 out", shown(billed=True))


@pytest.fixture
async def all_vectors_store(
    cairn_home: Path, embedding_function: EmbeddingFunction[Documents]
) -> AsyncIterator[Store]:
    """A store that embeds tool output too (`message_vectors = all`), so one real transcript fills more
    than one outbox batch."""
    settings = Settings.load(cairn_home, message_vectors="all")
    opened = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    yield opened
    await opened.close()


async def test_embedding_stops_between_batches_and_keeps_the_rest_queued(
    all_vectors_store: Store, tmp_path: Path
) -> None:
    """Ctrl-C while a large history is being embedded stops after the batch in flight, not minutes later."""
    from cairn.daemon.jobs import capture_phase, embed_phase
    from cairn.store import outbox

    store = all_vectors_store
    transcript = tmp_path / "fe5e1c67-5e0c-4d5a-9e8f-000000000001.jsonl"
    shutil.copy2(
        REAL_TRANSCRIPTS / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", transcript
    )
    events: list[dict[str, Any]] = []
    phases = Phases(events.append)
    await capture_phase(store, [transcript], store.settings, phases)
    queued = await outbox.pending(store.db)
    assert queued > 256, "more than one outbox batch"

    def after_first_batch() -> bool:
        return any(e["step"] == "update" and e["completed"] > 0 for e in events)

    written = await embed_phase(store, phases, should_stop=after_first_batch)
    assert written == 256 and await outbox.pending(store.db) == queued - 256
    assert events[-1] == {"step": "end", "phase": "embed"}
    assert await embed_phase(store, Phases()) == queued - 256
    assert await outbox.pending(store.db) == 0
