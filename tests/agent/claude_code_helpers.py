"""Running cairn's `claude-code` model through the real Claude Code CLI against the fake Messages API.

The CLI is the one claude-agent-sdk bundles (the optional `claude-code` extra). Without it the tests
skip, except under CI=true, where they fail: CI must run them, never skip them unseen. The CLI gets
the fake's URL and key, a home of its own (never the user's ~/.claude) and no non-essential traffic.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from cairn.agent.claude_code_cli import bundled_cli
from cairn.agent.schema import BATCH_OPEN, extract_batch
from tests.agent.fake_anthropic import FakeAnthropic, Reply, idea_per_update

TOOL_PREFIX = "mcp__cairn__"
NO_CLI = "the claude-code tests need the optional extra: `.venv/bin/pip install -e '.[claude-code]'`"


def require_cli() -> Path:
    """The bundled CLI; a skip without it (a failure under CI=true)."""
    cli = bundled_cli()
    if cli is not None:
        return cli
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and no Claude Code CLI: {NO_CLI}")
    pytest.skip(NO_CLI)


def point_cli_at(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic, home: Path, key: str = "fake") -> None:
    """The environment the CLI inherits (`cli_env` copies it): the fake, `key`, an empty home."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    if key:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    else:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": the name may hold spaces, so split after its closing parenthesis.
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def descendants(pid: int | None = None) -> list[int]:
    """Every live process below `pid` (default this one), zombies included."""
    found, todo = [], [os.getpid() if pid is None else pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def cli_processes(root: int | None = None) -> list[int]:
    """The descendants of `root` (default this process; e.g. a daemon's pid) that run the Claude Code
    CLI (live or zombie)."""
    cli = str(bundled_cli())
    pids = []
    for pid in descendants(root):
        try:
            command = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")[0].decode()
            name = (Path("/proc") / str(pid) / "comm").read_text().strip()
        except OSError:
            continue
        if command == cli or name == "claude":  # a zombie keeps its name, not its command line
            pids.append(pid)
    return pids


def batch_prompt(body: dict[str, Any]) -> str | None:
    """The batch text of a Messages API request, if it carries one."""
    for message in body.get("messages", []):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            if block.get("type") == "text" and BATCH_OPEN in block.get("text", ""):
                return str(block["text"])
    return None


def idea_per_session(fake: FakeAnthropic, body: dict[str, Any]) -> Reply:
    """A `final_result` with one idea per session of the request's batch, at its first message."""
    prompt = batch_prompt(body)
    assert prompt is not None, "a request without a batch"
    batch = extract_batch(prompt)
    ideas = idea_per_update(
        batch, lambda u: f"Claude Code indexed session {u.session} from line {u.messages[0].line}"
    )
    return Reply(200, fake.tool_message("final_result", {"ideas": ideas}))


def hide_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process see no claude-agent-sdk, as where the optional extra is not installed: the SDK
    is installed in the test venv, so `find_spec` answers None for it alone (cairn asks nothing else)."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name.partition(".")[0] == "claude_agent_sdk" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def temp_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME for commands that run the CLI or edit ~/.claude (its login lives there): never
    the real one, and the CLI's non-essential traffic off."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    return home


def clis_of(home: Path) -> list[int]:
    """Processes anywhere whose environment has HOME=`home`: CLIs a run left behind."""
    marker = f"HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
