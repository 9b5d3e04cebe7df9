"""`cairn install`: put cairn's hooks into Claude Code's settings JSON and register `cairn mcp` as an MCP
server in Claude Code's user config (`~/.claude.json`), or take both out again.

There are two hooks. The capture hook (`hook.sh`, or `hook.py`) queues transcripts for indexing on
`HOOK_EVENTS`; the recall hook (`recall.py`) brings memory back into the session on `RECALL_EVENTS`
and is optional (`cairn install --no-recall`), so capture never depends on it.

Both files are the user's (and Claude Code's), full of things cairn knows nothing about, so cairn
leaves them as it found them:
- Only cairn's own entries change: handlers whose command runs one of cairn's hook scripts, and the
  `cairn` entry of the top-level `mcpServers`. They are spliced into the text as the smallest edit,
  in the file's own indentation and separators: every other byte stays, the final newline and the
  user's own hooks and MCP servers beside cairn's included (see `jsonedit`). An unchanged file is not
  rewritten.
- The original is kept, never overwritten by an installed version: before the first change, a file
  without cairn's entries is copied byte for byte to `<file>.cairn-backup`, and a file that did not
  exist is noted in `<file>.cairn-created`. Later installs, which find cairn's entries in the file,
  keep that backup.
- Uninstalling puts the original's exact bytes back when the file minus cairn's entries is the
  original; deletes a file cairn created (and the directories it made for it, if empty) when only
  cairn's entries are in it; and otherwise, when the user or Claude Code changed the file since, cuts
  out cairn's entries alone, so their later edits survive (see `_uninstall_member`). Then the backup
  and the note go.
- Files are replaced atomically (through a symlink, to its target, so dotfile setups keep working),
  and re-read just before the replace: a change Claude Code made meanwhile (it rewrites
  `~/.claude.json` all the time) is merged rather than overwritten.

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
from cairn.daemon import jsonedit, launcher
from cairn.daemon.launcher import HookKind
from cairn.errors import Failure, Refusal

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
# Attempts at replacing a file (`~/.claude.json`, mostly) when Claude Code keeps rewriting it under us.
WRITE_ATTEMPTS = 5

# The launchers' names, and the scripts an install before the launchers (or a hand-made hook) ran directly.
_CAPTURE_HOOK = re.compile(rf"cairn/daemon/hook\.(?:sh|py)\b|/{launcher.BIN_DIR}/{launcher.HOOK_LAUNCHER}\b")
_RECALL_HOOK = re.compile(rf"cairn/daemon/recall\.py\b|/{launcher.BIN_DIR}/{launcher.RECALL_LAUNCHER}\b")
# Beside each file cairn has written into, one of: the original's bytes (the file before cairn's entries
# went in), or a note that there was no file before cairn created it. Uninstall removes either.
BACKUP_SUFFIX = ".cairn-backup"
CREATED_SUFFIX = ".cairn-created"


# What uninstall did to a file: put the original's bytes back, deleted the file cairn had created, or
# cut cairn's entries out of a file edited since the install.
Undo = Literal["restored", "deleted", "edited"]


class SettingsFileError(Failure):
    """The settings file exists but is not a JSON object cairn can safely edit."""


@dataclass
class InstallReport:
    settings_path: str
    action: Literal["installed", "uninstalled", "unchanged"]
    events: list[str] = field(default_factory=list)
    # Install: the backup holding the original (None: no file before, or no change); uninstall: a
    # backup left because the file itself was gone.
    backup: str | None = None
    created: bool = False  # install made the file (uninstall deletes it again)
    undo: Undo | None = None  # what uninstall did to the file
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
    created: bool = False
    undo: Undo | None = None


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


@dataclass
class _File:
    """A JSON settings file as read: its bytes and text (None when there is no file) and its object."""

    path: Path
    raw: bytes | None
    text: str | None
    data: dict[str, Any]


def _load(path: Path) -> _File:
    """The file as it is now; `SettingsFileError` (one line, file untouched) when it is not a JSON object."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return _File(path, None, None, {})
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsFileError(
            f"{path} is not UTF-8 text ({exc}); fix it first, cairn left it as is"
        ) from exc
    if not text.strip():
        return _File(path, raw, text, {})
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsFileError(
            f"{path} is not valid JSON ({exc}); fix it first, cairn left it as is"
        ) from exc
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} does not hold a JSON object; cairn left it as is")
    return _File(path, raw, text, data)


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


