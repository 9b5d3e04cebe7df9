"""`cairn doctor`'s checks of the Claude Code integration: hooks, MCP server, launchers, daemon start.

Capture that stops is silent by nature (a hook that cannot run just queues nothing), so these checks
look for each way the integration breaks: cairn's hooks missing from `~/.claude/settings.json`, the
MCP server missing from `~/.claude.json`, either one naming a command that no longer runs (an install
from before the launchers, another home's launcher), a launcher whose recorded cairn is gone (moved
checkout, rebuilt venv) or that an older cairn wrote, and an interpreter that cannot start the daemon.
Each failure names the one command that repairs it, usually `cairn install` run with the cairn the
user means to keep. With the cairn plugin enabled in Claude Code, the plugin runs the hooks and the
server through the same launchers, and cairn's entries left in the settings files are the failure
(they would run everything twice).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.daemon import install as installer
from cairn.daemon import launcher
from cairn.daemon import plugin as claude_plugin

DAEMON_IMPORT_TIMEOUT_S = 120.0  # a cold interpreter importing cairn on a loaded machine


@dataclass
class Finding:
    """One check's outcome, in the shape `cairn.doctor.Check` takes."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None


def install_command() -> str:
    """The command that repairs the integration: `install` with the cairn running this check.

    Named by absolute path when a `cairn` script sits beside this interpreter, since after a move the
    bare `cairn` on PATH may be the old, broken one.
    """
    script = Path(sys.executable).absolute().parent / "cairn"
    program = shlex.quote(str(script)) if os.access(script, os.X_OK) else "cairn"
    return f"`{program} install`"


def install_fix() -> str:
    return f"Run {install_command()} with the cairn you use now."


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The file's object, or None with a reason (None, None: no file)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path} cannot be read ({exc})"
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return None, f"{path} is not valid JSON ({exc})"
    return (data, None) if isinstance(data, dict) else (None, f"{path} does not hold a JSON object")


def _launcher_problem(settings: Settings, command: str, name: str) -> str | None:
    """Why `command` (from Claude Code's config) would not run this home's launcher `name`, or None."""
    expected = launcher.launcher_path(settings.home, name)
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if str(expected) not in words:
        return (
            f"it runs `{command}`, not this home's launcher {expected} "
            "(an install from before the launchers, or another CAIRN_HOME)"
        )
    if not os.access(expected, os.X_OK):
        return f"{expected} is missing or not executable"
    targets = launcher.read(settings.home)
    if targets is None:
        return f"{launcher.bin_dir(settings.home) / launcher.RECORD} is missing or unreadable"
    if gone := targets.missing():
        return f"the launcher's cairn is gone ({', '.join(gone)}): checkout moved or venv rebuilt?"
    return None


def _handler_commands(hooks: dict[str, Any], event: str, match: Any) -> list[str]:
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return []
    return [
        handler["command"]
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for handler in group["hooks"]
        if isinstance(handler, dict) and match(handler.get("command"))
    ]


def _plugin_problem(settings: Settings) -> str | None:
    """Why the enabled plugin would not run this home's launchers, or None."""
    if not claude_plugin.plugin_sees(settings.home):
        return (
            f"the plugin looks for its launchers in {claude_plugin.default_bin()}, not in this home's "
            f"{launcher.bin_dir(settings.home)}: set CAIRN_HOME={settings.home} in Claude Code's environment"
        )
    for name in (launcher.HOOK_LAUNCHER, launcher.RECALL_LAUNCHER, launcher.MCP_LAUNCHER):
        if problem := _launcher_problem(settings, str(launcher.launcher_path(settings.home, name)), name):
            return problem
    return None


def check_hooks(settings: Settings, path: Path | None = None) -> Finding:
    """cairn's capture hook on every indexing event (and recall, if installed, on both of its), runnable:
    from the settings file, or from the enabled plugin (and then not from the settings file too)."""
    path = (path or launcher.read_where(settings.home)[0] or installer.DEFAULT_SETTINGS).expanduser()
    data, error = _read_json(path)
    if error:
        return Finding("claude-hooks", False, error, f"Fix the JSON in {path}, then run {install_command()}.")
    hooks = (data or {}).get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    capture = {e: _handler_commands(hooks, e, installer.is_cairn_command) for e in installer.HOOK_EVENTS}
    recall = {e: _handler_commands(hooks, e, installer.is_recall_command) for e in installer.RECALL_EVENTS}
    if (plugin_id := claude_plugin.enabled_plugin()) is not None:
        if any(capture.values()) or any(recall.values()):
            return Finding(
                "claude-hooks",
                False,
                f"cairn's hooks are in {path} and in the Claude Code plugin {plugin_id}",
                f"Run {install_command()}: with the plugin enabled it takes them out of {path}.",
            )
        if problem := _plugin_problem(settings):
            return Finding(
                "claude-hooks", False, f"the plugin {plugin_id} would not run: {problem}", install_fix()
            )
        return Finding(
            "claude-hooks",
            True,
            f"capture and recall from the Claude Code plugin {plugin_id}, "
            f"through {launcher.bin_dir(settings.home)}",
        )
    absent = [event for event, commands in capture.items() if not commands]
    if absent:
        return Finding(
            "claude-hooks",
            False,
            f"cairn's capture hook is not in {path} for {', '.join(absent)}: those sessions are not captured",
            install_fix(),
        )
    recall_on = [event for event, commands in recall.items() if commands]
    if recall_on and len(recall_on) != len(recall):
        missing = sorted(set(recall) - set(recall_on))
        return Finding(
            "claude-hooks", False, f"the recall hook is missing on {', '.join(missing)}", install_fix()
        )
    checks = [(c, launcher.HOOK_LAUNCHER) for cs in capture.values() for c in cs]
    checks += [(c, launcher.RECALL_LAUNCHER) for cs in recall.values() for c in cs]
    for command, name in dict.fromkeys(checks):
        if problem := _launcher_problem(settings, command, name):
            return Finding("claude-hooks", False, f"a hook in {path} would not run: {problem}", install_fix())
    where = "capture and recall" if recall_on else "capture (recall not installed)"
    return Finding("claude-hooks", True, f"{where} in {path}, through {launcher.bin_dir(settings.home)}")


