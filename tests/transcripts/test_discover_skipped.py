"""`scan_transcripts` says what it passed over and why (issue 14, item 8): no path is dropped silently."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cairn.transcripts.discover import not_a_transcript, scan_transcripts
from tests.helpers.paths import REAL_TRANSCRIPTS

MAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
HOOK_LOG = REAL_TRANSCRIPTS / "fasthooks" / "sample_hook_logs.jsonl"


def test_each_kind_of_non_transcript_gets_its_reason(tmp_path: Path) -> None:
    noise = tmp_path / "noise.bin"
    noise.write_bytes(os.urandom(4096))
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\nno json here\n")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    dangling = tmp_path / "gone.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    assert not_a_transcript(noise) == "it holds binary data, not JSON lines"
    assert not_a_transcript(text) == "none of its first 5 lines is JSON"
    assert "some other JSONL file" in (not_a_transcript(HOOK_LOG) or "")
    assert not_a_transcript(fifo) == "it is not a regular file"  # and the sniff did not block on it
    assert not_a_transcript(dangling) == "it does not exist (a broken symlink?)"
    assert not_a_transcript(MAIN) is None
    cut = tmp_path / "cut.jsonl"  # UTF-8 cut off by the sniff window is still text
    cut.write_bytes(b'{"type":"user","message":{"content":"' + "é".encode() * 40_000 + b'"}}\n')
    assert not_a_transcript(cut) is None
    garbled = tmp_path / "garbled.jsonl"  # a garbage line does not make a transcript binary
    garbled.write_bytes(b"\x00\xff garbage\n" + MAIN.read_bytes())
    assert not_a_transcript(garbled) is None


def test_a_scan_lists_files_and_skips_with_reasons(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(MAIN, project / "session.jsonl")
    shutil.copy(HOOK_LOG, project / "hooks.jsonl")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    (empty_dir / "readme.md").write_text("no transcripts here")
    noise = tmp_path / "noise.bin"
    noise.write_bytes(os.urandom(1024))

    scan = scan_transcripts([project, empty_dir, noise, project / "session.jsonl"])
    assert scan.files == [(project / "session.jsonl").resolve()]
    assert {(s.path, s.reason.split(" (")[0]) for s in scan.skipped} == {
        (project / "hooks.jsonl", "none of its first 5 lines is a Claude Code entry"),
        (empty_dir, "the directory holds no .jsonl files"),
        (noise, "it holds binary data, not JSON lines"),
    }