def _hooks_without_cairn(hooks: dict[str, Any]) -> dict[str, Any]:
    """`hooks` minus cairn's handlers, in order; an event is dropped only when that removal emptied it."""
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not _cairn_handlers(groups):
            kept[event] = groups
        elif remaining := _without_cairn(groups):
            kept[event] = remaining
    return kept


def _servers_without_cairn(servers: dict[str, Any]) -> dict[str, Any]:
    return {name: server for name, server in servers.items() if name != MCP_SERVER_NAME}


def _event_groups(hooks: dict[str, Any], event: str, path: Path) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise SettingsFileError(f"hooks.{event} in {path} is not a list; cairn left the file as is")
    return groups


@dataclass(frozen=True)
class _Owned:
    """The one top-level member of a file that cairn writes into, and how to take cairn's entries out."""

    key: str
    without: Callable[[dict[str, Any]], dict[str, Any]]

    def has_cairn(self, data: dict[str, Any]) -> bool:
        value = data.get(self.key)
        return isinstance(value, dict) and self.without(value) != value

    def stripped(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` minus cairn's entries, in order; the member goes when cairn's removal emptied it."""
        if not self.has_cairn(data):
            return data
        value = self.without(data[self.key])
        return {k: (value if k == self.key else v) for k, v in data.items() if k != self.key or value}

    def bare(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` minus cairn's entries and every empty list or object in the member (and the member, if
        that leaves it empty): an empty container means the same as none, so comparisons ignore them."""
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key == self.key and isinstance(value, dict):
                value = {k: v for k, v in self.without(value).items() if v not in ([], {})}
                if not value:
                    continue
            out[key] = value
        return out


_HOOKS = _Owned("hooks", _hooks_without_cairn)
_MCP = _Owned("mcpServers", _servers_without_cairn)


def _same(a: Any, b: Any) -> bool:
    """Equal values with keys in the same order (a reordering is an edit too)."""
    return json.dumps(a) == json.dumps(b)


def backup_path(path: Path) -> Path:
    """Where the original of `path` (the file as it was before cairn's entries went in) is kept."""
    return path.with_name(f"{path.name}{BACKUP_SUFFIX}")


def created_marker(path: Path) -> Path:
    """The note cairn leaves beside a file it created (there was no original), naming the directories
    it created for it."""
    return path.with_name(f"{path.name}{CREATED_SUFFIX}")


def _file_mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o600


def _keep_original(file: _File, owned: _Owned) -> str | None:
    """Before cairn writes into `file`, make sure the version without cairn's entries is kept.

    A file with none of cairn's entries is the original: its bytes become `<file>.cairn-backup`
    (replacing an older one, which the user's own later version supersedes). A missing file is
    recorded as `<file>.cairn-created`, with the directories about to be made for it. A file that
    already holds cairn's entries is an installed version and never becomes the backup: the one an
    earlier install kept stays. Returns the backup's path, if there is one.
    """
    path = file.path
    backup, marker = backup_path(path), created_marker(path)
    if file.raw is None:
        directories = _directories_to_make(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not marker.exists():
            note = {"created_by": "cairn install", "directories": [str(d) for d in directories]}
            _replace_atomically(marker, (json.dumps(note, indent=2) + "\n").encode(), 0o600)
        backup.unlink(missing_ok=True)
        return None
    if not owned.has_cairn(file.data):
        if _current_bytes(backup) != file.raw:
            _replace_atomically(backup, file.raw, _file_mode(path))
        marker.unlink(missing_ok=True)
    return str(backup) if backup.exists() else None


def _clean_original(path: Path, owned: _Owned) -> dict[str, Any] | None:
    """The kept original's object, when there is a backup that parses and holds none of cairn's entries
    (a backup an older cairn made of an installed version does not count), else None."""
    raw = _current_bytes(backup_path(path))
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return None
    return data if isinstance(data, dict) and not owned.has_cairn(data) else None


def _noted_directories(marker: Path) -> list[Path]:
    """The directories a created-file note says cairn made, outermost first."""
    try:
        note = json.loads(marker.read_text(encoding="utf-8"))
        return [Path(d) for d in note.get("directories", []) if isinstance(d, str)]
    except (OSError, ValueError, AttributeError):
        return []


def _directories_to_make(path: Path) -> list[Path]:
    """The directories cairn makes for `path`, outermost first: those missing now, and those it made
    for another file it created beside it (so whichever of the two goes last takes them along)."""
    missing = [d for d in [*reversed(path.parent.parents), path.parent] if not d.exists()]
    for sibling in path.parent.glob(f"*{CREATED_SUFFIX}") if path.parent.exists() else []:
        missing += [d for d in _noted_directories(sibling) if d not in missing]
    return sorted(missing, key=lambda d: len(d.parts))


def _forget_created(path: Path) -> None:
    """Remove the created-file note and, innermost first, each directory it names that is now empty."""
    marker = created_marker(path)
    directories = _noted_directories(marker)
    marker.unlink(missing_ok=True)
    for directory in reversed(directories):
        try:
            directory.rmdir()  # only an empty one: whatever else landed there since keeps it
        except OSError:
            break


def _install_member(
    config_path: Path, owned: _Owned, edit: Callable[[_File], dict[str, Any] | None]
) -> tuple[Path, str | None, bool]:
    """Set `owned.key` to what `edit` returns (None: no change): `(path, backup, changed)`.

    Only that member's text changes (see `jsonedit`). The file is read again right before the
    atomic replace; if it changed since the first read (Claude Code saved its state meanwhile), the
    edit is redone on the new content.
    """
    path = _target(config_path)
    for _ in range(WRITE_ATTEMPTS):
        file = _load(path)
        value = edit(file)
        if value is None:
            return path, None, False
        text = jsonedit.set_member(file.text, owned.key, value)
        if _current_bytes(path) != file.raw:
            continue
        mode = _file_mode(path)
        backup = _keep_original(file, owned)
        _replace_atomically(path, text.encode(), mode)
        return path, backup, True
    raise SettingsFileError(f"{path} kept changing while cairn tried to edit it; try again")


def _uninstall_member(
    config_path: Path, owned: _Owned, check: Callable[[_File], None]
) -> tuple[Path, Undo | None, str | None]:
    """Take cairn's entries out of the file: `(path, what was done to it, a backup left in place)`.

    Restoring the original is the goal, but never at the cost of an edit the user made after the
    install: old bytes put back over their change would silently lose it. So the rule is:
    - the file minus cairn's entries equals the kept original (ignoring empty containers) → the
      original's exact bytes are put back ("restored");
    - cairn created the file and nothing but cairn's entries is in it → it is deleted, with the
      directories cairn made for it if they are empty ("deleted");
    - otherwise (edited since, by the user or by Claude Code) only cairn's entries are cut out, in the
      file's own formatting ("edited").
    The backup and the created-file note are removed afterwards: the file is the user's again. A file
    the user deleted since the install stays deleted, and its backup stays beside it for them.
    """
    path = _target(config_path)
    for _ in range(WRITE_ATTEMPTS):
        file = _load(path)
        if file.raw is None:
            _forget_created(path)
            backup = backup_path(path)
            return path, None, str(backup) if backup.exists() else None
        check(file)
        cleaned = owned.stripped(file.data)
        original = _clean_original(path, owned)
        content: bytes | None
        if original is not None and _same(owned.bare(original), owned.bare(cleaned)):
            undo: Undo | None = "restored"
            content = _current_bytes(backup_path(path))
        elif original is None and created_marker(path).exists() and not owned.bare(cleaned):
            undo, content = "deleted", None
        elif owned.has_cairn(file.data) and file.text is not None:
            if owned.key in cleaned:
                edited = jsonedit.set_member(file.text, owned.key, cleaned[owned.key])
            else:
                edited = jsonedit.delete_member(file.text, owned.key)
            undo, content = "edited", edited.encode()
        else:
            undo, content = None, file.raw
        if _current_bytes(path) != file.raw:
            continue
        if content is None:
            path.unlink()
        elif content != file.raw:
            _replace_atomically(path, content, _file_mode(path))
        else:
            undo = None
        backup_path(path).unlink(missing_ok=True)
        _forget_created(path)
        return path, undo, None
    raise SettingsFileError(f"{path} kept changing while cairn tried to edit it; try again")


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


def _current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


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
    changed: list[str] = []

    def edit(file: _File) -> dict[str, Any] | None:
        hooks = _hooks_table(file.data, file.path)
        changed.clear()
        new_hooks = dict(hooks)
        for event in dict.fromkeys([*HOOK_EVENTS, *RECALL_EVENTS]):
            groups = _event_groups(hooks, event, file.path)
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
        return new_hooks if changed else None

    path, backup, wrote = _install_member(settings_path, _HOOKS, edit)
    return InstallReport(
        str(path),
        "installed" if wrote else "unchanged",
        list(changed) if wrote else [],
        backup=backup,
        created=wrote and created_marker(path).exists(),
        command=command,
        hook=hook,
        recall_events=list(RECALL_EVENTS) if recall is not None else [],
        recall_command=recall,
    )


def uninstall(settings_path: Path) -> InstallReport:
    """Take every cairn handler out (from any event), as `_uninstall_member` describes."""
    events: list[str] = []

    def check(file: _File) -> None:
        hooks = _hooks_table(file.data, file.path)
        events[:] = [e for e, groups in hooks.items() if isinstance(groups, list) and _cairn_handlers(groups)]

    path, undo, backup = _uninstall_member(settings_path, _HOOKS, check)
    return InstallReport(
        str(path), "uninstalled" if undo else "unchanged", events if undo else [], backup=backup, undo=undo
    )


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


def install_mcp(config_path: Path, entry: dict[str, Any]) -> McpReport:
    """Make `entry` the `cairn` MCP server of Claude Code's user config; an identical one is left as is."""

    def edit(file: _File) -> dict[str, Any] | None:
        servers = _mcp_servers(file.data, file.path)
        if servers.get(MCP_SERVER_NAME) == entry:
            return None
        return {**servers, MCP_SERVER_NAME: entry}

    path, backup, changed = _install_member(config_path, _MCP, edit)
    return McpReport(
        str(path),
        "registered" if changed else "unchanged",
        entry,
        backup,
        created=changed and created_marker(path).exists(),
    )


def uninstall_mcp(config_path: Path) -> McpReport:
    """Remove the `cairn` MCP server (only it), as `_uninstall_member` describes."""
    path, undo, backup = _uninstall_member(config_path, _MCP, lambda file: _mcp_servers(file.data, file.path))
    return McpReport(str(path), "removed" if undo else "unchanged", backup=backup, undo=undo)


class PurgeRefused(Refusal):
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


# Opting in to indexing with the user's own Claude Code: nothing spends their plan unasked.

#: The answers `cairn install` was given, kept in CAIRN_HOME so a second install does not ask again
#: (uninstall keeps it with the config; `--purge` deletes both).
ANSWERS_FILE = "install-answers.json"
CLAUDE_CODE_QUESTION = "claude_code"


def budget_words(settings: Settings) -> str:
    """The daily token budget as the question and the summaries say it."""
    budget = settings.daily_token_budget
    return f"at most {budget:,} tokens per day" if budget else "with no daily limit (daily_token_budget = 0)"


def claude_code_question(settings: Settings) -> str:
    """The one question `cairn install` asks before cairn may spend the user's plan."""
    return (
        "Index with your Claude Code login? It uses your plan's tokens, "
        f"{budget_words(settings)} (daily_token_budget)"
    )


def claude_code_available() -> bool:
    """Whether choosing `claude-code` could work here: the optional SDK, or at least a `claude` on PATH."""
    from cairn.agent.claude_code_cli import sdk_installed

    return sdk_installed() or shutil.which("claude") is not None


def read_answers(home: Path) -> dict[str, Any]:
    """The answers recorded in CAIRN_HOME, `{}` when none (or the file is unreadable: then ask again)."""
    try:
        data = json.loads((home / ANSWERS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_answer(home: Path, question: str, answer: str) -> None:
    """Keep `answer` to `question`, so no later `cairn install` asks it again."""
    from datetime import UTC, datetime

    answers = read_answers(home)
    answers[question] = {"answer": answer, "at": datetime.now(UTC).isoformat(timespec="seconds")}
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    _replace_atomically(home / ANSWERS_FILE, (json.dumps(answers, indent=2) + "\n").encode(), 0o600)


def should_ask_about_claude_code(settings: Settings) -> bool:
    """Whether `cairn install` may offer `claude-code`: no model is configured (CAIRN_MODEL or
    config.toml), the question was never answered here, and Claude Code is there to be chosen.

    The terminal and the flags (`--no-ask`, `--yes`, `--model`) are the command's to check.
    """
    if settings.model is not None:
        return False
    if CLAUDE_CODE_QUESTION in read_answers(settings.home):
        return False
    return claude_code_available()


def set_model(settings: Settings, name: str) -> bool:
    """Write `model = NAME` into the config file (every other byte of it kept); whether it changed."""
    from cairn.config import write_setting

    return write_setting(settings.config_path, "model", name)
