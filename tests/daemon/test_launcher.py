"""Installs that keep working: the launchers in CAIRN_HOME/bin, `cairn doctor`'s integration checks,
one backup per settings file, and `cairn install --uninstall [--purge]`.

Real processes throughout: `cairn install` run by a throwaway virtualenv's own `cairn` script, hooks
run through `/bin/sh -c` as Claude Code runs them, `cairn doctor` as a user runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cairn.cli import app
from cairn.store.lock import StoreLock
from tests.daemon.helpers import Daemons
from tests.helpers.cli import cairn

VENV = Path(sys.executable).parent.parent


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME: `cairn install` and `cairn doctor` use ~/.claude/settings.json and ~/.claude.json."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def throwaway_venv(root: Path) -> Path:
    """A virtualenv at `root` sharing this one's packages: its own python and `cairn` script; the script."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(VENV / "pyvenv.cfg", root / "pyvenv.cfg")
    (root / "lib").symlink_to(VENV / "lib")
    (bin_dir / "python").symlink_to(Path(sys.executable).resolve())
    script = bin_dir / "cairn"
    script.write_text(f"#!{bin_dir / 'python'}\nimport sys\nfrom cairn.cli import app\nsys.exit(app())\n")
    script.chmod(0o755)
    return script


def settings_commands(user_home: Path) -> dict[str, str]:
    """The capture (Stop) and recall (SessionStart) commands, and the MCP command, as Claude Code has them."""
    hooks = json.loads((user_home / ".claude" / "settings.json").read_text())["hooks"]
    mcp = json.loads((user_home / ".claude.json").read_text())["mcpServers"]["cairn"]
    return {
        "capture": hooks["Stop"][0]["hooks"][0]["command"],
        "recall": hooks["SessionStart"][0]["hooks"][0]["command"],
        "mcp": mcp["command"],
    }


def run_shell(command: str, payload: dict[str, Any] | None) -> subprocess.CompletedProcess[str]:
    data = json.dumps(payload) if payload is not None else ""
    env = {**os.environ, "CAIRN_HOOK_NO_SPAWN": "1"}
    env.pop("CAIRN_HOME")  # Claude Code's environment need not have it: the launcher pins it
    return subprocess.run(
        ["/bin/sh", "-c", command], input=data, capture_output=True, text=True, env=env, timeout=60
    )


def stop(path: str) -> dict[str, Any]:
    return {"session_id": "s", "transcript_path": path, "hook_event_name": "Stop"}


def queued(home: Path) -> list[str]:
    with sqlite3.connect(home / "cairn.db") as conn:
        return [row[0] for row in conn.execute("SELECT path FROM work_queue ORDER BY id")]


