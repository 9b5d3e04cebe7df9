"""Issue 14, item 5: a full disk. Every write failure is one line saying what is full and that nothing
was lost — and nothing is: what a failed write was storing is stored, exactly once, by the next run.
Reading commands keep answering. A real SQLite "database or disk is full" (a page limit) for the
library, a real full tmpfs for the `cairn` processes."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.store.failures import describe_write_failure
from cairn.store.store import Store
from tests.helpers import hostile_disks
from tests.helpers.hostile_disks import error_lines, run_cairn, run_on_full_disk
from tests.store.ingesting import LARGE, MEDIUM, ingest

pytestmark = pytest.mark.process


async def test_a_full_database_rolls_back_and_the_next_run_stores_everything_once(settings: Settings) -> None:
    store = await Store.open(settings)
    try:
        await ingest(store, MEDIUM)
        before = await store.db.scalar("SELECT count(*) FROM messages")
        pages = await store.db.scalar("PRAGMA page_count")
        await store.db.conn.execute(f"PRAGMA max_page_count = {pages + 4}")  # room for a few pages only

        with pytest.raises(sqlite3.OperationalError, match="database or disk is full") as caught:
            await ingest(store, LARGE)
        line = describe_write_failure(caught.value, settings.home)
        assert line is not None and "disk is full" in line and "nothing was lost" in line
        assert "\n" not in line
        assert await store.db.scalar("SELECT count(*) FROM messages") == before
        assert await store.file_cursor(LARGE) is None  # the offset did not move past what was not stored

        await store.db.conn.execute("PRAGMA max_page_count = 1073741823")  # space freed
        added = (await ingest(store, LARGE)).messages_added
        again = (await ingest(store, LARGE)).messages_added
    finally:
        await store.close()

    reference_settings = Settings.load(settings.home.parent / "reference")
    reference = await Store.open(reference_settings)
    try:
        await ingest(reference, MEDIUM)
        await ingest(reference, LARGE)
        expected = await reference.db.scalar("SELECT count(*) FROM messages")
    finally:
        await reference.close()
    assert added > 0 and again == 0
    assert before + added == expected


@pytest.fixture
def home(demo_home: Path, tmp_path: Path) -> Path:
    return hostile_disks.copy_home(demo_home, tmp_path)


def _sections(stdout: str) -> dict[str, str]:
    """The script's output cut at its `=== name` lines."""
    found: dict[str, str] = {}
    name = ""
    for line in stdout.splitlines(keepends=True):
        if line.startswith("=== "):
            words = line[4:].split()
            if words[1:2] == ["exit"]:  # `=== NAME exit CODE`
                found[f"{words[0]} exit"], name = words[2], ""
            else:
                name = words[0]
                found[name] = ""
        elif name:
            found[name] += line
    return found


def test_on_a_full_disk_reads_answer_and_writes_fail_in_one_line_losing_nothing(
    home: Path, tmp_path: Path
) -> None:
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    shutil.copy(LARGE, transcripts / LARGE.name)
    script = f"""
        run() {{ name=$1; shift; echo "=== $name"; $CAIRN "$@" 2>&1; rc=$?; echo "=== $name exit $rc"; }}
        run stats stats --json
        run search search sqlite --mode keyword --json
        run hybrid search sqlite --json
        run show show m1 --json
        run sync sync --no-index --no-vectors "{transcripts}"
        run reindex reindex-vectors
        run daemon daemon start
        rm -f "$FILLER"
        run resync sync --no-index --no-vectors "{transcripts}"
        run after stats --json
    """
    proc = run_on_full_disk(home, script, size_mb=24)
    out = _sections(proc.stdout)
    assert "after exit" in out, proc.stdout + proc.stderr

    for name in ("stats", "search", "hybrid", "show"):
        assert out[f"{name} exit"].strip() == "0", out[name]
        assert "Traceback" not in out[name], out[name]  # issue 30: hybrid search printed Chroma's
    assert json.loads(out["stats"])["messages"] > 0
    assert json.loads(out["search"])["results"] and json.loads(out["hybrid"])["results"]
    assert json.loads(out["show"])["id"] == "m1"

    for name in ("sync", "reindex", "daemon"):
        assert out[f"{name} exit"].strip() == "1", out[name]
        assert "Traceback" not in out[name], out[name]
        errors = [line for line in error_lines(out[name]) if line.startswith("error:")]
        assert len(errors) == 1, out[name]
        assert "disk is full" in errors[0] and "nothing was lost" in errors[0], errors[0]

    # Space freed: the sync that failed is done by the next one, each message once.
    assert out["resync exit"].strip() == "0", out["resync"]
    reference = tmp_path / "reference"
    shutil.copytree(home, reference, symlinks=True)
    assert run_cairn(reference, "sync", "--no-index", "--no-vectors", str(transcripts)).returncode == 0
    expected = json.loads(run_cairn(reference, "stats", "--json").stdout)
    assert json.loads(out["after"])["messages"] == expected["messages"]


