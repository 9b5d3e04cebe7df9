"""What `cairn export --out PATH` does with a PATH that is not
a regular file.

The export used to be written to a new file beside PATH and renamed over it, whatever PATH was: as root,
`--out /dev/stdout` replaced the `/dev/stdout` symlink with a 0600 regular file, and `/dev/null` would
have gone the same way. The same happens to any symlink to a device or to the process's stdout, and to
a FIFO or a socket, so the tests make those in a temporary directory rather than touch `/dev`. A
directory or a missing parent directory gave a traceback. Now a device, a FIFO or the process's own
stdout is written in place, and a directory, a missing directory or a socket is refused in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli import cairn

HEADER = '{"format": "cairn-export"'


def _refusal(proc: subprocess.CompletedProcess[str]) -> str:
    """The one `error:` line a refused export printed (exit 2, no traceback, nothing on stdout)."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.process
def test_a_link_to_the_process_stdout_is_written_there_and_stays_a_link(
    cairn_home: Path, tmp_path: Path
) -> None:
    """What `/dev/stdout` is: a symlink to `/proc/self/fd/1` (a pipe here, as under a shell's `|`)."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    proc = cairn("export", "--out", str(link), real_process=True)
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert proc.stdout.startswith(HEADER)
    assert json.loads(proc.stdout.splitlines()[0])["format"] == "cairn-export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cairn-home", "stdout"], "no temporary file"


def test_a_link_to_a_device_is_written_in_place_and_stays_a_link(cairn_home: Path, tmp_path: Path) -> None:
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    proc = cairn("export", "--out", str(link))
    assert link.is_symlink() and os.readlink(link) == os.devnull
    assert " ".join(proc.stderr.split()) == f"exported 0 rows to {link}"  # (rich wraps long lines)


@contextlib.contextmanager
def _reader(fifo: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`cat FIFO`, waiting for a writer; killed at the end if it is still waiting."""
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        yield reader
    finally:
        if reader.poll() is None:
            reader.kill()
        reader.wait(timeout=60)


@pytest.mark.process
def test_a_fifo_is_streamed_to_its_reader(cairn_home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    with _reader(fifo) as reader:
        cairn("export", "--out", str(fifo))
        try:
            read, _ = reader.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the FIFO's reader got nothing: the export went somewhere else")
    assert read.decode().startswith(HEADER)
    assert fifo.is_fifo()


def test_a_socket_is_refused_and_left_as_it_was(cairn_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))
        line = _refusal(cairn("export", "--out", str(path), check=False))
        assert line == (
            f"error: --out {path} is a socket: name a regular file, or leave --out off to write to stdout"
        )
        assert path.is_socket()


def test_a_directory_is_refused_in_one_line_that_names_a_file_in_it(cairn_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "exports"
    target.mkdir()
    line = _refusal(cairn("export", "--out", str(target), check=False))
    assert (
        line
        == f"error: --out {target} is a directory: name a file in it, e.g. --out {target}/cairn-export.jsonl"
    )
    assert list(target.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["exports"]


def test_a_missing_directory_is_refused_in_one_line_that_says_to_create_it(
    cairn_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "nope" / "export.jsonl"
    line = _refusal(cairn("export", "--out", str(target), check=False))
    parent = tmp_path / "nope"
    assert line == (
        f"error: --out {target}: the directory {parent} does not exist; create it (mkdir -p {parent}) "
        "or choose another path"
    )
    assert not parent.exists()
