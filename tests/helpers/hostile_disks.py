"""Real read-only homes and real full disks for tests, and the `cairn` command run against them.

A read-only home is a read-only bind mount and a full disk a small tmpfs, each made in a private mount
namespace (`unshare --mount`) so nothing outside the one child process sees it and nothing is left
mounted if a test dies. As root that needs only `unshare`; as another user, a user namespace that
maps the user to root in it (`unshare --user --map-root-user --mount`). Where neither works, a
non-root user gets a read-only home from `chmod` (which does not stop root, hence the mounts) and the
full-disk CLI tests are skipped; the library-level full-disk test needs no mount at all.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The console script a user runs, in this venv; `python -m cairn` runs the same `app()`.
_SCRIPT = Path(sys.executable).with_name("cairn")
CAIRN = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cairn"]

# Bind the home read-only over itself, then run the command ("$@") in that view.
_READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


@functools.cache
def namespace_prefix() -> tuple[str, ...] | None:
    """The argv prefix that runs a command in a private mount namespace, or None where none can be made."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for prefix in (
        (unshare, "--mount", "--propagation", "private"),
        (unshare, "--user", "--map-root-user", "--mount"),
    ):
        probe = subprocess.run(
            [*prefix, "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$(mktemp -d)"'],
            capture_output=True,
            timeout=30,
        )
        if probe.returncode == 0:
            return prefix
    return None


def cairn_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a `cairn` run on `home`: no real key, no other CAIRN_* setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_") and k != "ANTHROPIC_API_KEY"}
    return {
        **env,
        "CAIRN_HOME": str(home),
        "CAIRN_CLAUDE_PROJECTS_DIR": str(home.parent / "no-projects"),
        **extra,
    }


def run_cairn(home: Path, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """`cairn ARGS` on `home`, as a user runs it (exit status is the caller's to check)."""
    return subprocess.run(
        [*CAIRN, *args], capture_output=True, text=True, env=cairn_env(home, **env), timeout=timeout
    )


def run_read_only(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`cairn ARGS` on `home` made read-only: a read-only bind mount, else (not root) `chmod a-w`."""
    prefix = namespace_prefix()
    if prefix is not None:
        return subprocess.run(
            [*prefix, "sh", "-c", _READ_ONLY, "sh", str(home), *CAIRN, *args],
            capture_output=True,
            text=True,
            env=cairn_env(home),
            timeout=timeout,
        )
    if os.geteuid() == 0:
        pytest.skip(
            "running as root without mount namespaces: nothing can make a directory read-only to root"
        )
    modes = {path: path.stat().st_mode for path in (home, *home.rglob("*"))}
    try:
        for path, mode in modes.items():
            path.chmod(mode & ~0o222)
        return run_cairn(home, *args, timeout=timeout)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


def run_on_full_disk(
    home: Path, script: str, *, size_mb: int = 16, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the shell `script` with `$CAIRN` (the command) and `$HOME_DIR` (a copy of `home` on a
    tmpfs of `size_mb` MB that a filler file has filled to the last byte); `$FILLER` is that file.

    Skipped where no mount namespace can be made: a full disk cannot be had otherwise.
    """
    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("no mount namespace here (unshare), so no tmpfs can be mounted for a full disk")
    disk = home.parent / "full-disk"
    disk.mkdir()
    setup = f"""
        set -e
        mount -t tmpfs -o size={size_mb}m tmpfs "{disk}"
        cp -a "{home}" "{disk}/home"
        FILLER="{disk}/filler"
        dd if=/dev/zero of="$FILLER" bs=64k 2>/dev/null || true
        HOME_DIR="{disk}/home"
        CAIRN="{" ".join(CAIRN)}"
        export CAIRN_HOME="$HOME_DIR"
        set +e
    """
    return subprocess.run(
        [*prefix, "sh", "-c", setup + script],
        capture_output=True,
        text=True,
        env=cairn_env(disk / "home"),
        timeout=timeout,
    )


def error_lines(stderr: str) -> list[str]:
    """The lines a person reads on stderr (progress bars of rich leave blank ones)."""
    return [line for line in stderr.splitlines() if line.strip()]


def demo_home(factory: pytest.TempPathFactory) -> Path:
    """A home holding the demo session, synced, indexed and embedded by a real `cairn sync --demo`:
    made once per test run (the `demo_home` fixture), and copied for each test (`copy_home`)."""
    home = factory.mktemp("pristine") / "home"
    proc = run_cairn(home, "sync", "--demo")
    assert proc.returncode == 0, proc.stderr
    return home


def copy_home(home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(home, copy, symlinks=True)
    return copy
