"""`cairn install`: a surgical, idempotent, backed-up edit of Claude Code's settings JSON."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cairn.cli import app
from cairn.config import DEFAULT_HOME, Settings
from cairn.daemon.install import (
    HOOK_EVENTS,
    SettingsFileError,
    hook_command,
    install,
    is_cairn_command,
    uninstall,
)

USER_SETTINGS = {
    "model": "opus",
    "env": {"FOO": "bär"},
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
    "hooks": {
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
        "SessionStart": [],
    },
}


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.cairn-backup-*"))


def _cairn_events(path: Path) -> dict[str, int]:
    hooks = json.loads(path.read_text()).get("hooks", {})
    return {
        event: sum(is_cairn_command(h.get("command")) for g in groups for h in g.get("hooks", []))
        for event, groups in hooks.items()
    }


def test_round_trip_keeps_everything_else_and_is_idempotent(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "settings.json"
    original = json.dumps(USER_SETTINGS, indent=4, ensure_ascii=False).encode()
    path.write_bytes(original)
    path.chmod(0o600)
    command, _ = hook_command(settings)

    first = install(path, command)
    assert first.action == "installed" and first.events == list(HOOK_EVENTS)
    [backup] = _backups(path)
    assert backup.read_bytes() == original
    assert path.stat().st_mode & 0o777 == 0o600
    data = json.loads(path.read_text())
    assert {k: v for k, v in data.items() if k != "hooks"} == {
        k: v for k, v in USER_SETTINGS.items() if k != "hooks"
    }
    assert data["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert _cairn_events(path) == {**dict.fromkeys(HOOK_EVENTS, 1), "PreToolUse": 0, "SessionStart": 0}

    installed = path.read_bytes()
    again = install(path, command)
    assert again.action == "unchanged" and again.backup is None
    assert path.read_bytes() == installed and len(_backups(path)) == 1

    removed = uninstall(path)
    assert removed.action == "uninstalled" and sorted(removed.events) == sorted(HOOK_EVENTS)
    assert json.loads(path.read_text()) == USER_SETTINGS
    assert len(_backups(path)) == 2
    assert uninstall(path).action == "unchanged"


def test_missing_settings_file_is_created_and_uninstall_leaves_an_empty_object(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "new" / "settings.json"
    report = install(path, hook_command(settings)[0])
    assert report.action == "installed" and report.backup is None
    assert _cairn_events(path) == dict.fromkeys(HOOK_EVENTS, 1)
    uninstall(path)
    assert json.loads(path.read_text()) == {}


def test_a_moved_install_replaces_the_old_hook_instead_of_adding_one(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "settings.json"
    install(path, "CAIRN_PYTHON=/old/python /bin/sh /old/site-packages/cairn/daemon/hook.sh")
    report = install(path, hook_command(settings)[0])
    assert report.action == "installed"
    assert _cairn_events(path) == dict.fromkeys(HOOK_EVENTS, 1)
    assert "/old/" not in path.read_text()


def test_a_symlinked_settings_file_is_edited_in_place(tmp_path: Path, settings: Settings) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"model": "sonnet"}))
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    install(link, hook_command(settings)[0])
    assert link.is_symlink()
    assert _cairn_events(real) == dict.fromkeys(HOOK_EVENTS, 1)


@pytest.mark.parametrize("text", ["{broken", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'])
def test_unusable_settings_are_refused_untouched(tmp_path: Path, settings: Settings, text: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(SettingsFileError):
        install(path, hook_command(settings)[0])
    assert path.read_text() == text and _backups(path) == []


def test_the_command_carries_a_custom_home_quoted_and_works_through_a_shell(tmp_path: Path) -> None:
    home = tmp_path / 'it\'s a "home" $(x)'
    settings = Settings.load(home)
    result = CliRunner().invoke(
        app, ["install", "--settings", str(tmp_path / "s.json"), "--json"], env={"CAIRN_HOME": str(home)}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["store_created"] and settings.db_path.exists()
    payload = json.dumps({"session_id": "s", "transcript_path": "/t/x.jsonl", "hook_event_name": "Stop"})
    env = {k: v for k, v in os.environ.items() if k != "CAIRN_HOME"}
    proc = subprocess.run(
        ["/bin/sh", "-c", report["command"]],
        input=payload.encode(),
        capture_output=True,
        env={**env, "CAIRN_HOOK_NO_SPAWN": "1"},
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b""
    with sqlite3.connect(settings.db_path) as conn:
        assert conn.execute("SELECT path, status FROM work_queue").fetchall() == [("/t/x.jsonl", "pending")]


def test_the_default_home_is_not_pinned(tmp_path: Path) -> None:
    command, _ = hook_command(Settings.load(DEFAULT_HOME.expanduser()), sqlite3="/usr/bin/sqlite3")
    assert "CAIRN_HOME" not in command and command.startswith("CAIRN_PYTHON=/")


def test_cli_uninstall_round_trip(tmp_path: Path, cairn_home: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    runner = CliRunner()
    assert runner.invoke(app, ["install", "--settings", str(path)]).exit_code == 0
    second = runner.invoke(app, ["install", "--settings", str(path)])
    assert second.exit_code == 0 and "not changed" in second.output
    assert runner.invoke(app, ["install", "--settings", str(path), "--uninstall"]).exit_code == 0
    assert json.loads(path.read_text()) == USER_SETTINGS
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    failed = runner.invoke(app, ["install", "--settings", str(bad)])
    assert failed.exit_code == 1 and bad.read_text() == "{oops"
