"""`cairn install` leaves the user's files as it found them: a newcomer's path, with bytes compared.

Real files at Claude Code's default paths in a temporary HOME, the real CLI run as a user runs it,
and a real daemon where stopping one is what is tested.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import Daemons
from tests.helpers.cli import cairn

CLAUDE_CHECKS = ("claude-hooks", "claude-mcp", "launcher")
# As Claude Code's JSON.stringify writes them when not asked to indent: one line, no final newline.
COMPACT_SETTINGS = '{"model":"opus","permissions":{"allow":["Bash(ls:*)"],"deny":[]},"env":{"NAME":"bär"}}'
COMPACT_CONFIG = '{"numStartups":3,"mcpServers":{"github":{"type":"stdio","command":"gh-mcp","args":[]}}}'
USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "env": {"NAME": "bär"},
    "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}]},
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
}


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME: `cairn install` uses ~/.claude/settings.json and ~/.claude.json in it."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def files(root: Path) -> dict[str, bytes]:
    """Every file under `root` (by path relative to it) with its bytes, and every directory (as b"/")."""
    return {str(p.relative_to(root)): b"/" if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def write_home(user_home: Path, settings: str, config: str | None = None) -> tuple[Path, Path]:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(settings.encode())
    if config is not None:
        (user_home / ".claude.json").write_bytes(config.encode())
    return path, user_home / ".claude.json"


def doctor(real_process: bool = False) -> dict[str, dict[str, Any]]:
    proc = cairn("doctor", "--json", check=False, real_process=real_process)
    return {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


def flat(text: str) -> str:
    return " ".join(text.split())


def test_install_doctor_uninstall_gives_back_a_compact_settings_file_byte_for_byte(
    cairn_home: Path, user_home: Path
) -> None:
    settings, config = write_home(user_home, COMPACT_SETTINGS, COMPACT_CONFIG)
    before = files(user_home)

    cairn("install")
    installed = files(user_home)
    text = settings.read_text()
    assert "\n" not in text and text.startswith(COMPACT_SETTINGS[:-1] + ',"hooks":{"'), "still one line"
    assert config.read_text().startswith(COMPACT_CONFIG[:-2] + ',"cairn":{"type":"stdio"')
    assert installed[".claude/settings.json.cairn-backup"] == COMPACT_SETTINGS.encode()
    assert installed[".claude.json.cairn-backup"] == COMPACT_CONFIG.encode()

    checks = doctor()
    assert all(checks[name]["ok"] for name in CLAUDE_CHECKS), checks
    assert files(user_home) == installed, "doctor changes no file"

    cairn("install", "--uninstall")
    assert files(user_home) == before


def test_two_installs_in_a_row_then_uninstall_give_back_the_original(
    cairn_home: Path, user_home: Path
) -> None:
    original = json.dumps(USER_SETTINGS, indent=2, ensure_ascii=False) + "\n"
    settings, _ = write_home(user_home, original, '{"numStartups": 3}')
    before = files(user_home)
    backup = settings.with_name("settings.json.cairn-backup")
    for args in ([], ["--no-recall"], []):  # the second and third rewrite the installed file
        cairn("install", *args)
        assert backup.read_bytes() == original.encode(), "the backup is the original, never an install"
    cairn("install", "--uninstall")
    assert files(user_home) == before


# Each style renders an object as a file in that style would hold it.
STYLES: dict[str, Callable[[Any], str]] = {
    "indent 4, no final newline": lambda data: json.dumps(data, indent=4, ensure_ascii=False),
    "tabs, CRLF": lambda data: (
        json.dumps(data, indent="\t", ensure_ascii=False).replace("\n", "\r\n") + "\r\n"
    ),
    "one line, spaced": lambda data: json.dumps(data, ensure_ascii=False) + "\n",
    "indent 2, non-ASCII escaped": lambda data: json.dumps(data, indent=2) + "\n",
}


@pytest.mark.parametrize("style", STYLES)
def test_an_installed_file_keeps_its_style(cairn_home: Path, user_home: Path, style: str) -> None:
    render = STYLES[style]
    settings, _ = write_home(user_home, render(USER_SETTINGS))
    before = files(user_home)
    cairn("install", "--no-mcp")
    text = settings.read_bytes().decode()
    installed = json.loads(text)
    assert list(installed) == list(USER_SETTINGS), "key order kept"
    assert installed["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert text == render(installed), "the whole file reads as if written in its own style"
    cairn("install", "--uninstall", "--no-mcp")
    assert files(user_home) == before


def test_an_empty_home_ends_empty_and_the_memory_stays(cairn_home: Path, user_home: Path) -> None:
    result = cairn("install")
    assert "cairn created it" in flat(result.stdout)
    assert {".claude/settings.json", ".claude.json"} <= set(files(user_home))
    # A process of its own, so that loading onnxruntime (which would leave a device id in ~/.cache) is seen.
    checks = doctor(real_process=True)
    assert all(checks[name]["ok"] for name in CLAUDE_CHECKS), checks
    removed = cairn("install", "--uninstall")
    assert "which cairn had created" in flat(removed.stdout)
    assert files(user_home) == {}, "no `{}` left, no backup, no ~/.claude"
    assert (cairn_home / "cairn.db").exists(), "uninstall never touches the store"


def test_an_edit_made_after_install_survives_uninstall(cairn_home: Path, user_home: Path) -> None:
    settings, config = write_home(user_home, COMPACT_SETTINGS, COMPACT_CONFIG)
    cairn("install")
    # The user switches model by hand; Claude Code counts a start-up in its own file.
    settings.write_text(settings.read_text().replace('"model":"opus"', '"model":"sonnet"'))
    config.write_text(config.read_text().replace('"numStartups":3', '"numStartups":4'))
    result = cairn("install", "--uninstall")
    assert "changed since the install, so only cairn's entries went" in flat(result.stdout)
    assert settings.read_text() == COMPACT_SETTINGS.replace('"model":"opus"', '"model":"sonnet"')
    assert config.read_text() == COMPACT_CONFIG.replace('"numStartups":3', '"numStartups":4')
    assert sorted(files(user_home)) == [".claude", ".claude.json", ".claude/settings.json"], "backups gone"


def test_uninstall_stops_the_daemon(cairn_home: Path, user_home: Path, daemons: Daemons) -> None:
    cairn("install")
    pid = daemons.start()
    result = cairn("install", "--uninstall", "--json")
    daemons.wait_exit(pid, timeout=90)
    assert json.loads(result.stdout)["daemon_stopped"] == pid
    again = cairn("install", "--uninstall", "--json")
    assert json.loads(again.stdout)["daemon_stopped"] is None, "no daemon running is fine"


@pytest.mark.parametrize("args", [("install",), ("install", "--uninstall")])
def test_a_malformed_settings_file_is_refused_in_one_line_and_left_alone(
    cairn_home: Path, user_home: Path, args: tuple[str, ...]
) -> None:
    settings, _ = write_home(user_home, '{"model": "opus",}\n')
    before = files(user_home)
    proc = cairn(*args, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"error: {settings} is not valid JSON") and "cairn left it as is" in line
    assert files(user_home) == before


# The user's own hooks and MCP servers, laid out by hand: what cairn writes beside them must not touch them.
ODD_STOP = '[ {"hooks":[ {"type":"command","command":"notify-send done","timeout":1e1} ]} ]'
ODD_PRE_TOOL_USE = (
    '[\n      {"matcher" :"Bash",\n       "hooks":[{"type": "command", "command": "lint \\u00e9"}]}]'
)
ODD_SESSION_START = '[{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]'
ODD_SETTINGS = (
    '{\n  "model": "opus",\n  "hooks": {\n    "Stop": '
    + ODD_STOP
    + ',\n    "PreToolUse":'
    + ODD_PRE_TOOL_USE
    + ',\n    "SessionStart": '
    + ODD_SESSION_START
    + '\n  },\n  "env": {"NAME": "bär"}\n}\n'
)
ODD_GITHUB = '{ "type":"stdio",\n        "command": "gh-mcp", "args": [ "--read-only" ] }'
ODD_LOCAL = '{"type": "stdio", "command": "local-mcp", "args": [], "env": {"N": 1.50}}'
ODD_CONFIG = (
    '{\n  "numStartups": 3,\n  "mcpServers": {\n    "github": '
    + ODD_GITHUB
    + ',\n    "local":  '
    + ODD_LOCAL
    + "\n  }\n}\n"
)


def users_entries_intact(settings: Path, config: Path) -> None:
    text, config_text = settings.read_text(), config.read_text()
    for entry in (ODD_STOP[:-2], ODD_PRE_TOOL_USE[:-1], ODD_SESSION_START[:-1]):
        assert entry in text, entry  # each event's own groups, byte for byte (cairn's may follow them)
    for entry in (ODD_GITHUB, ODD_LOCAL):
        assert entry in config_text, entry


@pytest.mark.parametrize("edited_since", [False, True])
def test_the_users_own_hooks_and_servers_keep_their_bytes_while_installed(
    cairn_home: Path, user_home: Path, edited_since: bool
) -> None:
    settings, config = write_home(user_home, ODD_SETTINGS, ODD_CONFIG)
    before = files(user_home)
    for args in ([], ["--no-recall"], []):  # install, then two reinstalls that rewrite cairn's entries
        cairn("install", *args)
        users_entries_intact(settings, config)
        installed = json.loads(settings.read_text())["hooks"]
        assert installed["Stop"][0] == json.loads(ODD_STOP)[0] and len(installed["Stop"]) == 2
        assert json.loads(config.read_text())["mcpServers"]["cairn"]["command"].endswith("/cairn-mcp")
    if edited_since:
        # A change of the user's own after the install: uninstall then cuts out cairn's entries alone.
        settings.write_text(settings.read_text().replace('"opus"', '"sonnet"'))
        config.write_text(config.read_text().replace('"numStartups": 3', '"numStartups": 4'))
    cairn("install", "--uninstall")
    if edited_since:
        assert settings.read_text() == ODD_SETTINGS.replace('"opus"', '"sonnet"')
        assert config.read_text() == ODD_CONFIG.replace('"numStartups": 3', '"numStartups": 4')
    else:
        assert files(user_home) == before
