"""`cairn sync` names every path it skips and why (issue 14, item 8), in the summary and in --json.

A file of random bytes used to give "Syncing 0 transcript file(s)" and nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import cairn
from tests.helpers.paths import REAL_TRANSCRIPTS

MAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
HOOK_LOG = REAL_TRANSCRIPTS / "fasthooks" / "sample_hook_logs.jsonl"


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    """One transcript and one of each thing that is not one, including a file that cannot be read."""
    noise = tmp_path / "noise.bin"
    noise.write_bytes(os.urandom(8192))
    empty_dir = tmp_path / "no-jsonl"
    empty_dir.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(HOOK_LOG, logs / "hooks.jsonl")
    session = tmp_path / "session.jsonl"
    shutil.copy(MAIN, session)
    unreadable = tmp_path / "locked.jsonl"
    unreadable.write_text("{}\n")
    unreadable.chmod(0)
    if os.geteuid() == 0:  # root reads any file; /proc/self/mem fails to read at offset 0 for anyone
        unreadable = Path("/proc/self/mem")
    return {
        "noise": noise,
        "empty_dir": empty_dir,
        "hooks": logs / "hooks.jsonl",
        "unreadable": unreadable,
        "logs": logs,
        "session": session,
    }


def test_sync_lists_each_skipped_path_with_its_reason(cairn_home: Path, paths: dict[str, Path]) -> None:
    args = [str(paths[k]) for k in ("noise", "empty_dir", "logs", "unreadable", "session")]
    proc = cairn("sync", *args, "--no-index", "--no-vectors")
    skipped = [line for line in proc.stderr.splitlines() if line.startswith("skipped ")]
    assert skipped == [
        f"skipped {paths['noise']}: it holds binary data, not JSON lines",
        f"skipped {paths['empty_dir']}: the directory holds no .jsonl files",
        f"skipped {paths['hooks']}: none of its first 5 lines is a Claude Code entry (some other JSONL file)",
        f"skipped {paths['unreadable']}: it cannot be read: " + skipped[3].rsplit(": ", 1)[-1],
    ]
    assert skipped[3].rsplit(": ", 1)[-1] in {"Permission denied", "Input/output error"}
    out = " ".join(proc.stdout.split())  # rich wraps long lines
    assert out.startswith("Syncing 1 transcript file from ") and "(4 skipped)" in out
    assert "4 paths skipped (not transcripts)." in out

    again = json.loads(cairn("sync", *args, "--no-index", "--no-vectors", "--json").stdout)
    assert [s["path"] for s in again["skipped"]] == [
        str(paths[k]) for k in ("noise", "empty_dir", "hooks", "unreadable")
    ]
    assert all(s["reason"] for s in again["skipped"])
    assert [f["path"] for f in again["sync"]["files"]] == [str(paths["session"].resolve())]


def test_sync_of_nothing_but_non_transcripts_says_so_and_fails(
    cairn_home: Path, paths: dict[str, Path]
) -> None:
    proc = cairn("sync", str(paths["noise"]), check=False)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"skipped {paths['noise']}: it holds binary data, not JSON lines",
        "error: nothing to sync: none of the 1 given path holds a Claude Code transcript",
    ]
    assert "Syncing" not in proc.stdout
    as_json = cairn("sync", str(paths["noise"]), str(paths["empty_dir"]), "--json", check=False)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["skipped"] == [
        {"path": str(paths["noise"]), "reason": "it holds binary data, not JSON lines"},
        {"path": str(paths["empty_dir"]), "reason": "the directory holds no .jsonl files"},
    ]
    assert not (cairn_home / "cairn.db").exists(), "nothing was synced, so no store was made"
