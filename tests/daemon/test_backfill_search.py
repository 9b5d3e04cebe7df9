"""A backfill the daemon runs: searches answer while it works, semantically as its vectors are built.

Issue 16, part 2 ("searchable early"). Without a daemon a backfill owns the store and a search answers
by keyword only (`tests/test_busy_store.py`); with the daemon up, the backfill is one of its jobs and
a search is another request on the same store, so it sees every vector written so far.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.daemon.helpers import Daemons, cairn
from tests.helpers.hostile_disks import CAIRN
from tests.helpers.paths import REAL_TRANSCRIPTS


def test_semantic_results_arrive_while_the_daemon_backfills(daemons: Daemons) -> None:
    projects = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    # Two projects, so the vectors take more than one outbox batch (256) and arrive in steps.
    for name in ("claude-code-viewer", "chiphuyen-sniffly"):
        shutil.copytree(REAL_TRANSCRIPTS / name, projects / f"-home-dev-{name}")
    daemons.start()
    backfill = subprocess.Popen(
        [*CAIRN, "backfill", "--model", "offline", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        page = _first_semantic_page_while(backfill, "React component that renders the conversation")
        assert page is not None, "the backfill ended before a semantic search during it found anything"
        assert not any("keyword only" in notice for notice in page["notices"]), page["notices"]
        assert backfill.wait(timeout=900) == 0
    finally:
        backfill.kill()
        backfill.wait(timeout=60)


def _first_semantic_page_while(job: subprocess.Popen[bytes], query: str) -> dict[str, Any] | None:
    """The first semantic page with results taken while `job` runs, None if it ended first."""
    while job.poll() is None:
        proc = cairn("search", query, "--mode", "semantic", "--min-score", "0", "--json", timeout=120)
        if proc.returncode == 0:
            page: dict[str, Any] = json.loads(proc.stdout)
            if page["results"] and job.poll() is None:
                return page
    return None
