"""Finding the Claude Code CLI that `CAIRN_MODEL=claude-code` runs, and asking it whether it can index.

`claude-code` reaches Claude through the user's own Claude Code login rather than an API key, via the
optional `claude-agent-sdk` (whose wheel bundles the CLI). Everything here is cheap and spends nothing:
whether the SDK is installed, which CLI would run (`claude_code_cli`, else the SDK's bundled one, else
`claude` on PATH), its version, and `claude auth status --json` — so `cairn doctor` and the model
resolver can say in one line what is missing before an indexing run would fail on it.

`cli_env` is the environment every indexing run gives the CLI: non-essential traffic (telemetry,
update checks, error reports) off, since an indexer should talk to the model API and nothing else.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cairn.agent.model_names import CLAUDE_CODE
from cairn.config import Settings

__all__ = ["CLAUDE_CODE", "INSTALL_HINT", "CliProbe", "cli_env", "find_cli", "probe_cli", "sdk_installed"]
INSTALL_HINT = (
    "model 'claude-code' needs the optional claude-agent-sdk: run "
    "`.venv/bin/pip install -e '.[claude-code]'` in cairn's checkout "
    "(or `pip install 'cairn-memory[claude-code]'`), or set CAIRN_MODEL=offline"
)
LOGIN_HINT = "run `claude` once and log in (or `claude auth login`); cairn indexes with that login"
# The CLI starts a Node runtime: a few seconds on a loaded laptop, far more means it hangs.
PROBE_TIMEOUT_SECONDS = 30.0
# Off for indexing runs: telemetry, auto-update, error reporting and other traffic besides the model API.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def sdk_installed() -> bool:
    """Whether `claude-agent-sdk` can be imported (without importing it: it is large)."""
    return importlib.util.find_spec("claude_agent_sdk") is not None


def bundled_cli() -> Path | None:
    """The CLI inside the installed `claude-agent-sdk` wheel, if there is one."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    name = "claude.exe" if os.name == "nt" else "claude"
    path = Path(spec.origin).parent / "_bundled" / name
    return path if path.is_file() else None


def find_cli(settings: Settings) -> Path | None:
    """The CLI an indexing run would start: the configured one, else the bundled one, else PATH's."""
    if settings.claude_code_cli is not None:
        path = settings.claude_code_cli.expanduser()
        return path if path.is_file() else None
    if (bundled := bundled_cli()) is not None:
        return bundled
    found = shutil.which("claude")
    return Path(found) if found else None


def cli_env(settings: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an indexing run's CLI: the user's (for the login and any proxy), traffic quiet.

    The CLI's own retries are bounded by `model_retries`, so a rate limit ends the run within a minute
    or two and the daemon pauses, rather than the CLI retrying for long inside one run.
    """
    env = dict(os.environ if base is None else base)
    env.update(QUIET_ENV)
    env["CLAUDE_CODE_MAX_RETRIES"] = str(max(0, settings.model_retries - 1))
    return env


@dataclass(frozen=True)
class CliProbe:
    """What the CLI said about itself: its version, whether it is logged in, and how."""

    cli: Path
    version: str | None
    logged_in: bool
    auth_method: str | None
    error: str | None = None


def _run(cli: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cli), *args], capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS, env=env, check=False
    )


def probe_cli(cli: Path, env: dict[str, str] | None = None) -> CliProbe:
    """Ask `cli` for its version and `auth status --json`; never raises, never spends tokens."""
    env = dict(os.environ if env is None else env)
    env.update(QUIET_ENV)
    try:
        version_run = _run(cli, ["--version"], env)
        version = version_run.stdout.strip().split(" ")[0] or None if version_run.returncode == 0 else None
        status_run = _run(cli, ["auth", "status", "--json"], env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CliProbe(cli, None, False, None, f"cannot run {cli}: {exc}")
    try:
        status = json.loads(status_run.stdout)
    except json.JSONDecodeError:
        detail = (status_run.stderr or status_run.stdout).strip().splitlines()
        reason = detail[-1] if detail else f"exit status {status_run.returncode}"
        return CliProbe(cli, version, False, None, f"`claude auth status` failed: {reason}")
    if not isinstance(status, dict):
        return CliProbe(cli, version, False, None, "`claude auth status` answered something unexpected")
    method = status.get("authMethod")
    return CliProbe(cli, version, bool(status.get("loggedIn")), method if isinstance(method, str) else None)
