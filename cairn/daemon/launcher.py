"""The stable launcher: shell scripts in `CAIRN_HOME/bin` that Claude Code runs instead of cairn's own files.

Claude Code's settings used to name the hook scripts and the interpreter inside the checkout or its
virtualenv, so moving the checkout or rebuilding the venv stopped capture without a word. Now the
settings name `CAIRN_HOME/bin/cairn-hook`, `cairn-recall` and `cairn-mcp`, which stay put; `cairn
install` (re)writes them with the absolute paths of the install that ran it (recorded, too, in
`launcher.json` beside them, which `cairn doctor` reads). When a recorded path no longer exists, a
launcher writes one line saying what is missing and the command that repairs it (`cairn install` run
from the new location) to `CAIRN_HOME/logs/hook.log` and to stderr; the hook launchers then exit 0,
since a hook must never block Claude Code, and the MCP one exits 1.

The capture hook runs on every prompt and answer, so its launcher adds no process: it checks its
targets with shell built-ins and sources `hook.sh` into its own shell (`hook.sh` ends in `exit 0`).
Every value is written shell-quoted; the scripts are 0700 and the record 0600, like the rest of the home.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

HookKind = Literal["sh", "python"]

BIN_DIR = "bin"
HOOK_LAUNCHER = "cairn-hook"
RECALL_LAUNCHER = "cairn-recall"
MCP_LAUNCHER = "cairn-mcp"
RECORD = "launcher.json"
#: Where `cairn install` put the hooks and the MCP server, when not at Claude Code's default paths
#: (`--settings`, `--claude-config`): `cairn doctor` and `cairn install --uninstall` look there first.
WHERE = "installed.json"
#: Present while cairn's hooks are in Claude Code's settings, so the cairn plugin, if enabled, steps aside
#: (see `cairn.daemon.plugin`).
SETTINGS_MARKER = "hooks-in-settings"
LAUNCHERS = (HOOK_LAUNCHER, RECALL_LAUNCHER, MCP_LAUNCHER)
# Bumped whenever the scripts' text changes; `cairn doctor` compares whole texts, this tells a reader which.
LAUNCHER_VERSION = 1


@dataclass(frozen=True)
class Targets:
    """What the launchers run: absolute paths of one cairn install, as `cairn install` found them."""

    python: str
    hook: str  # hook.sh (kind "sh") or hook.py (kind "python")
    kind: HookKind
    sqlite3: str | None  # the sqlite3 CLI hook.sh uses; None for the Python hook
    recall: str
    mcp: list[str]  # argv that starts `cairn mcp`: the console script, else `python -m cairn mcp`

    def required(self) -> dict[str, str]:
        """The paths that must exist for the launchers to work, by what each one is."""
        paths = {"python interpreter": self.python, "capture hook": self.hook, "recall hook": self.recall}
        if self.sqlite3:
            paths["sqlite3 CLI"] = self.sqlite3
        paths["cairn command"] = self.mcp[0]
        return paths

    def missing(self) -> list[str]:
        """The required paths that are gone (or, for programs, no longer executable)."""
        gone = []
        for what, path in self.required().items():
            executable = what in {"python interpreter", "sqlite3 CLI", "cairn command"}
            if not (os.path.isfile(path) and (not executable or os.access(path, os.X_OK))):
                gone.append(path)
        return gone


def package_file(name: str) -> Path:
    """Absolute path of one of the hook scripts shipped in `cairn.daemon`."""
    return Path(str(resources.files("cairn.daemon").joinpath(name))).absolute()


def mcp_argv(*, argv0: str | None = None, python: str | None = None) -> list[str]:
    """The argv that starts this install's `cairn mcp`, as absolute paths.

    The `cairn` script that is running (or the one beside this interpreter, in a virtualenv's `bin`) is
    the install the user just configured; failing both, `python -m cairn mcp` with this interpreter is.
    The script is preferred since `-m` would let a `cairn` directory in the session's cwd shadow the package.
    """
    interpreter = Path(python or sys.executable).absolute()
    candidates = [Path(argv0 if argv0 is not None else sys.argv[0]), interpreter.parent / "cairn"]
    for candidate in candidates:
        if candidate.name == "cairn" and candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate.absolute()), "mcp"]
    return [str(interpreter), "-m", "cairn", "mcp"]


def current_targets(
    *, python: str | None = None, sqlite3: str | None = None, argv0: str | None = None
) -> Targets:
    """The running install's targets: `hook.sh` when `sqlite3` (a usable CLI) is given, else `hook.py`."""
    interpreter = str(Path(python or sys.executable).absolute())
    mcp = mcp_argv(argv0=argv0, python=python)
    recall = str(package_file("recall.py"))
    if sqlite3:
        return Targets(interpreter, str(package_file("hook.sh")), "sh", sqlite3, recall, mcp)
    return Targets(interpreter, str(package_file("hook.py")), "python", None, recall, mcp)


def bin_dir(home: Path) -> Path:
    return home / BIN_DIR


def launcher_path(home: Path, name: str) -> Path:
    return bin_dir(home) / name


def command_for(home: Path, name: str) -> str:
    """The shell command Claude Code runs for launcher `name`: its absolute path, shell-quoted."""
    return shlex.quote(str(launcher_path(home, name)))


def _broken(home: Path, name: str, exit_code: int, consumes_stdin: bool) -> str:
    """The shell tail that reports missing targets (in `$missing`) in one line, then exits."""
    line = (
        f"{name}: the cairn install it runs is gone (missing:$missing) - was the checkout moved or its "
        "virtualenv rebuilt? Run 'cairn install' with the cairn you use now (e.g. /new/place/.venv/bin/cairn "
        "install) to point the hooks and MCP server at it"
    )
    drain = "cat >/dev/null 2>&1\n" if consumes_stdin else ""
    return (
        f"{drain}"
        f'line="$(date -u +%Y-%m-%dT%H:%M:%SZ) {line}"\n'
        'mkdir -p "$CAIRN_HOME/logs" 2>/dev/null &&\n'
        '    printf \'%s\\n\' "$line" >>"$CAIRN_HOME/logs/hook.log" 2>/dev/null\n'
        "printf '%s\\n' \"$line\" >&2\n"
        f"exit {exit_code}\n"
    )


def _check(var: str, test: str) -> str:
    return f'[ {test} "${var}" ] || missing="$missing ${var}"\n'


def render(home: Path, targets: Targets) -> dict[str, str]:
    """The text of each launcher for `targets`, by file name."""
    q = shlex.quote
    head = (
        "#!/bin/sh\n"
        "# Written by `cairn install`, which rewrites it; see cairn/daemon/launcher.py.\n"
        f"# launcher version {LAUNCHER_VERSION}\n"
        "umask 077\n"
        f"CAIRN_HOME={q(str(home))}\n"
        "export CAIRN_HOME\n"
        "missing=\n"
    )
    hook = head + f"CAIRN_PYTHON={q(targets.python)}\nexport CAIRN_PYTHON\nhook={q(targets.hook)}\n"
    hook += _check("CAIRN_PYTHON", "-x") + _check("hook", "-r")
    if targets.kind == "sh":
        hook += f"CAIRN_SQLITE3={q(targets.sqlite3 or '')}\nexport CAIRN_SQLITE3\n"
        hook += _check("CAIRN_SQLITE3", "-x")
        hook += 'if [ -z "$missing" ]; then\n    . "$hook"\n    exit 0\nfi\n'
    else:
        hook += 'if [ -z "$missing" ]; then\n    exec "$CAIRN_PYTHON" -S -E "$hook"\nfi\n'
    hook += _broken(home, HOOK_LAUNCHER, 0, consumes_stdin=True)

    recall = head + f"python={q(targets.python)}\nrecall={q(targets.recall)}\n"
    recall += _check("python", "-x") + _check("recall", "-r")
    recall += 'if [ -z "$missing" ]; then\n    exec "$python" -S -E "$recall"\nfi\n'
    recall += _broken(home, RECALL_LAUNCHER, 0, consumes_stdin=True)

    program, *args = targets.mcp
    mcp = head + f"program={q(program)}\n" + _check("program", "-x")
    mcp += f'if [ -z "$missing" ]; then\n    exec "$program" {" ".join(q(a) for a in args)} "$@"\nfi\n'
    mcp += _broken(home, MCP_LAUNCHER, 1, consumes_stdin=False)
    return {HOOK_LAUNCHER: hook, RECALL_LAUNCHER: recall, MCP_LAUNCHER: mcp}


def _write_atomic(path: Path, text: str, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write(home: Path, targets: Targets) -> bool:
    """(Re)write the launchers and their record for `targets`; whether anything changed on disk."""
    directory = bin_dir(home)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    wanted = {**render(home, targets), RECORD: json.dumps(asdict(targets), indent=2) + "\n"}
    changed = False
    for name, text in wanted.items():
        path = directory / name
        mode = 0o600 if name == RECORD else 0o700
        try:
            if path.read_text(encoding="utf-8") == text and path.stat().st_mode & 0o777 == mode:
                continue
        except OSError:
            pass
        _write_atomic(path, text, mode)
        changed = True
    return changed


def read(home: Path) -> Targets | None:
    """The targets `cairn install` last recorded, or None when there is no readable record."""
    try:
        data = json.loads((bin_dir(home) / RECORD).read_text(encoding="utf-8"))
        data["mcp"] = list(data["mcp"])
        return Targets(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_where(home: Path, settings_file: Path, claude_config: Path | None) -> None:
    """Record the settings file the hooks went into and the config the MCP server went into (None: not
    registered), as absolute paths."""
    directory = bin_dir(home)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    where = {
        "settings": str(settings_file.expanduser().absolute()),
        "claude_config": str(claude_config.expanduser().absolute()) if claude_config is not None else None,
    }
    _write_atomic(directory / WHERE, json.dumps(where, indent=2) + "\n", 0o600)


def read_where(home: Path) -> tuple[Path | None, Path | None]:
    """The settings file and MCP config `cairn install` last wrote to; None for what it did not record."""
    try:
        data = json.loads((bin_dir(home) / WHERE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    paths = [data.get(key) for key in ("settings", "claude_config")]
    settings_file, claude_config = (Path(p) if isinstance(p, str) and p else None for p in paths)
    return settings_file, claude_config


def stale(home: Path, targets: Targets) -> list[str]:
    """Launchers that are missing, not executable, or differ from what `targets` renders."""
    out = []
    for name, text in render(home, targets).items():
        path = launcher_path(home, name)
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            out.append(name)
            continue
        if current != text or not os.access(path, os.X_OK):
            out.append(name)
    return out


def remove(home: Path) -> bool:
    """Delete the launchers and their record (uninstall keeps only the memory); whether there were any."""
    directory = bin_dir(home)
    if not directory.exists():
        return False
    for name in (*LAUNCHERS, RECORD, WHERE, SETTINGS_MARKER):
        (directory / name).unlink(missing_ok=True)
    if not any(directory.iterdir()):
        shutil.rmtree(directory)
    return True
