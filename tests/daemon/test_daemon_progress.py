"""A long job run by the daemon: its progress streams to the command, and no banner reaches its log.

The daemon's stderr is its log, and a daemon a Claude Code hook starts inherits the coding agent's
environment, in which pydantic-ai prints its first-run banner to stderr when the indexer first runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.daemon.helpers import Daemons, cairn, query
from tests.helpers.progress import assert_no_banner, banner_env, lay_out_small


def test_index_through_the_daemon_streams_progress_and_logs_no_banner(
    daemons: Daemons, cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in banner_env().items():
        monkeypatch.setenv(name, value)
    for name in {*os.environ} - {*banner_env()}:
        monkeypatch.delenv(name)  # PYTEST_VERSION, CI: pydantic-ai stays quiet under them by itself
    root = lay_out_small(Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"]))
    daemons.start()

    proc = cairn("index", str(root), timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "capture: started (2 files)" in lines
    assert any(line.startswith("indexing: done, ") for line in lines), proc.stderr
    assert "elapsed" in proc.stdout and "(the whole command)" in proc.stdout
    assert query(cairn_home, "SELECT count(*) FROM index_runs WHERE outcome = 'ok'")[0][0] > 0, (
        "the daemon's indexer ran, so a banner would have been printed"
    )
    assert_no_banner(proc.stdout + proc.stderr)
    assert_no_banner((cairn_home / "logs" / "daemon.log").read_text())
