"""Running small Python snippets in real child processes, for tests of cross-process behaviour."""

from __future__ import annotations

import selectors
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def spawn(snippet: str, *args: str) -> subprocess.Popen[str]:
    """Start `python -c snippet args...` with cairn importable; stdout is a text pipe."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(snippet), *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The child's next stdout line; fails (instead of hanging) if none comes in `timeout` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            proc.kill()
            raise AssertionError(f"child printed nothing in {timeout}s; stderr: {proc.communicate()[1]}")
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"child exited ({proc.wait()}) early; stderr: {proc.communicate()[1]}")
    return line.strip()


def run(snippet: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(snippet), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate()
