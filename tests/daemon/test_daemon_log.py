"""The daemon's log holds only its own formatted records, also for what a library logs.

The daemon's stderr is the log file (`cairn daemon start` points it there), so a library's record that
no handler takes would land there bare through logging's last resort, without time or source: as
claude-agent-sdk's "Fatal error in message reader" did for a Claude Code CLI killed mid-run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

# What a library does when it fails, in a process set up as the daemon is (its stderr the log file).
SCRIPT = """
import logging, sys
from cairn.config import Settings
from cairn.daemon.logs import log_path, setup_logging

settings = Settings.load(sys.argv[1])
setup_logging(settings)
sys.stderr = open(log_path(settings), "a")
reader = logging.getLogger("claude_agent_sdk._internal.query")
reader.error("Fatal error in message reader: Command failed with exit code -9")
reader.info("a detail below warnings")
"""
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \d+ ERROR claude_agent_sdk\._internal\.query: ")


def test_a_library_error_reaches_the_daemon_log_formatted_once(cairn_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cairn_home)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = (cairn_home / "logs" / "daemon.log").read_text().splitlines()
    assert len(lines) == 1, lines
    assert RECORD.match(lines[0]) and lines[0].endswith("Command failed with exit code -9"), lines
