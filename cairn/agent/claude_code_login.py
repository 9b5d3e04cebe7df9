"""The user's Claude Code login, lent to the CLI that indexes, which runs in a configuration of cairn's own.

An indexing run's CLI must not write to the user's Claude Code configuration: left to its defaults it
rewrites `~/.claude.json` (machine id, plugin usage) and creates `~/.claude/backups` and
`~/.claude/sessions` on every run. So its `CLAUDE_CONFIG_DIR` is a directory under `CAIRN_HOME`
(`config_dir`). That directory has no login, and the CLI keeps its login in the configuration
directory (`.credentials.json`; on macOS a Keychain entry named after the directory), so cairn hands
the user's login over in the environment instead (`login_env`): the access token of the user's own
credentials, read afresh at every session, as `CLAUDE_CODE_OAUTH_TOKEN`. The user's credentials are
only read, never written: a token is renewed by the user's own Claude Code, whose refresh token
cairn never uses (renewing it here would rotate it out from under the user's login). An expired token
is one line that says so, and indexing waits until Claude Code has been opened again.

A key or token the user already put in the environment (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`,
`CLAUDE_CODE_OAUTH_TOKEN`) wins, as it does for Claude Code itself.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from cairn.config import Settings
from cairn.errors import Failure

CONFIG_DIR = "claude-code"
ENV_LOGINS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
_KEYCHAIN_SERVICE = "Claude Code-credentials"
_KEYCHAIN_TIMEOUT_SECONDS = 10.0


class LoginExpired(Failure):
    """The user's Claude Code login has expired; their own Claude Code renews it when next opened."""

    def __init__(self, expired_at: datetime) -> None:
        self.expired_at = expired_at
        super().__init__(
            f"the Claude Code login expired at {expired_at:%Y-%m-%d %H:%M} UTC: open Claude Code once "
            "(it renews its login), and indexing goes on"
        )


def config_dir(settings: Settings) -> Path:
    """The CLI's configuration directory for indexing runs: cairn's own, under `CAIRN_HOME`."""
    return settings.home / CONFIG_DIR


def user_config_dir(env: Mapping[str, str]) -> Path:
    """The user's Claude Code configuration directory: their `CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


def login_env(env: Mapping[str, str], user_dir: Path, now: float | None = None) -> dict[str, str]:
    """What to add to the CLI's environment `env` so it runs with the user's login (nothing when `env`
    carries one already, or the user has none: the CLI then says it is not logged in).

    Raises `LoginExpired` when the user's access token has expired.
    """
    if any(env.get(name) for name in ENV_LOGINS):
        return {}
    oauth = _credentials(user_dir).get("claudeAiOauth")
    if not isinstance(oauth, dict) or not isinstance(token := oauth.get("accessToken"), str) or not token:
        return {}
    expires = oauth.get("expiresAt")
    if isinstance(expires, int | float) and expires / 1000 <= (time.time() if now is None else now):
        raise LoginExpired(datetime.fromtimestamp(expires / 1000, UTC))
    return {"CLAUDE_CODE_OAUTH_TOKEN": token}


def _credentials(user_dir: Path) -> dict[str, object]:
    """The user's stored credentials: the configuration directory's file, else (macOS) the Keychain."""
    text = _read_file(user_dir / ".credentials.json")
    if text is None and sys.platform == "darwin":
        text = _read_keychain(user_dir)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _read_file(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _read_keychain(user_dir: Path) -> str | None:
    """The Keychain entry Claude Code keeps its login in: its name carries a hash of the configuration
    directory when the user set one (`CLAUDE_CONFIG_DIR`), none for the default `~/.claude`."""
    service = _KEYCHAIN_SERVICE
    if user_dir != Path.home() / ".claude":
        digest = hashlib.sha256(unicodedata.normalize("NFC", str(user_dir)).encode()).hexdigest()
        service = f"{service}-{digest[:8]}"
    try:
        found = subprocess.run(
            ["/usr/bin/security", "find-generic-password", "-s", service, "-w"],
            capture_output=True,
            text=True,
            timeout=_KEYCHAIN_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if found.returncode != 0:
        return None
    return found.stdout.strip() or None
