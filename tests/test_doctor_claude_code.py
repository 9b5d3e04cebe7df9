"""`cairn doctor` on the `claude-code` model: which model indexes and why, whether the user's Claude Code
can index (claude-agent-sdk, the CLI it runs, its version, its login) and what a failure means.

The login is asked of the real CLI that claude-agent-sdk bundles, under a temporary HOME (never the
user's ~/.claude): logged out there, and logged in by `ANTHROPIC_API_KEY=fake` in its environment.
`claude auth status` spends nothing and reaches no server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.claude_code_cli import INSTALL_HINT
from tests.agent.claude_code_helpers import hide_sdk, temp_user_home
from tests.helpers.cli import cairn


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cairn_home: Path) -> Path:
    """A temporary HOME: the CLI reads its login from ~/.claude, which must never be the real one."""
    home = temp_user_home(tmp_path, monkeypatch)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing here may reach a real API
    return home


def doctor(**env: str) -> tuple[int, dict[str, dict[str, Any]]]:
    proc = cairn("doctor", "--json", check=False, env=env)
    return proc.returncode, {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


@pytest.mark.process
def test_a_logged_out_claude_code_says_indexing_pauses_and_how_to_log_in() -> None:
    code, checks = doctor(CAIRN_MODEL="claude-code")
    model, cc = checks["model"], checks["claude-code"]
    assert model["ok"] is True, model
    assert model["detail"] == (
        "claude-code: claude-haiku-4-5 through your Claude Code login, effort low (set by CAIRN_MODEL)"
    )
    assert code == 1 and cc["ok"] is False
    assert re.match(r"Claude Code \d+\.\d+\.\d+ at \S+/_bundled/claude is not logged in: ", cc["detail"]), cc
    assert "indexing pauses until you log in; capture and search go on" in cc["detail"]
    assert "claude auth login" in cc["fix"]


@pytest.mark.process
def test_an_api_key_in_the_environment_is_a_login_billed_to_that_key() -> None:
    _code, checks = doctor(CAIRN_MODEL="claude-code:claude-sonnet-4-5", ANTHROPIC_API_KEY="fake")
    cc = checks["claude-code"]
    assert cc["ok"] is True, cc
    assert cc["detail"].endswith(
        "logged in with an API key: its runs are billed to that key at API prices, not to a Claude plan"
    )
    assert checks["model"]["detail"].startswith("claude-code:claude-sonnet-4-5: claude-sonnet-4-5 through")


@pytest.mark.process
def test_a_configured_cli_that_is_not_there_is_named_with_the_fix() -> None:
    code, checks = doctor(CAIRN_MODEL="claude-code", CAIRN_CLAUDE_CODE_CLI="/nonexistent")
    cc = checks["claude-code"]
    assert code == 1 and cc["ok"] is False
    assert cc["detail"] == (
        "no Claude Code CLI at /nonexistent (the claude_code_cli setting): indexing with claude-code waits "
        "until this is fixed; capture and search go on"
    )
    assert "CAIRN_CLAUDE_CODE_CLI" in cc["fix"] and "unset it" in cc["fix"]


@pytest.mark.process
def test_without_the_sdk_doctor_gives_the_one_line_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command runs in this process, which sees no SDK (`hide_sdk`)."""
    hide_sdk(monkeypatch)
    code, checks = doctor(CAIRN_MODEL="claude-code")
    cc = checks["claude-code"]
    assert code == 1 and cc["ok"] is False and cc["fix"] == INSTALL_HINT
    assert cc["detail"].startswith("claude-agent-sdk is not installed: ")
    table = cairn("doctor", check=False, env={"CAIRN_MODEL": "claude-code", "COLUMNS": "400"}).stdout
    assert f"→ {INSTALL_HINT}" in table  # shown literally: `.[claude-code]` is not rich markup
    _code, offline = doctor(CAIRN_MODEL="offline")
    assert offline["claude-code"]["ok"] is True
    assert offline["claude-code"]["detail"] == (
        "not chosen (indexing runs on offline); choosing it needs the optional claude-agent-sdk"
    )


def _recording_cli(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in `claude` that notes every start in a file and answers as a subscription login."""
    runs = tmp_path / "cli-runs"
    cli = tmp_path / "claude"
    cli.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {runs}\n'
        'if [ "$1" = --version ]; then echo "9.8.7 (Claude Code)"; exit 0; fi\n'
        """echo '{"loggedIn": true, "authMethod": "claude.ai"}'\n"""
    )
    cli.chmod(0o700)
    return cli, runs


@pytest.mark.process
def test_doctor_starts_the_cli_only_when_claude_code_indexes(tmp_path: Path) -> None:
    cli, runs = _recording_cli(tmp_path)
    _code, checks = doctor(CAIRN_MODEL="offline", CAIRN_CLAUDE_CODE_CLI=str(cli))
    detail = checks["claude-code"]["detail"]
    assert detail.startswith("not chosen (indexing runs on offline); claude-agent-sdk is installed")
    assert not runs.exists()
    _code, checks = doctor(CAIRN_MODEL="claude-code", CAIRN_CLAUDE_CODE_CLI=str(cli))
    assert checks["claude-code"] == {
        "name": "claude-code",
        "ok": True,
        "detail": f"Claude Code 9.8.7 at {cli}, logged in with your Claude subscription (claude.ai)",
        "fix": None,
    }
    assert runs.read_text().splitlines() == ["--version", "auth status --json"]


@pytest.mark.process
def test_the_model_source_and_the_daily_budget_in_words(cairn_home: Path) -> None:
    _code, checks = doctor()
    assert checks["model"]["detail"] == "offline (the default without ANTHROPIC_API_KEY; no API key needed)"
    assert checks["budget"]["detail"] == (
        "indexing uses at most 2,000,000 tokens a day (daily_token_budget; 0 = no limit), then waits for "
        "the next day; not used now: the offline model spends no tokens"
    )
    cairn_home.mkdir(mode=0o700)
    (cairn_home / "config.toml").write_text('model = "claude-code"\ndaily_token_budget = 0\n')
    _code, checks = doctor()
    assert checks["model"]["detail"].endswith(f"(set in {cairn_home / 'config.toml'})")
    assert checks["budget"]["detail"] == (
        "no daily limit (daily_token_budget = 0): indexing may use any number of tokens a day"
    )
