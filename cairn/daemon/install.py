"""`cairn install`: put cairn's hooks into Claude Code's settings JSON and register `cairn mcp` as an MCP
server in Claude Code's user config (`~/.claude.json`), or take both out again.

There are two hooks. The capture hook (`hook.sh`, or `hook.py`) queues transcripts for indexing on
`HOOK_EVENTS`; the recall hook (`recall.py`) brings memory back into the session on `RECALL_EVENTS`
and is optional (`cairn install --no-recall`), so capture never depends on it.

The settings file is the user's, full of things cairn knows nothing about, so the edit is surgical:
only handlers whose command runs one of cairn's hook scripts are added or removed, everything else keeps its
value and order, an unchanged file is not rewritten, and a changed one is first copied to
`<file>.cairn-backup` (one per file: each change replaces cairn's previous backup) and then replaced
atomically (through a symlink, to its target, so dotfile setups keep working).

The same care applies to `~/.claude.json`, which Claude Code itself rewrites all the time: only the
`cairn` entry of its top-level `mcpServers` is touched, and the file is re-read just before it is
replaced, so a change Claude Code made meanwhile is merged rather than overwritten.

Hooks and the MCP server run through the launchers in `CAIRN_HOME/bin` (see `launcher.py`), which
`cairn install` rewrites for the install that runs it, so a moved checkout or rebuilt virtualenv is
reported instead of silently stopping capture. The commands are absolute, shell-quoted paths (Claude
Code runs them with a shell, from whatever directory the session is in); the launchers pin `CAIRN_HOME`,
since Claude Code's environment need not have it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cairn.config import DEFAULT_HOME, Settings
from cairn.daemon import launcher
from cairn.daemon.launcher import HookKind

HOOK_EVENTS = ("UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd")
# These events take a matcher (compaction trigger, end reason, session source); "" matches every one.
MATCHER_EVENTS = frozenset({"PreCompact", "SessionEnd", "SessionStart"})
HOOK_TIMEOUT_S = 10
# The recall hook gives up by itself within 300 ms; this is only Claude Code's backstop should it hang.
RECALL_EVENTS = ("SessionStart", "UserPromptSubmit")
RECALL_TIMEOUT_S = 3
MIN_SQLITE = (3, 32, 0)  # `.import --ascii` and upserts on a partial index

DEFAULT_SETTINGS = Path("~/.claude/settings.json")
# Claude Code's user-scope MCP servers live in `mcpServers` of this file, not in settings.json.
DEFAULT_CLAUDE_CONFIG = Path("~/.claude.json")
MCP_SERVER_NAME = "cairn"
# Attempts at replacing `~/.claude.json` when Claude Code keeps rewriting it under us.
MCP_WRITE_ATTEMPTS = 5

# The launchers' names, and the scripts an install before the launchers (or a hand-made hook) ran directly.
_CAPTURE_HOOK = re.compile(rf"cairn/daemon/hook\.(?:sh|py)\b|/{launcher.BIN_DIR}/{launcher.HOOK_LAUNCHER}\b")
_RECALL_HOOK = re.compile(rf"cairn/daemon/recall\.py\b|/{launcher.BIN_DIR}/{launcher.RECALL_LAUNCHER}\b")
# The one backup kept per edited file, beside it: the file as it was before cairn's latest change to it.
BACKUP_SUFFIX = ".cairn-backup"


class SettingsFileError(RuntimeError):
    """The settings file exists but is not a JSON object cairn can safely edit."""


@dataclass
class InstallReport:
    settings_path: str
    action: Literal["installed", "uninstalled", "unchanged"]
    events: list[str] = field(default_factory=list)
    backup: str | None = None
    command: str | None = None
    hook: HookKind | None = None
    # Where the recall hook is registered once this run is done (empty: not at all), and its command.
    recall_events: list[str] = field(default_factory=list)
    recall_command: str | None = None


@dataclass
class McpReport:
    config_path: str
    action: Literal["registered", "removed", "unchanged"]
    entry: dict[str, Any] | None = None
    backup: str | None = None


def is_cairn_command(command: object) -> bool:
    """Whether a handler's command runs cairn's capture hook (any install of it, from any path)."""
    return isinstance(command, str) and bool(_CAPTURE_HOOK.search(command))


def is_recall_command(command: object) -> bool:
    """Whether a handler's command runs cairn's recall hook (any install of it, from any path)."""
    return isinstance(command, str) and bool(_RECALL_HOOK.search(command))


def is_owned_command(command: object) -> bool:
    """Whether a handler's command runs either of cairn's hooks: the handlers install and uninstall own.

    `is_cairn_command` keeps meaning the capture hook alone, as it did before recall existed, so code
    that looks for the hook feeding the daemon does not pick up the recall hook instead.
    """
    return is_cairn_command(command) or is_recall_command(command)


def usable_sqlite3(candidate: str | None = None) -> str | None:
    """Absolute path of a sqlite3 CLI new enough for `hook.sh`, or None."""
    found = shutil.which(candidate or "sqlite3")
    if found is None:
        return None
    try:
        out = subprocess.run([found, "-version"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", out.stdout.strip())
    if match is None or tuple(int(p) for p in match.groups()) < MIN_SQLITE:
        return None
    return str(Path(found).absolute())


def write_launchers(
    settings: Settings, *, python: str | None = None, sqlite3: str | None = None, argv0: str | None = None
) -> launcher.Targets:
    """(Re)write `CAIRN_HOME/bin`'s launchers for this install and return what they now run.

    The capture launcher runs `hook.sh` when a usable sqlite3 CLI exists (the fast one; `sqlite3`
    None looks for one, "" means none), else `hook.py` under `python -S -E`. `python` (default: this
    interpreter) is also what the hooks start the daemon with.
    """
    cli = usable_sqlite3() if sqlite3 is None else sqlite3
    targets = launcher.current_targets(python=python, sqlite3=cli or None, argv0=argv0)
    launcher.write(settings.home, targets)
    return targets


def hook_command(settings: Settings) -> str:
    """The shell command Claude Code runs for capture: the home's `cairn-hook` launcher."""
    return launcher.command_for(settings.home, launcher.HOOK_LAUNCHER)


