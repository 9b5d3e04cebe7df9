"""Shared by the progress tests: a small real history, an environment where pydantic-ai would show its
banner, and the summary's elapsed time read back from what a person sees."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.helpers.paths import REAL_TRANSCRIPTS

# Two short real sessions (19 and 29 messages): every phase runs, in seconds, on a busy 2-core machine.
SMALL = [
    REAL_TRANSCRIPTS / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl",
]

# What pydantic-ai's first-run banner says (pydantic_ai/_display.py).
BANNER_MARKERS = ("observability: off", "Pydantic Logfire", "PYDANTIC_AI_NO_BANNER", "pydantic-ai v")

PHASE_LINES = ("capture: started", "capture: done", "embedding: started", "embedding: done")

# `backfill` and `index` embed alongside capture and indexing (`Settings.embed_alongside`): embedding
# starts while capture runs and ends last.
ALONGSIDE_LINES = ("capture: started", "embedding: started", "indexing: started", "embedding: done")


def lay_out_small(projects: Path) -> Path:
    """The small sessions in Claude Code's layout, `<project>/<session>.jsonl`."""
    root = projects / "-home-dev-demo"
    root.mkdir(parents=True)
    for path in SMALL:
        shutil.copy2(path, root / path.name)
    return root


def banner_env(**extra: str) -> dict[str, str]:
    """The test's environment as a coding agent would run cairn in: pydantic-ai shows its banner there.

    pytest sets PYTEST_VERSION, which pydantic-ai takes as "no banner", and CI does the same; both are
    removed, and AI_AGENT=1 says a coding agent reads stderr (as Claude Code's CLAUDECODE would), so
    only cairn's own switch can keep the banner out.
    """
    drop = {"PYTEST_VERSION", "CI", "PYDANTIC_AI_NO_BANNER", "ANTHROPIC_API_KEY"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "AI_AGENT": "1", **extra}


def assert_no_banner(text: str) -> None:
    for marker in BANNER_MARKERS:
        assert marker not in text, f"third-party banner text {marker!r} in:\n{text}"


def parse_duration(text: str) -> float:
    """`13.1s`, `3m05s`, `1h02m` (cairn.cli.progress.duration) back to seconds."""
    if m := re.fullmatch(r"(\d+(?:\.\d+)?)s", text):
        return float(m[1])
    if m := re.fullmatch(r"(\d+)m(\d+)s", text):
        return int(m[1]) * 60 + int(m[2])
    if m := re.fullmatch(r"(\d+)h(\d+)m", text):
        return int(m[1]) * 3600 + int(m[2]) * 60
    raise AssertionError(f"not a duration: {text!r}")


def summary_elapsed(stdout: str) -> float:
    """The `elapsed` row of a summary table, in seconds."""
    m = re.search(r"elapsed\s*│\s*(\S+) \(the whole command\)", stdout)
    assert m, f"no elapsed row in:\n{stdout}"
    return parse_duration(m[1])


def assert_honest_elapsed(reported: float, wall: float) -> None:
    """The reported time is the whole command's: at most the wall time the test measured around the
    process (plus rounding), and short of it only by the process's exit and start-up (a small margin)."""
    margin = 2.0 + 0.05 * wall
    assert wall - margin <= reported <= wall + 0.1, f"reported {reported}s for a {wall:.2f}s run"


def run_on_a_terminal(
    args: list[str], env: dict[str, str], *, columns: int, timeout: float = 600
) -> tuple[str, float]:
    """`python -m cairn ARGS` with stdout and stderr on a pseudo-terminal `columns` wide (its window size
    and COLUMNS both say so): (what it drew, wall time)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cairn", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**env, "COLUMNS": str(columns), "TERM": "xterm-256color"},
    )
    os.close(follower)
    out = bytearray()
    deadline = started + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: every writer exited
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    code = proc.wait(timeout=60)
    wall = time.monotonic() - started
    os.close(leader)
    text = out.decode("utf-8", "replace")
    assert code == 0, text
    return text, wall


def strip_escapes(drawn: str) -> str:
    """What a terminal shows of `drawn`, less colours and cursor moves (CSI sequences)."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn)