def doctor(env: dict[str, str] | None = None) -> tuple[int, dict[str, dict[str, Any]]]:
    proc = cairn("doctor", "--json", check=False, env=env)
    return proc.returncode, {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


CLAUDE_CHECKS = ("claude-hooks", "claude-mcp", "launcher", "daemon")


def test_a_moved_install_is_reported_then_repaired_by_installing_again(
    tmp_path: Path, cairn_home: Path, user_home: Path
) -> None:
    old = tmp_path / "old-checkout"
    script = throwaway_venv(old / ".venv")
    installed = subprocess.run(
        [str(script), "install", "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=240
    )
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["launcher"]["python"] == str(old / ".venv" / "bin" / "python")
    commands = settings_commands(user_home)
    assert run_shell(commands["capture"], stop("/t/before.jsonl")).returncode == 0
    assert queued(cairn_home) == ["/t/before.jsonl"]

    old.rename(tmp_path / "moved-checkout")  # the checkout moves; the settings still name the launchers

    capture = run_shell(commands["capture"], stop("/t/after-move.jsonl"))
    assert capture.returncode == 0 and capture.stdout == "", "a hook never blocks Claude Code"
    [line] = capture.stderr.splitlines()
    assert "cairn-hook" in line and str(old / ".venv" / "bin" / "python") in line and "cairn install" in line
    logged = (cairn_home / "logs" / "hook.log").read_text().splitlines()
    assert logged[-1] == line, "the same one line goes to the hook log"
    assert queued(cairn_home) == ["/t/before.jsonl"]
    recall = run_shell(commands["recall"], {"session_id": "s", "hook_event_name": "SessionStart"})
    assert recall.returncode == 0 and recall.stdout == "" and "cairn-recall" in recall.stderr
    mcp = run_shell(commands["mcp"], None)
    assert mcp.returncode == 1 and "cairn-mcp" in mcp.stderr and "cairn install" in mcp.stderr

    code, checks = doctor()
    assert code == 1
    for name in ("claude-hooks", "claude-mcp", "launcher"):
        assert checks[name]["ok"] is False, checks[name]
        assert checks[name]["fix"] == f"Run `{VENV / 'bin' / 'cairn'} install` with the cairn you use now."
    assert str(old / ".venv" / "bin" / "python") in checks["launcher"]["detail"]
    assert "moved" in checks["launcher"]["detail"]

    cairn("install")  # what doctor said, with the cairn the user has now
    code, checks = doctor()
    assert code == 0, checks
    assert all(checks[name]["ok"] for name in CLAUDE_CHECKS)
    assert settings_commands(user_home) == commands, "the settings did not need to change"
    assert run_shell(commands["capture"], stop("/t/repaired.jsonl")).stderr == ""
    assert queued(cairn_home) == ["/t/before.jsonl", "/t/repaired.jsonl"]


def test_doctor_names_the_fix_for_missing_hooks_and_mcp_server(cairn_home: Path, user_home: Path) -> None:
    code, checks = doctor()
    assert code == 1
    assert "not in" in checks["claude-hooks"]["detail"] and "install" in checks["claude-hooks"]["fix"]
    assert "no 'cairn' MCP server" in checks["claude-mcp"]["detail"]
    assert "no launchers" in checks["launcher"]["detail"]

    cairn("install", "--no-mcp")
    (cairn_home / "bin" / "cairn-hook").write_text("#!/bin/sh\nexit 0\n")  # edited by hand
    code, checks = doctor()
    assert code == 1 and checks["claude-hooks"]["ok"] and not checks["claude-mcp"]["ok"]
    assert not checks["launcher"]["ok"] and "cairn-hook" in checks["launcher"]["detail"]
    cairn("install")
    code, checks = doctor()
    assert code == 0 and all(checks[name]["ok"] for name in CLAUDE_CHECKS), checks


def test_doctor_and_uninstall_find_hooks_installed_at_other_paths(
    tmp_path: Path, cairn_home: Path, user_home: Path
) -> None:
    """`cairn install --settings S --claude-config C` is remembered: doctor checks S and C, not the
    defaults, and a plain `--uninstall` takes cairn out of S and C."""
    settings, config = tmp_path / "team" / "settings.json", tmp_path / "team" / "claude.json"
    cairn("install", "--settings", str(settings), "--claude-config", str(config))
    assert not (user_home / ".claude" / "settings.json").exists()
    assert not (user_home / ".claude.json").exists()
    code, checks = doctor()
    assert code == 0 and all(checks[name]["ok"] for name in CLAUDE_CHECKS), checks
    assert str(settings) in checks["claude-hooks"]["detail"]

    cairn("install", "--uninstall")
    assert not (tmp_path / "team").exists(), "cairn created both files (and their directory): all gone"
    code, checks = doctor()
    assert code == 1 and not checks["claude-hooks"]["ok"], "nothing recorded now: the defaults, empty"


def test_an_install_from_before_the_launchers_fails_doctor_until_reinstalled(
    cairn_home: Path, user_home: Path
) -> None:
    settings = user_home / ".claude" / "settings.json"
    cairn("install")
    direct = f"CAIRN_PYTHON={sys.executable} /bin/sh /gone/site-packages/cairn/daemon/hook.sh"
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["command"] = direct
    settings.write_text(json.dumps(data))
    code, checks = doctor()
    assert code == 1 and "/gone/site-packages" in checks["claude-hooks"]["detail"]
    cairn("install")
    assert doctor()[1]["claude-hooks"]["ok"] and direct not in settings.read_text()


def backups(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.cairn-backup*"))


def test_repeated_installs_keep_the_original_as_the_one_backup(cairn_home: Path, user_home: Path) -> None:
    runner = CliRunner()
    settings, config = user_home / ".claude" / "settings.json", user_home / ".claude.json"
    settings.parent.mkdir()
    originals = {settings: b'{"model": "opus"}', config: b'{"numStartups": 3}\n'}
    for path, original in originals.items():
        path.write_bytes(original)
    for args in ([], ["--no-recall"], [], ["--uninstall"], []):
        result = runner.invoke(app, ["install", *args])
        assert result.exit_code == 0, result.output
        for path, original in originals.items():
            if args == ["--uninstall"]:
                assert path.read_bytes() == original and not backups(path.parent)
            else:
                assert path.with_name(f"{path.name}.cairn-backup").read_bytes() == original, args
    assert backups(settings.parent) == ["settings.json.cairn-backup"]
    assert backups(user_home) == [".claude.json.cairn-backup"]


def test_uninstall_keeps_the_memory_and_says_where(cairn_home: Path, user_home: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["install"]).exit_code == 0
    # Wide enough that the temporary path (longer under pytest-xdist) is not folded inside a word.
    result = runner.invoke(app, ["install", "--uninstall"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    assert f"your memory is kept in {cairn_home}" in " ".join(result.output.split())
    assert (cairn_home / "cairn.db").exists() and not (cairn_home / "bin").exists()
    assert list(user_home.iterdir()) == [], "the files cairn created in an empty HOME are gone"


def test_purge_with_yes_deletes_the_home(cairn_home: Path, user_home: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["install"]).exit_code == 0
    assert (cairn_home / "cairn.db").exists()
    result = runner.invoke(app, ["install", "--uninstall", "--purge", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["purged"] is True
    assert not cairn_home.exists() and list(user_home.iterdir()) == []


def test_purge_without_a_terminal_or_yes_refuses_and_changes_nothing(
    cairn_home: Path, user_home: Path
) -> None:
    cairn("install")
    settings = (user_home / ".claude" / "settings.json").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "cairn", "install", "--uninstall", "--purge"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 2 and "--yes" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert (cairn_home / "cairn.db").exists() and (cairn_home / "bin" / "cairn-hook").exists()
    assert (user_home / ".claude" / "settings.json").read_bytes() == settings
    alone = cairn("install", "--purge", check=False)
    assert alone.returncode == 2 and "--uninstall" in alone.stderr


def test_purge_refuses_a_directory_cairn_did_not_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "cat.jpg").write_bytes(b"\xff\xd8")
    monkeypatch.setenv("CAIRN_HOME", str(photos))
    result = CliRunner().invoke(app, ["install", "--uninstall", "--purge", "--yes"])
    assert result.exit_code == 2 and (photos / "cat.jpg").exists()


def test_purge_stops_a_running_daemon_first(cairn_home: Path, user_home: Path, daemons: Daemons) -> None:
    cairn("install")
    pid = daemons.start()
    proc = cairn("install", "--uninstall", "--purge", "--yes", check=False, timeout=240)
    assert proc.returncode == 0, proc.stderr
    daemons.wait_exit(pid)
    assert not cairn_home.exists()


def test_purge_refuses_while_another_process_holds_the_store(cairn_home: Path, user_home: Path) -> None:
    cairn("install")
    with StoreLock(cairn_home / "store.lock"):  # a backfill, say, owns the store
        proc = subprocess.run(
            [sys.executable, "-m", "cairn", "install", "--uninstall", "--purge", "--yes"],
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert proc.returncode == 1 and f"process {os.getpid()}" in proc.stderr
    assert (cairn_home / "cairn.db").exists()