def recall_command(settings: Settings) -> str:
    """The shell command Claude Code runs for recall: the home's `cairn-recall` launcher."""
    return launcher.command_for(settings.home, launcher.RECALL_LAUNCHER)


def _handler(command: str, timeout: int = HOOK_TIMEOUT_S) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": timeout}


def _wanted(event: str, command: str | None, recall: str | None) -> list[dict[str, Any]]:
    """cairn's handlers as `event` should have them: capture first, then recall."""
    handlers = []
    if command is not None and event in HOOK_EVENTS:
        handlers.append(_handler(command))
    if recall is not None and event in RECALL_EVENTS:
        handlers.append(_handler(recall, RECALL_TIMEOUT_S))
    return handlers


def _group(event: str, handlers: list[dict[str, Any]]) -> dict[str, Any]:
    group: dict[str, Any] = {"matcher": ""} if event in MATCHER_EVENTS else {}
    group["hooks"] = handlers
    return group


def _load(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """The settings object and the file's original bytes (None when there is no file yet)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    if not raw.strip():
        return {}, raw
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SettingsFileError(
            f"{path} is not valid JSON ({exc}); fix it first, cairn left it as is"
        ) from exc
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} does not hold a JSON object; cairn left it as is")
    return data, raw


def _hooks_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsFileError(f"'hooks' in {path} is not an object; cairn left the file as is")
    return hooks


def _cairn_handlers(groups: list[Any]) -> list[Any]:
    return [
        handler
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for handler in group["hooks"]
        if isinstance(handler, dict) and is_owned_command(handler.get("command"))
    ]


def _without_cairn(groups: list[Any]) -> list[Any]:
    """`groups` minus cairn's handlers; a group is dropped only when that removal emptied it."""
    kept: list[Any] = []
    for group in groups:
        if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
            kept.append(group)
            continue
        handlers = [
            h for h in group["hooks"] if not (isinstance(h, dict) and is_owned_command(h.get("command")))
        ]
        if len(handlers) == len(group["hooks"]):
            kept.append(group)
        elif handlers:
            kept.append({**group, "hooks": handlers})
    return kept


def _event_groups(hooks: dict[str, Any], event: str, path: Path) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise SettingsFileError(f"hooks.{event} in {path} is not a list; cairn left the file as is")
    return groups


def _write(path: Path, data: dict[str, Any], original: bytes | None) -> str | None:
    """Back up the old file (if any) as `<name>.cairn-backup`, replacing cairn's previous backup, then
    atomically replace the file; the backup's path. One backup per file, not one per install."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600
    if original is not None:
        mode = path.stat().st_mode & 0o7777
        backup_path = path.with_name(f"{path.name}{BACKUP_SUFFIX}")
        _replace_atomically(backup_path, original, mode)
        backup = str(backup_path)
    _replace_atomically(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), mode)
    return backup


def _replace_atomically(path: Path, content: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _target(settings_path: Path) -> Path:
    """The file to edit: a symlinked settings file is edited where it really lives."""
    path = settings_path.expanduser().absolute()
    return path.resolve() if path.is_symlink() else path


def install(
    settings_path: Path, command: str, hook: HookKind = "sh", recall: str | None = None
) -> InstallReport:
    """Make `command` cairn's capture hook and `recall` (None: no recall) its recall hook, per event.

    Events already right are left untouched. Without `recall`, a recall hook an earlier install
    registered is taken out, so `--no-recall` also turns recall off where it was on; an event that
    then has no cairn handler left loses its cairn group (and the event, if cairn alone filled it).
    """
    path = _target(settings_path)
    data, original = _load(path)
    hooks = _hooks_table(data, path)
    changed: list[str] = []
    new_hooks = dict(hooks)
    for event in dict.fromkeys([*HOOK_EVENTS, *RECALL_EVENTS]):
        groups = _event_groups(hooks, event, path)
        wanted = _wanted(event, command, recall)
        if _cairn_handlers(groups) == wanted:
            continue
        kept = _without_cairn(groups)
        if wanted:
            new_hooks[event] = [*kept, _group(event, wanted)]
        elif kept:
            new_hooks[event] = kept
        else:
            del new_hooks[event]
        changed.append(event)
    recall_events = list(RECALL_EVENTS) if recall is not None else []
    report = InstallReport(
        str(path),
        "unchanged",
        changed,
        command=command,
        hook=hook,
        recall_events=recall_events,
        recall_command=recall,
    )
    if changed:
        report.action = "installed"
        report.backup = _write(path, {**data, "hooks": new_hooks}, original)
    return report


def uninstall(settings_path: Path) -> InstallReport:
    """Remove every cairn handler (from any event); containers only cairn filled are removed too."""
    path = _target(settings_path)
    data, original = _load(path)
    if original is None:
        return InstallReport(str(path), "unchanged")
    hooks = _hooks_table(data, path)
    changed: list[str] = []
    new_hooks = dict(hooks)
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not _cairn_handlers(groups):
            continue
        remaining = _without_cairn(groups)
        if remaining:
            new_hooks[event] = remaining
        else:
            del new_hooks[event]
        changed.append(event)
    report = InstallReport(str(path), "unchanged", changed)
    if changed:
        new_data = {**data, "hooks": new_hooks}
        if not new_hooks:
            del new_data["hooks"]
        report.action = "uninstalled"
        report.backup = _write(path, new_data, original)
    return report


def mcp_entry(settings: Settings) -> dict[str, Any]:
    """The `mcpServers.cairn` entry for `~/.claude.json`: the home's `cairn-mcp` launcher, a stdio server.

    Claude Code starts it without a shell and with its own PATH, hence the absolute path; `CAIRN_HOME`
    is named when non-default, so the entry says which memory it serves (the launcher pins it too).
    """
    command = str(launcher.launcher_path(settings.home, launcher.MCP_LAUNCHER))
    entry: dict[str, Any] = {"type": "stdio", "command": command, "args": []}
    if settings.home != DEFAULT_HOME.expanduser().resolve():
        entry["env"] = {"CAIRN_HOME": str(settings.home)}
    return entry


def _mcp_servers(data: dict[str, Any], path: Path) -> dict[str, Any]:
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingsFileError(f"'mcpServers' in {path} is not an object; cairn left the file as is")
    return servers


def _edit_mcp(
    config_path: Path, edit: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> tuple[Path, str | None, bool]:
    """Apply `edit` (the new `mcpServers`, or None for no change) to the file: `(path, backup, changed)`.

    The file is read again right before the atomic replace; if it changed since the first read
    (Claude Code saved its state meanwhile), the edit is redone on the new content.
    """
    path = _target(config_path)
    for _ in range(MCP_WRITE_ATTEMPTS):
        data, original = _load(path)
        servers = edit(_mcp_servers(data, path))
        if servers is None:
            return path, None, False
        new_data = {**data, "mcpServers": servers}
        if not servers:
            del new_data["mcpServers"]
        if _current_bytes(path) != original:
            continue
        return path, _write(path, new_data, original), True
    raise SettingsFileError(f"{path} kept changing while cairn tried to edit it; try again")


def _current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def install_mcp(config_path: Path, entry: dict[str, Any]) -> McpReport:
    """Make `entry` the `cairn` MCP server of Claude Code's user config; an identical one is left as is."""

    def edit(servers: dict[str, Any]) -> dict[str, Any] | None:
        if servers.get(MCP_SERVER_NAME) == entry:
            return None
        return {**servers, MCP_SERVER_NAME: entry}

    path, backup, changed = _edit_mcp(config_path, edit)
    return McpReport(str(path), "registered" if changed else "unchanged", entry, backup)


def uninstall_mcp(config_path: Path) -> McpReport:
    """Remove the `cairn` MCP server (only it); an `mcpServers` left empty is removed too."""

    def edit(servers: dict[str, Any]) -> dict[str, Any] | None:
        if MCP_SERVER_NAME not in servers:
            return None
        return {name: server for name, server in servers.items() if name != MCP_SERVER_NAME}

    path = _target(config_path)
    if not path.exists():
        return McpReport(str(path), "unchanged")
    path, backup, changed = _edit_mcp(path, edit)
    return McpReport(str(path), "removed" if changed else "unchanged", backup=backup)


class PurgeRefused(RuntimeError):
    """`CAIRN_HOME` cannot be deleted safely right now; the message says why and what to do."""


def _looks_like_a_cairn_home(home: Path) -> bool:
    return any((home / name).exists() for name in ("cairn.db", "config.toml", launcher.BIN_DIR, "chroma"))


def check_purgeable(settings: Settings) -> None:
    """Raise `PurgeRefused` unless `CAIRN_HOME` is a directory cairn made, not `/`, `~` or above it."""
    home = settings.home.resolve()
    user_home = Path.home().resolve()
    if home == Path(home.anchor) or home == user_home or home in user_home.parents:
        raise PurgeRefused(f"CAIRN_HOME is {home}: cairn deletes only its own directory, never that")
    if home.exists() and not _looks_like_a_cairn_home(home):
        raise PurgeRefused(
            f"{home} holds no cairn store, config or launcher: not deleting a directory cairn did not make"
        )


def purge(settings: Settings) -> bool:
    """Stop the daemon, then delete `CAIRN_HOME` and all it holds; whether there was anything to delete.

    Refuses (`PurgeRefused`) while another process (a backfill, an index) holds the store, since
    deleting the files under it would lose its work silently and leave it writing to deleted files.
    """
    from cairn.daemon import process
    from cairn.store.lock import StoreLock

    check_purgeable(settings)
    home = settings.home
    if not home.exists():
        return False
    process.stop(settings)
    holder = StoreLock(settings.lock_path).holder_pid()
    if holder is not None:
        raise PurgeRefused(f"process {holder} is using the store in {home}; stop it, then run this again")
    shutil.rmtree(home)
    return True
