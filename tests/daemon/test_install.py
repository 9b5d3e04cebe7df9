"""`cairn install`: surgical, idempotent edits of Claude Code's settings and ~/.claude.json that keep the
original and give it back byte for byte on uninstall."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cairn.cli import app
from cairn.config import DEFAULT_HOME, Settings
from cairn.daemon import install as installer
from cairn.daemon.install import (
    HOOK_EVENTS,
    RECALL_EVENTS,
    RECALL_TIMEOUT_S,
    SettingsFileError,
    hook_command,
    install,
    install_mcp,
    is_cairn_command,
    is_owned_command,
    is_recall_command,
    mcp_entry,
    recall_command,
    uninstall,
    uninstall_mcp,
)
from cairn.daemon.launcher import mcp_argv

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
    """What cairn keeps beside `path`: the original's backup, or the note that it created the file."""
    return sorted(path.parent.glob(f"{path.name}.cairn-*"))


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
    command = hook_command(settings)

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
    assert removed.undo == "restored" and path.read_bytes() == original
    assert path.stat().st_mode & 0o777 == 0o600
    assert _backups(path) == [], "the backup goes once the original is back"
    again = uninstall(path)
    assert again.action == "unchanged" and path.read_bytes() == original


def test_a_missing_settings_file_is_created_and_uninstall_deletes_it_again(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "new" / "deeper" / "settings.json"
    report = install(path, hook_command(settings))
    assert report.action == "installed" and report.backup is None and report.created
    assert _cairn_events(path) == dict.fromkeys(HOOK_EVENTS, 1)
    assert [p.name for p in _backups(path)] == ["settings.json.cairn-created"]
    removed = uninstall(path)
    assert removed.undo == "deleted"
    assert not (tmp_path / "new").exists(), "the file, its note and the directories made for it are gone"


def test_a_moved_install_replaces_the_old_hook_instead_of_adding_one(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "settings.json"
    install(path, "CAIRN_PYTHON=/old/python /bin/sh /old/site-packages/cairn/daemon/hook.sh")
    report = install(path, hook_command(settings))
    assert report.action == "installed"
    assert _cairn_events(path) == dict.fromkeys(HOOK_EVENTS, 1)
    assert "/old/" not in path.read_text()


def test_a_symlinked_settings_file_is_edited_in_place(tmp_path: Path, settings: Settings) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"model": "sonnet"}))
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    install(link, hook_command(settings))
    assert link.is_symlink()
    assert _cairn_events(real) == dict.fromkeys(HOOK_EVENTS, 1)


