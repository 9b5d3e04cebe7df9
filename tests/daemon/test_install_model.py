"""`cairn install` and the model: indexing with the user's Claude Code is opt-in, never by surprise.

Nothing spends the user's plan until they choose it. Without a terminal nothing is asked and nothing
changes; `--model NAME` sets the model without asking; on a terminal, with no model configured and
Claude Code there (claude-agent-sdk is installed in this venv), install asks once and keeps the answer.
The question is put on a real pseudo-terminal to a real `python -m cairn install`, as a user sees it.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.daemon import install as installer
from tests.agent.claude_code_helpers import hide_sdk, temp_user_home
from tests.helpers.cli import cairn

QUESTION = (
    "Index with your Claude Code login? It uses your plan's tokens, at most 2,000,000 tokens per day "
    "(daily_token_budget) [y/N]:"
)


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cairn_home: Path) -> Path:
    """A temporary HOME: install edits ~/.claude, and the CLI's login lives there; never the real one."""
    home = temp_user_home(tmp_path, monkeypatch)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return home


def on_a_terminal(*args: str, answer: str | None, deadline: float = 180) -> tuple[int, str]:
    """`cairn ARGS` in a real process whose stdin, stdout and stderr are a pseudo-terminal; `answer` is
    typed once the question shows (never, if it does not). The exit status and everything shown."""
    master, slave = os.openpty()
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}  # one line per line said, no colours
    proc = subprocess.Popen(
        [sys.executable, "-m", "cairn", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    shown, typed = b"", False
    end = time.monotonic() + deadline
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and not typed and b"[y/N]" in shown:
                os.write(master, answer.encode())
                typed = True
        code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, " ".join(shown.decode(errors="replace").replace("\r", "").split())


def config_text(cairn_home: Path) -> str | None:
    path = cairn_home / "config.toml"
    return path.read_text() if path.exists() else None


def indexing(*args: str) -> dict[str, Any]:
    return json.loads(cairn("install", *args, "--json").stdout)["indexing"]


def test_without_a_terminal_nothing_is_asked_and_nothing_changes(cairn_home: Path) -> None:
    assert indexing() == {
        "model": "offline",
        "source": "the default without ANTHROPIC_API_KEY",
        "changed": False,
        "asked": False,
        "answer": None,
    }
    assert config_text(cairn_home) is None and not (cairn_home / installer.ANSWERS_FILE).exists()
    said = " ".join(cairn("install").stdout.split())
    assert "indexing: offline (the default without ANTHROPIC_API_KEY)" in said
    assert (
        "to index with your Claude Code login (your plan's tokens): `cairn install --model claude-code`"
        in said
    )
    assert config_text(cairn_home) is None


def test_the_model_flag_sets_it_keeping_the_rest_of_the_config(cairn_home: Path) -> None:
    cairn_home.mkdir(mode=0o700)
    original = (
        '# my settings\nrecall_prompt_lines = 2\n\n[prices."claude-haiku-4-5"]\ninput = 1.0\noutput = 5.0\n'
    )
    (cairn_home / "config.toml").write_text(original)
    first = indexing("--model", "claude-code")
    assert first["model"] == "claude-code" and first["changed"] is True and first["asked"] is False
    assert first["source"] == f"set in {cairn_home / 'config.toml'}"
    assert config_text(cairn_home) == original.replace("\n\n[prices", '\n\nmodel = "claude-code"\n[prices')
    assert (cairn_home / "config.toml").stat().st_mode & 0o777 == 0o600
    assert indexing("--model", "claude-code")["changed"] is False
    assert indexing("--model", "offline")["model"] == "offline"
    assert config_text(cairn_home) == original.replace("\n\n[prices", '\n\nmodel = "offline"\n[prices')
    cairn("install", "--uninstall")
    assert 'model = "offline"' in (config_text(cairn_home) or "")  # uninstall leaves the choice


def test_an_unknown_model_or_one_with_uninstall_is_refused_before_any_change(
    cairn_home: Path, user_home: Path
) -> None:
    proc = cairn("install", "--model", "gpt-nonsense", check=False)
    assert proc.returncode == 2 and "unknown model 'gpt-nonsense'" in proc.stderr
    assert config_text(cairn_home) is None and not (user_home / ".claude").exists()
    proc = cairn("install", "--uninstall", "--model", "claude-code", check=False)
    assert proc.returncode == 2 and "--model" in proc.stderr


def test_on_a_terminal_yes_chooses_claude_code_once(cairn_home: Path) -> None:
    code, shown = on_a_terminal("install", answer="y\n")
    assert code == 0, shown
    assert QUESTION in shown
    assert shown.index("installed cairn's hooks") < shown.index(QUESTION)  # asked once the install is done
    assert config_text(cairn_home) == 'model = "claude-code"\n'
    assert f"indexing: claude-code (set in {cairn_home / 'config.toml'})" in shown
    assert "Claude Code indexes at most 2,000,000 tokens per day, then waits for the next day" in shown
    assert "is not logged in: indexing pauses until you log in" in shown
    assert "Run `claude` once and log in" in shown
    answers = json.loads((cairn_home / installer.ANSWERS_FILE).read_text())
    assert answers["claude_code"]["answer"] == "yes"
    code, again = on_a_terminal("install", answer="n\n")
    assert code == 0 and "[y/N]" not in again and config_text(cairn_home) == 'model = "claude-code"\n'


def test_on_a_terminal_no_changes_nothing_and_is_not_asked_again(cairn_home: Path) -> None:
    code, shown = on_a_terminal("install", answer="n\n")
    assert code == 0 and QUESTION in shown
    assert config_text(cairn_home) is None
    assert "indexing: offline (the default without ANTHROPIC_API_KEY)" in shown
    assert "not asked again; `cairn install --model claude-code` chooses it later" in shown
    assert json.loads((cairn_home / installer.ANSWERS_FILE).read_text())["claude_code"]["answer"] == "no"
    code, again = on_a_terminal("install", answer="y\n")
    assert code == 0 and "[y/N]" not in again and config_text(cairn_home) is None


@pytest.mark.parametrize("how", [("--no-ask",), ("--yes",), ("--model", "offline")])
def test_on_a_terminal_the_flags_ask_nothing(cairn_home: Path, how: tuple[str, ...]) -> None:
    code, shown = on_a_terminal("install", *how, answer="y\n")
    assert code == 0 and "[y/N]" not in shown, shown
    assert config_text(cairn_home) == ('model = "offline"\n' if "--model" in how else None)


def test_a_configured_model_or_no_claude_code_means_no_question(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert installer.should_ask_about_claude_code(Settings.load(cairn_home))
    monkeypatch.setattr(installer, "claude_code_available", lambda: False)
    assert not installer.should_ask_about_claude_code(Settings.load(cairn_home))
    monkeypatch.undo()
    monkeypatch.setenv("CAIRN_MODEL", "offline")
    assert not installer.should_ask_about_claude_code(Settings.load(cairn_home))
    code, shown = on_a_terminal("install", answer="y\n")
    assert code == 0 and "[y/N]" not in shown and "indexing: offline (set by CAIRN_MODEL)" in shown


def test_choosing_claude_code_without_the_sdk_says_how_to_install_it(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.agent.claude_code_cli import INSTALL_HINT

    hide_sdk(monkeypatch)
    shown = " ".join(cairn("install", "--model", "claude-code", env={"COLUMNS": "400"}).stdout.split())
    assert INSTALL_HINT in shown and config_text(cairn_home) == 'model = "claude-code"\n'
