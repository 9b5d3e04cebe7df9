"""Issue 14, item 6: `CAIRN_HOME` holds what the user's sessions said, so it is theirs alone — the home
0700, every file 0600 — whatever umask the shell that runs cairn has; and `cairn doctor` says how to
close up a home made open (by an older cairn, a copy, a restore). Real `cairn` processes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.helpers.hostile_disks import CAIRN, cairn_env, run_cairn

pytestmark = pytest.mark.process


def _open_to_others(home: Path) -> list[str]:
    """Every path under `home` (itself included) with a group or other permission bit."""
    return [
        f"{path} {stat.filemode(path.lstat().st_mode)}"
        for path in (home, *home.rglob("*"))
        if not path.is_symlink() and path.lstat().st_mode & 0o077
    ]


def _run_with_umask(home: Path, *args: str, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    """`cairn ARGS` started from a shell whose umask lets everyone read what it creates."""
    return subprocess.run(
        [*CAIRN, *args],
        capture_output=True,
        text=True,
        env=cairn_env(home),
        timeout=600,
        preexec_fn=lambda: os.umask(umask),
    )


def test_a_fresh_home_and_everything_in_it_are_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sync = _run_with_umask(home, "sync", "--demo")  # SQLite and its -wal/-shm, Chroma, file index
    assert sync.returncode == 0, sync.stderr
    started = _run_with_umask(home, "daemon", "start")  # logs, pid file, socket, daemon's own files
    assert started.returncode == 0, started.stderr
    try:
        assert (home / "cairn.sock").exists()
        assert json.loads(_run_with_umask(home, "stats", "--json").stdout)["messages"] > 0  # via the socket
        assert (home / "cairn.db-wal").exists()  # the daemon holds the database open: its WAL files exist
        assert _open_to_others(home) == []
    finally:
        assert _run_with_umask(home, "daemon", "stop").returncode == 0
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "cairn.db").stat().st_mode) == 0o600
    assert (home / "chroma").is_dir() and (home / "logs").is_dir()
    assert _open_to_others(home) == []


def test_doctor_says_how_to_close_an_open_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cairn(home, "sync", "--demo", "--no-vectors", "--no-index").returncode == 0
    home.chmod(0o755)
    (home / "cairn.db").chmod(0o644)

    proc = run_cairn(home, "doctor", "--json")
    assert proc.returncode == 1
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "home")
    assert check["ok"] is False
    assert str(home / "cairn.db") in check["detail"] and "0644" in check["detail"]
    assert f"chmod -R go-rwx {home}" in check["fix"]

    subprocess.run(["chmod", "-R", "go-rwx", str(home)], check=True)  # what doctor said to run
    after = json.loads(run_cairn(home, "doctor", "--json").stdout)
    assert next(c for c in after["checks"] if c["name"] == "home")["ok"] is True


def test_a_home_anyone_may_write_is_refused_in_one_line(tmp_path: Path) -> None:
    """Whoever can write `CAIRN_HOME` can change what cairn remembers and injects: a home anyone may write
    (or another user's, below) is not used, in one line that says how to close it; doctor says it too."""
    home = tmp_path / "home"
    assert run_cairn(home, "sync", "--demo", "--no-vectors", "--no-index").returncode == 0
    home.chmod(0o777)

    proc = run_cairn(home, "search", "WAL")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "any user may write it (mode 777)" in line and f"chmod 700 {home}" in line
    doctor = run_cairn(home, "doctor", "--json")
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "home")
    assert check["ok"] is False

    home.chmod(0o700)
    assert run_cairn(home, "search", "WAL").returncode == 0


def test_a_home_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a directory another user's needs root")
    home = tmp_path / "home"
    assert run_cairn(home, "sync", "--demo", "--no-vectors", "--no-index").returncode == 0
    os.chown(home, 65534, 65534)  # nobody

    proc = run_cairn(home, "stats")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "belongs to another user (uid 65534)" in proc.stderr