@pytest.mark.parametrize("text", ["{broken", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'])
def test_unusable_settings_are_refused_untouched(tmp_path: Path, settings: Settings, text: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(SettingsFileError):
        install(path, hook_command(settings))
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


def test_the_commands_name_the_homes_launchers_which_pin_the_home(tmp_path: Path) -> None:
    settings = Settings.load(tmp_path / "my home")
    capture, recall = hook_command(settings), recall_command(settings)
    assert capture == f"'{tmp_path / 'my home' / 'bin' / 'cairn-hook'}'"
    assert recall == f"'{tmp_path / 'my home' / 'bin' / 'cairn-recall'}'"
    assert is_cairn_command(capture) and is_owned_command(capture) and not is_recall_command(capture)
    assert is_recall_command(recall) and is_owned_command(recall) and not is_cairn_command(recall)
    targets = installer.write_launchers(settings, sqlite3="")
    assert targets.kind == "python" and targets.hook.endswith("/cairn/daemon/hook.py")
    for name in ("cairn-hook", "cairn-recall", "cairn-mcp"):
        script = settings.home / "bin" / name
        assert script.stat().st_mode & 0o777 == 0o700
        assert f"CAIRN_HOME='{settings.home}'" in script.read_text()
    assert (settings.home / "bin" / "launcher.json").stat().st_mode & 0o777 == 0o600


def test_cli_uninstall_round_trip(tmp_path: Path, cairn_home: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    runner = CliRunner()
    assert runner.invoke(app, ["install", "--settings", str(path)]).exit_code == 0
    second = runner.invoke(app, ["install", "--settings", str(path)])
    assert second.exit_code == 0 and "not changed" in second.output
    assert runner.invoke(app, ["install", "--settings", str(path), "--uninstall"]).exit_code == 0
    assert path.read_text() == json.dumps(USER_SETTINGS)
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    failed = runner.invoke(app, ["install", "--settings", str(bad)])
    assert failed.exit_code == 1 and bad.read_text() == "{oops"


# The MCP server entry in Claude Code's user config (~/.claude.json)

CLAUDE_CONFIG = {
    "numStartups": 42,
    "theme": "dark",
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {"T": "x"}}},
    "projects": {"/work/app": {"mcpServers": {"local": {"type": "stdio", "command": "local-mcp"}}}},
    "oauthAccount": {"emailAddress": "ü@example.com"},
}


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cairn install` defaults to ~/.claude.json: no test here may reach the real one."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


def _flat(output: str) -> str:
    """Command output with rich's line wrapping undone."""
    return " ".join(output.split())


def _servers(path: Path) -> dict[str, object]:
    return json.loads(path.read_text()).get("mcpServers", {})


def test_mcp_entry_round_trip_keeps_everything_else_and_is_idempotent(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / ".claude.json"
    original = json.dumps(CLAUDE_CONFIG, indent=2, ensure_ascii=False).encode()
    path.write_bytes(original)
    path.chmod(0o600)
    entry = mcp_entry(settings)

    first = install_mcp(path, entry)
    assert first.action == "registered" and first.entry == entry
    [backup] = _backups(path)
    assert backup.read_bytes() == original and first.backup == str(backup)
    assert path.stat().st_mode & 0o777 == 0o600
    data = json.loads(path.read_text())
    assert data["mcpServers"] == {**CLAUDE_CONFIG["mcpServers"], "cairn": entry}
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        k: v for k, v in CLAUDE_CONFIG.items() if k != "mcpServers"
    }

    registered = path.read_bytes()
    again = install_mcp(path, entry)
    assert again.action == "unchanged" and again.backup is None
    assert path.read_bytes() == registered and len(_backups(path)) == 1

    removed = uninstall_mcp(path)
    assert removed.action == "removed" and removed.undo == "restored"
    assert path.read_bytes() == original and _backups(path) == []
    assert uninstall_mcp(path).action == "unchanged"


def test_a_changed_entry_is_replaced_in_place(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / ".claude.json"
    old = {"type": "stdio", "command": "/old/venv/bin/cairn", "args": ["mcp"]}
    path.write_text(json.dumps({"mcpServers": {"cairn": old, "zeta": {"command": "z"}}}))
    report = install_mcp(path, mcp_entry(settings))
    assert report.action == "registered"
    servers = _servers(path)
    assert list(servers) == ["cairn", "zeta"] and servers["cairn"] == mcp_entry(settings)


def test_a_missing_config_is_created_and_uninstall_removes_what_cairn_added(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "new" / ".claude.json"
    assert uninstall_mcp(path).action == "unchanged" and not path.exists()
    report = install_mcp(path, mcp_entry(settings))
    assert report.action == "registered" and report.backup is None and report.created
    assert path.stat().st_mode & 0o777 == 0o600
    assert uninstall_mcp(path).undo == "deleted"
    assert not (tmp_path / "new").exists()


def test_a_config_claude_code_saves_meanwhile_is_merged_not_overwritten(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".claude.json"
    path.write_text(json.dumps({"numStartups": 1}))
    load = installer._load
    calls = 0

    def racing_load(target: Path) -> object:
        nonlocal calls
        calls += 1
        loaded = load(target)
        if calls == 1:  # Claude Code saves its state between cairn's read and its write
            target.write_text(json.dumps({"numStartups": 2, "tipsHistory": {"x": 1}}))
        return loaded

    monkeypatch.setattr(installer, "_load", racing_load)
    assert install_mcp(path, mcp_entry(settings)).action == "registered"
    data = json.loads(path.read_text())
    assert data["numStartups"] == 2 and data["tipsHistory"] == {"x": 1} and "cairn" in data["mcpServers"]


@pytest.mark.parametrize("text", ["{broken", "[]", '{"mcpServers": []}', '{"mcpServers": "x"}'])
def test_an_unusable_claude_config_is_refused_untouched(
    tmp_path: Path, settings: Settings, text: str
) -> None:
    path = tmp_path / ".claude.json"
    path.write_text(text)
    with pytest.raises(SettingsFileError):
        install_mcp(path, mcp_entry(settings))
    with pytest.raises(SettingsFileError):
        uninstall_mcp(path)
    assert path.read_text() == text and _backups(path) == []


def test_the_entry_runs_the_launcher_and_the_launcher_this_install(tmp_path: Path) -> None:
    script = tmp_path / "venv" / "bin" / "cairn"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    python = str(script.parent / "python")
    assert mcp_argv(argv0="/usr/bin/pytest", python=python) == [str(script), "mcp"]
    assert mcp_argv(argv0=str(script), python="/nowhere/bin/python3") == [str(script), "mcp"]
    fallback = mcp_argv(argv0="/usr/bin/pytest", python="/nowhere/bin/python3")
    assert fallback == ["/nowhere/bin/python3", "-m", "cairn", "mcp"]
    default = Settings.load(DEFAULT_HOME.expanduser())
    assert mcp_entry(default) == {
        "type": "stdio",
        "command": str(default.home / "bin" / "cairn-mcp"),
        "args": [],
    }
    custom = Settings.load(tmp_path / "home")
    assert mcp_entry(custom)["env"] == {"CAIRN_HOME": str(tmp_path / "home")}


def test_cli_registers_and_removes_the_mcp_server(tmp_path: Path, cairn_home: Path) -> None:
    settings_path, config = tmp_path / "settings.json", tmp_path / ".claude.json"
    config.write_text(json.dumps(CLAUDE_CONFIG))
    runner = CliRunner()
    args = ["install", "--settings", str(settings_path), "--claude-config", str(config)]

    first = runner.invoke(app, [*args, "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["mcp"]["action"] == "registered" and report["mcp"]["config_path"] == str(config)
    entry = report["mcp"]["entry"]
    assert entry["env"] == {"CAIRN_HOME": str(cairn_home.resolve())} and entry["type"] == "stdio"
    assert _servers(config)["cairn"] == entry
    assert entry["command"] == str(cairn_home.resolve() / "bin" / "cairn-mcp") and entry["args"] == []

    second = runner.invoke(app, args)
    assert second.exit_code == 0 and "MCP server 'cairn' already registered, not changed" in _flat(
        second.output
    )

    removed = runner.invoke(app, [*args, "--uninstall"])
    assert removed.exit_code == 0 and "removed the MCP server 'cairn'" in _flat(removed.output)
    assert json.loads(config.read_text()) == CLAUDE_CONFIG

    untouched = tmp_path / "untouched.json"
    no_mcp = runner.invoke(
        app, ["install", "--settings", str(settings_path), "--claude-config", str(untouched), "--no-mcp"]
    )
    assert no_mcp.exit_code == 0 and not untouched.exists()


def test_cli_defaults_to_the_claude_json_in_home(tmp_path: Path, cairn_home: Path) -> None:
    result = CliRunner().invoke(app, ["install", "--settings", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    assert "cairn" in _servers(Path(os.environ["HOME"]) / ".claude.json")


def test_cli_reports_a_broken_claude_config_after_installing_the_hooks(
    tmp_path: Path, cairn_home: Path
) -> None:
    config = tmp_path / ".claude.json"
    config.write_text('{"mcpServers": []}')
    settings_path = tmp_path / "settings.json"
    result = CliRunner().invoke(
        app, ["install", "--settings", str(settings_path), "--claude-config", str(config)]
    )
    assert result.exit_code == 1 and "the hooks were installed" in _flat(result.output)
    assert config.read_text() == '{"mcpServers": []}' and _cairn_events(settings_path)


# The recall hook (SessionStart, UserPromptSubmit) beside the capture hook


def _handlers(
    path: Path, event: str, match: Callable[[object], bool] = is_owned_command
) -> list[dict[str, object]]:
    groups = json.loads(path.read_text()).get("hooks", {}).get(event, [])
    return [h for g in groups for h in g.get("hooks", []) if match(h.get("command"))]


def test_recall_is_registered_beside_capture_and_taken_out_alone(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS, indent=2))
    command, recall = hook_command(settings), recall_command(settings)

    first = install(path, command, "sh", recall)
    assert first.action == "installed" and first.events == [*HOOK_EVENTS, "SessionStart"]
    assert first.recall_events == list(RECALL_EVENTS) and first.recall_command == recall
    hooks = json.loads(path.read_text())["hooks"]
    recall_handler = {"type": "command", "command": recall, "timeout": RECALL_TIMEOUT_S}
    assert hooks["SessionStart"] == [{"matcher": "", "hooks": [recall_handler]}], "every source"
    assert _handlers(path, "UserPromptSubmit") == [
        {"type": "command", "command": command, "timeout": installer.HOOK_TIMEOUT_S},
        recall_handler,
    ]
    assert all(not _handlers(path, e, is_recall_command) for e in HOOK_EVENTS if e not in RECALL_EVENTS)
    assert hooks["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert hooks["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]

    installed = path.read_bytes()
    assert install(path, command, "sh", recall).action == "unchanged" and path.read_bytes() == installed

    off = install(path, command, "sh", None)
    assert off.action == "installed" and off.events == ["UserPromptSubmit", "SessionStart"]
    assert off.recall_events == [] and off.recall_command is None
    assert "SessionStart" not in json.loads(path.read_text())["hooks"]
    assert _handlers(path, "UserPromptSubmit") == [
        {"type": "command", "command": command, "timeout": installer.HOOK_TIMEOUT_S}
    ]
    assert _cairn_events(path) == {**dict.fromkeys(HOOK_EVENTS, 1), "PreToolUse": 0}

    install(path, command, "sh", recall)
    removed = uninstall(path)
    assert sorted(removed.events) == sorted({*HOOK_EVENTS, *RECALL_EVENTS})
    assert path.read_text() == json.dumps(USER_SETTINGS, indent=2), "with its empty SessionStart"


def test_a_users_own_session_start_hooks_are_kept_in_place(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "settings.json"
    own = {
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "direnv export json"}]}
            ],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "prompt-guard"}]}],
        }
    }
    path.write_text(json.dumps(own))
    install(path, hook_command(settings), "sh", recall_command(settings))
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["SessionStart"][0] == own["hooks"]["SessionStart"][0]
    assert hooks["UserPromptSubmit"][0] == own["hooks"]["UserPromptSubmit"][0]
    assert [len(_handlers(path, e, is_recall_command)) for e in RECALL_EVENTS] == [1, 1]
    uninstall(path)
    assert json.loads(path.read_text()) == own


def test_a_moved_install_replaces_the_old_recall_hook(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "settings.json"
    old_capture = "CAIRN_PYTHON=/old/python /bin/sh /old/site-packages/cairn/daemon/hook.sh"
    install(path, old_capture, "sh", "/old/python -S -E /old/site-packages/cairn/daemon/recall.py")
    report = install(path, hook_command(settings), "sh", recall_command(settings))
    assert report.action == "installed"
    assert [len(_handlers(path, e, is_recall_command)) for e in RECALL_EVENTS] == [1, 1]
    assert "/old/" not in path.read_text()


def test_cli_installs_recall_by_default_and_no_recall_leaves_it_out(tmp_path: Path) -> None:
    home = tmp_path / 'it\'s a "home" $(x)'
    path = tmp_path / "s.json"
    runner = CliRunner()
    args = ["install", "--settings", str(path), "--no-mcp"]
    env = {"CAIRN_HOME": str(home)}
    result = runner.invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["recall_events"] == ["SessionStart", "UserPromptSubmit"]
    assert [len(_handlers(path, e, is_recall_command)) for e in RECALL_EVENTS] == [1, 1]

    # The command works through a shell from anywhere; with no daemon it injects nothing, at once.
    payload = {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup", "cwd": "/x"}
    environ = {k: v for k, v in os.environ.items() if k != "CAIRN_HOME"}
    proc = subprocess.run(
        ["/bin/sh", "-c", report["recall_command"]],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**environ, "CAIRN_HOOK_NO_SPAWN": "1"},
        cwd=tmp_path,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    assert not (home / "logs" / "hook.log").exists()

    off = runner.invoke(app, [*args, "--no-recall"], env=env)
    assert off.exit_code == 0 and "recall: not installed" in _flat(off.output)
    assert not any(_handlers(path, e, is_recall_command) for e in RECALL_EVENTS)
    assert _handlers(path, "UserPromptSubmit", is_cairn_command)
    again = runner.invoke(app, args, env=env)
    assert again.exit_code == 0 and "injected on SessionStart, UserPromptSubmit" in _flat(again.output)
    assert [len(_handlers(path, e, is_recall_command)) for e in RECALL_EVENTS] == [1, 1]


def test_a_backup_an_older_cairn_made_of_an_installed_file_is_never_restored(
    tmp_path: Path, settings: Settings
) -> None:
    """Before, each change replaced `<file>.cairn-backup`, so it may hold cairn's own hooks: putting that
    back would reinstall them. Uninstall cuts cairn's entries out in place instead, and drops it."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model": "opus"}, indent=2))
    install(path, hook_command(settings))
    installed = path.read_bytes()
    installer.backup_path(path).write_bytes(installed)  # what an older cairn's second install left
    path.write_bytes(installed.replace(b'"opus"', b'"haiku"'))
    assert install(path, hook_command(settings)).action == "unchanged"
    removed = uninstall(path)
    assert removed.undo == "edited" and path.read_text() == json.dumps({"model": "haiku"}, indent=2)
    assert _backups(path) == []


def test_a_file_deleted_after_install_stays_deleted_and_its_backup_stays(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"model": "opus"}')
    install(path, hook_command(settings))
    path.unlink()
    report = uninstall(path)
    assert report.action == "unchanged" and report.backup == str(installer.backup_path(path))
    assert not path.exists() and installer.backup_path(path).read_text() == '{"model": "opus"}'
