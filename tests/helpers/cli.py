"""`cairn ARGS` run as a user runs it, in the test's environment: in this process or as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.helpers import inprocess


def cairn(
    *args: str,
    check: bool = True,
    timeout: float = 240,
    env: dict[str, str] | None = None,
    real_process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`cairn ARGS` in the test's environment (its CAIRN_HOME), never with a real key: in this process
    (`tests.helpers.inprocess`), or as `python -m cairn` with `real_process` where the process itself is
    tested."""
    env = {**{k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}, **(env or {})}
    if real_process:
        proc = subprocess.run(
            [sys.executable, "-m", "cairn", *args], capture_output=True, text=True, env=env, timeout=timeout
        )
    else:
        proc = inprocess.run(args, env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"cairn {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def cairn_json(
    *args: str, env: dict[str, str] | None = None, timeout: float = 240, real_process: bool = False
) -> Any:
    return json.loads(cairn(*args, "--json", env=env, timeout=timeout, real_process=real_process).stdout)