def check_mcp(settings: Settings, path: Path | None = None) -> Finding:
    """The `cairn` MCP server registered in `~/.claude.json`, with a command that runs."""
    path = (path or launcher.read_where(settings.home)[1] or installer.DEFAULT_CLAUDE_CONFIG).expanduser()
    data, error = _read_json(path)
    if error:
        return Finding("claude-mcp", False, error, f"Fix the JSON in {path}, then run {install_command()}.")
    servers = (data or {}).get("mcpServers")
    entry = servers.get(installer.MCP_SERVER_NAME) if isinstance(servers, dict) else None
    if (plugin_id := claude_plugin.enabled_plugin()) is not None:
        if entry is not None:
            return Finding(
                "claude-mcp",
                False,
                f"the MCP server 'cairn' is in {path} and in the Claude Code plugin {plugin_id}",
                f"Run {install_command()}: with the plugin enabled it takes it out of {path}.",
            )
        if problem := _plugin_problem(settings):
            return Finding(
                "claude-mcp", False, f"the plugin {plugin_id} would not serve: {problem}", install_fix()
            )
        return Finding("claude-mcp", True, f"served by the Claude Code plugin {plugin_id}")
    if not isinstance(entry, dict):
        return Finding(
            "claude-mcp", False, f"no '{installer.MCP_SERVER_NAME}' MCP server in {path}", install_fix()
        )
    args = entry.get("args") or []
    command = shlex.join([str(entry.get("command", "")), *map(str, args)])
    if problem := _launcher_problem(settings, command, launcher.MCP_LAUNCHER):
        return Finding("claude-mcp", False, f"the MCP server would not start: {problem}", install_fix())
    return Finding("claude-mcp", True, f"registered in {path} as {command}")


def check_launcher(settings: Settings) -> Finding:
    """The launchers exist, match what this cairn writes, and their recorded cairn still exists."""
    directory = launcher.bin_dir(settings.home)
    targets = launcher.read(settings.home)
    if targets is None:
        return Finding("launcher", False, f"no launchers in {directory}", install_fix())
    if gone := targets.missing():
        return Finding(
            "launcher",
            False,
            f"the launchers run a cairn that is gone (missing {', '.join(gone)}): was the checkout "
            "moved or its virtualenv rebuilt? Hooks log this and queue nothing",
            install_fix(),
        )
    if stale := launcher.stale(settings.home, targets):
        return Finding(
            "launcher",
            False,
            f"{', '.join(stale)} in {directory} missing, changed, or written by another cairn version",
            install_fix(),
        )
    here = str(Path(sys.executable).absolute())
    note = "" if targets.python == here else f" (this doctor runs {here}; `install` with it would switch)"
    return Finding("launcher", True, f"{directory} runs {targets.python}{note}")


def check_daemon(settings: Settings) -> Finding:
    """The daemon runs, or the interpreter the hooks start it with can import cairn."""
    from cairn.daemon.process import running_pid

    if (info := running_pid(settings)) is not None:
        return Finding("daemon", True, f"running (pid {info.pid})")
    targets = launcher.read(settings.home)
    python = targets.python if targets is not None else sys.executable
    if not os.access(python, os.X_OK):
        return Finding("daemon", False, f"not running, and {python} (which starts it) is gone", install_fix())
    cwd = (
        settings.home if settings.home.is_dir() else Path("/")
    )  # no `cairn` dir in cwd may shadow the package
    try:
        proc = subprocess.run(
            [python, "-c", "import cairn.daemon.process"],
            capture_output=True,
            text=True,
            timeout=DAEMON_IMPORT_TIMEOUT_S,
            cwd=cwd,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding("daemon", False, f"not running; {python} could not be run ({exc})", install_fix())
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no error output"])[-1]
        return Finding(
            "daemon",
            False,
            f"not running, and {python} cannot import cairn to start it ({last})",
            install_fix(),
        )
    return Finding("daemon", True, f"not running; the hooks start it with {python}")
