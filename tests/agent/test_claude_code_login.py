"""The CLI that indexes runs in cairn's own Claude Code configuration, with the user's login lent to it.

Left to its defaults, every indexing run's CLI rewrote the user's `~/.claude.json` and created
`~/.claude/backups` and `~/.claude/sessions`. The real bundled CLI runs against the fake Messages API
with a temporary HOME standing for the user's: after a run, nothing there has changed; the run used
the access token of the user's stored login, which is read and never written; an expired one is one
line that says what to do, and nothing is sent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests

from cairn.agent.claude_code_login import config_dir
from cairn.agent.claude_code_tools import TOOL_PREFIX
from cairn.agent.indexer import OK, index_pending
from cairn.config import Settings
from cairn.store.store import Store
from tests.agent.claude_code_helpers import descendants, point_cli_at, require_cli
from tests.agent.fake_anthropic import FakeAnthropic
from tests.helpers.indexer import idea, only_batch, result, store

__all__ = ["store"]  # the indexer tests' store: one small transcript, captured, not indexed


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    require_cli()
    with FakeAnthropic(tool_prefix=TOOL_PREFIX) as server, override_allow_model_requests(True):
        yield server
    assert descendants() == []


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root`, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def login(home: Path, token: str, expires_in_seconds: float) -> Path:
    """The user's stored Claude Code login (as `claude` writes it on Linux)."""
    path = home / ".claude" / ".credentials.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    oauth = {
        "accessToken": token,
        "refreshToken": "sk-ant-ort01-never-used",
        "expiresAt": int((time.time() + expires_in_seconds) * 1000),
        "scopes": ["user:inference"],
    }
    path.write_text(json.dumps({"claudeAiOauth": oauth}))
    return path


async def test_an_indexing_run_leaves_the_users_claude_configuration_as_it_was(
    store: Store, settings: Settings, fake: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user-home"
    point_cli_at(monkeypatch, fake, home)
    (home / ".claude.json").write_text('{"numStartups": 7, "mcpServers": {}}\n')
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    before = snapshot(home)
    planned = await only_batch(store)
    fake.final(result(planned, ideas=[idea(2, "acme keeps SQLite in WAL mode")]))

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    assert [run.outcome for run in report.runs] == [OK], report.runs[0].error
    assert snapshot(home) == before  # no ~/.claude.json rewrite, no ~/.claude/backups or sessions
    assert (config_dir(settings) / ".claude.json").is_file()  # the CLI's own state went to cairn's


async def test_the_users_login_is_lent_to_the_run_and_never_written(
    store: Store, settings: Settings, fake: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user-home"
    point_cli_at(monkeypatch, fake, home, key="")
    credentials = login(home, "sk-ant-oat01-lent-token", expires_in_seconds=3600)
    stored = credentials.read_bytes()
    planned = await only_batch(store)
    fake.final(result(planned, ideas=[idea(2, "acme keeps SQLite in WAL mode")]))

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    assert [run.outcome for run in report.runs] == [OK], report.runs[0].error
    assert [h.get("authorization") for h in fake.headers] == ["Bearer sk-ant-oat01-lent-token"]
    assert credentials.read_bytes() == stored
    assert not (config_dir(settings) / ".credentials.json").exists()


async def test_an_expired_login_is_one_line_and_sends_nothing(
    store: Store, settings: Settings, fake: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user-home"
    point_cli_at(monkeypatch, fake, home, key="")
    login(home, "sk-ant-oat01-old-token", expires_in_seconds=-60)

    report = await index_pending(store, settings, model="claude-code", mode="continuous")

    [run] = report.runs
    assert run.systemic and run.reason is not None
    assert "login expired" in run.reason and "open Claude Code once" in run.reason
    assert "\n" not in run.reason
    assert fake.requests == []