def test_a_full_disk_under_the_export_is_said_of_the_export_and_leaves_no_file(home: Path) -> None:
    """`cairn export` only reads the store, so a full disk it meets is the export's own. That failure
    reached the entry point's handler for store failures, which said *the store's* disk was full and
    that nothing was lost: the user was sent to free space under the wrong directory. Here the store
    sits on a disk with room and only the export's disk is full: each target says so in one line, no
    temporary file is left beside it, and a file the export would have replaced is as it was."""
    script = f"""
        DISK=$(dirname "$FILLER")
        export CAIRN_HOME="{home}"
        rm -f "$FILLER"
        printf 'an earlier export\\n' > "$DISK/earlier.jsonl"
        dd if=/dev/zero of="$FILLER" bs=64k 2>/dev/null
        run() {{ name=$1; shift; echo "=== $name"; $CAIRN "$@" 2>&1; rc=$?; echo "=== $name exit $rc"; }}
        run new export --out "$DISK/new.jsonl"
        run earlier export --out "$DISK/earlier.jsonl"
        echo "=== stdout"; $CAIRN export 2>&1 >"$DISK/stdout.jsonl"; echo "=== stdout exit $?"
        echo "=== files"; ls -A "$DISK"
        echo "=== kept"; cat "$DISK/earlier.jsonl"
        echo "=== store"; $CAIRN stats --json
        mount -t tmpfs -o size=1m,nr_inodes=1 tmpfs "$DISK/home"  # room, but not for one more file
        run inodes export --out "$DISK/home/new.jsonl"
        echo "=== inodeless"; ls -A "$DISK/home"
    """
    proc = run_on_full_disk(home, script, size_mb=8)
    out = _sections(proc.stdout)
    assert "inodeless" in out, proc.stdout + proc.stderr

    cases = {"new": "new.jsonl", "earlier": "earlier.jsonl", "stdout": "stdout", "inodes": "home/new.jsonl"}
    for name, shown in cases.items():
        assert out[f"{name} exit"].strip() == "1", out[name]
        assert "Traceback" not in out[name] and "Exception ignored" not in out[name], out[name]
        [line] = error_lines(out[name])
        assert line.startswith("error: writing the export to "), line
        assert line.split()[5].endswith(shown) and "its disk is full" in line, line
        assert "cairn store" not in line.replace("the cairn store is unchanged", ""), line
        assert "Free some space on that disk" in line and "--out" in line, line
    assert "choose another --out" in error_lines(out["new"])[0]
    assert "with --out FILE" in error_lines(out["stdout"])[0]

    assert sorted(out["files"].split()) == ["earlier.jsonl", "filler", "home", "stdout.jsonl"]
    assert out["inodeless"] == ""
    assert out["kept"] == "an earlier export\n"
    assert json.loads(out["store"])["messages"] > 0
