"""Incremental reading: complete lines only, bad lines counted, restarts on truncation or replacement."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from cairn.transcripts import ReadResult, TranscriptNotFound, UnknownEntry, UserEntry, iter_entries, read_from
from cairn.transcripts.reader import MALFORMED_LINES_KEPT
from tests.helpers.paths import real_transcripts

from .plain import physical_lines, plain_lines


def _line(text: str, **extra: object) -> bytes:
    return (
        json.dumps({"type": "user", "message": {"role": "user", "content": text}, **extra}).encode() + b"\n"
    )


def _texts(result: ReadResult) -> list[str]:
    texts = []
    for read in result.entries:
        assert isinstance(read.entry, UserEntry)
        assert isinstance(read.entry.message.content, str)
        texts.append(read.entry.message.content)
    return texts


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_fixtures_read_cleanly(path: Path) -> None:
    result = read_from(path)
    expected = plain_lines(path)
    assert result.malformed == 0, result.malformed_lines
    assert (result.oversized, result.partial_bytes, result.restarted) == (0, 0, False)
    assert [read.line for read in result.entries] == [number for number, _ in expected]
    assert result.offset == result.size == path.stat().st_size
    assert result.line == physical_lines(path)
    data = path.read_bytes()
    for read, (_, obj) in zip(result.entries, expected, strict=True):
        assert json.loads(data[read.byte_start : read.byte_end]) == obj
        assert data[read.byte_end - 1 : read.byte_end] == b"\n" or read.byte_end == len(data)
        assert getattr(read.entry, "uuid", None) == obj.get("uuid")


def test_garbage_blank_lines_and_half_written_tail(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    half = b'{"type": "user", "message": {"content": "thi'
    path.write_bytes(
        _line("one")
        + b"\n"
        + b"garbage {{{\n"
        + b"   \n"
        + b"[1, 2, 3]\n"
        + b'{"type": "user", "message": {"content": "\xff"}}\n'
        + _line("two")
        + half
    )
    result = read_from(path)
    assert _texts(result) == ["one", "two"]
    assert [read.line for read in result.entries] == [1, 7]
    assert result.malformed == 3
    assert [line for line, _ in result.malformed_lines] == [3, 5, 6]
    assert all(reason for _, reason in result.malformed_lines)
    assert result.partial_bytes == len(half)
    assert result.offset == path.stat().st_size - len(half)
    assert result.line == 7

    again = read_from(path, result.offset, line=result.line, inode=result.inode)
    assert again.entries == [] and again.partial_bytes == len(half) and again.offset == result.offset

    with path.open("ab") as fh:
        fh.write(b'rd"}}\n')
    completed = read_from(path, result.offset, line=result.line, inode=result.inode)
    assert _texts(completed) == ["third"]
    assert completed.entries[0].line == 8
    assert completed.entries[0].byte_start == result.offset
    assert (completed.offset, completed.partial_bytes, completed.restarted) == (path.stat().st_size, 0, False)


def test_line_is_counted_when_not_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a") + b"\n\n" + _line("b") + _line("c"))
    first = read_from(path)
    offset_of_c = first.entries[2].byte_start
    resumed = read_from(path, offset_of_c, chunk_size=3)
    assert [read.line for read in resumed.entries] == [5]
    assert resumed.entries[0] == first.entries[2]


def test_truncated_file_restarts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a") + _line("b") + _line("c"))
    first = read_from(path)
    path.write_bytes(_line("new"))  # same inode, shorter
    result = read_from(path, first.offset, line=first.line, inode=first.inode)
    assert result.restarted
    assert result.inode == first.inode
    assert _texts(result) == ["new"]
    assert [read.line for read in result.entries] == [1]
    assert result.start_offset == 0


def test_replaced_file_restarts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a") + _line("b"))
    first = read_from(path)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(_line("x") + _line("y") + _line("z") + _line("w"))  # longer: offset still fits
    keep_alive = path.open("rb")  # keeps the old inode allocated so it cannot be reused
    try:
        os.replace(replacement, path)
        result = read_from(path, first.offset, line=first.line, inode=first.inode)
    finally:
        keep_alive.close()
    assert result.inode != first.inode
    assert result.restarted
    assert _texts(result) == ["x", "y", "z", "w"]


def test_rewritten_in_place_restarts_when_offset_is_mid_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a") + _line("b"))
    first = read_from(path)
    path.write_bytes(_line("a much longer first line than before") + _line("c"))
    result = read_from(path, first.offset, line=first.line, inode=first.inode)
    assert result.restarted
    assert _texts(result) == ["a much longer first line than before", "c"]


def test_unchanged_file_is_not_restarted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a"))
    first = read_from(path)
    with path.open("ab") as fh:
        fh.write(_line("b"))
    result = read_from(path, first.offset, line=first.line, inode=first.inode)
    assert not result.restarted
    assert _texts(result) == ["b"]
    assert result.entries[0].line == 2


def test_oversized_line_is_skipped_without_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    huge = b'{"type": "user", "message": {"content": "' + b"x" * (8 * 1024 * 1024) + b'"}}\n'
    path.write_bytes(_line("before") + huge + _line("after"))
    tracemalloc.start()
    try:
        result = read_from(path, max_line_bytes=4096, chunk_size=64 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _texts(result) == ["before", "after"]
    assert [read.line for read in result.entries] == [1, 3]
    assert result.oversized == 1 and result.malformed == 0
    assert result.offset == path.stat().st_size
    assert peak < 1024 * 1024, f"peak {peak} bytes: the oversized line was held in memory"


def test_oversized_line_still_being_written_is_left_unread(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("before") + b'{"type": "user", ' + b"y" * 500)
    result = read_from(path, max_line_bytes=100, chunk_size=64)
    assert _texts(result) == ["before"]
    assert result.oversized == 0
    assert result.partial_bytes == path.stat().st_size - result.offset > 100
    with path.open("ab") as fh:
        fh.write(b"\n" + _line("after"))
    resumed = read_from(
        path, result.offset, line=result.line, inode=result.inode, max_line_bytes=100, chunk_size=64
    )
    assert resumed.oversized == 1
    assert _texts(resumed) == ["after"]
    assert resumed.entries[0].line == 3


def test_line_exactly_at_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    line = _line("z" * 50)
    path.write_bytes(line + line)
    limit = len(line) - 1  # the limit excludes the newline
    result = read_from(path, max_line_bytes=limit, chunk_size=7)
    assert len(result.entries) == 2 and result.oversized == 0
    tighter = read_from(path, max_line_bytes=limit - 1, chunk_size=7)
    assert tighter.entries == [] and tighter.oversized == 2


def test_unknown_types_are_entries_not_malformed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"event": "Stop"}\n{"type": "future-thing", "a": 1}\n')
    result = read_from(path)
    assert result.malformed == 0
    assert all(isinstance(read.entry, UnknownEntry) for read in result.entries)
    assert len(result.entries) == 2


def test_malformed_lines_list_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"nope\n" * (MALFORMED_LINES_KEPT + 50))
    result = read_from(path)
    assert result.malformed == MALFORMED_LINES_KEPT + 50
    assert len(result.malformed_lines) == MALFORMED_LINES_KEPT
    assert result.offset == path.stat().st_size


def test_missing_file_raises_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    with pytest.raises(TranscriptNotFound, match=r"gone\.jsonl"):
        read_from(missing)
    with pytest.raises(FileNotFoundError):
        iter_entries(missing)


def test_negative_offset_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a"))
    with pytest.raises(ValueError, match="offset"):
        read_from(path, -1)


def test_stream_can_stop_early_and_resume_exactly(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a") + b"junk\n" + _line("b") + b"\n" + _line("c") + _line("d"))
    with iter_entries(path, chunk_size=5) as stream:
        taken = [next(stream), next(stream)]
        offset, line = stream.offset, stream.line
    assert taken[1].byte_end == offset and taken[1].line == line == 3
    assert stream.malformed == 1
    rest = read_from(path, offset, line=line)
    assert _texts(rest) == ["c", "d"]
    assert [read.line for read in rest.entries] == [5, 6]


def test_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("a").replace(b"\n", b"\r\n") + b"\r\n" + _line("b").replace(b"\n", b"\r\n"))
    result = read_from(path)
    assert _texts(result) == ["a", "b"]
    assert result.malformed == 0 and result.line == 3


def _age(path: Path, seconds: float = 60) -> None:
    """Make ``path`` look finished: last modified ``seconds`` ago."""
    then = path.stat().st_mtime - seconds
    os.utime(path, (then, then))


def test_unterminated_last_entry_of_a_finished_file_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("one") + _line("two").rstrip(b"\n"))
    _age(path)
    result = read_from(path)
    assert _texts(result) == ["one", "two"]
    assert [read.line for read in result.entries] == [1, 2]
    assert (result.offset, result.line, result.partial_bytes) == (path.stat().st_size, 2, 0)
    again = read_from(path, result.offset, line=result.line, inode=result.inode)
    assert (again.entries, again.restarted, again.offset, again.line) == ([], False, result.offset, 2)


def test_unterminated_last_entry_of_a_file_being_written_is_left(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("one") + _line("two").rstrip(b"\n"))
    result = read_from(path)
    assert _texts(result) == ["one"]
    assert result.partial_bytes == len(_line("two")) - 1
    assert result.line == 1


def test_half_written_tail_of_a_finished_file_is_never_consumed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("one") + _line("two")[:-5])
    _age(path)
    result = read_from(path)
    assert _texts(result) == ["one"]
    assert (result.offset, result.line, result.malformed) == (len(_line("one")), 1, 0)


@pytest.mark.parametrize(
    ("joint", "lines"), [(b"\n", [3, 4]), (b"", [2, 3])], ids=["late-newline", "no-newline"]
)
def test_a_file_that_grows_after_its_unterminated_entry_was_read(
    tmp_path: Path, joint: bytes, lines: list[int]
) -> None:
    """The writer may add the missing newline first or write straight on; nothing is read twice."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("one") + _line("two").rstrip(b"\n"))
    _age(path)
    first = read_from(path)
    with path.open("ab") as fh:
        fh.write(joint + _line("three") + _line("four"))
    second = read_from(path, first.offset, line=first.line, inode=first.inode)
    assert not second.restarted
    assert _texts(second) == ["three", "four"]
    assert [read.line for read in second.entries] == lines  # physical lines, as an editor shows them
    data = path.read_bytes()
    physical = data.split(b"\n")
    for read in second.entries:
        assert data[read.byte_start : read.byte_end].rstrip(b"\n") in physical[read.line - 1]
    assert second.line == path.read_bytes().count(b"\n") == read_from(path).line
    assert second.offset == path.stat().st_size
    third = read_from(path, second.offset, line=second.line, inode=second.inode)
    assert third.entries == [] and not third.restarted


def test_a_file_rewritten_after_its_unterminated_entry_was_read_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("one") + _line("two").rstrip(b"\n"))
    _age(path)
    first = read_from(path)
    path.write_bytes(_line("a much longer first line than before") + _line("b"))
    again = read_from(path, first.offset, line=first.line, inode=first.inode)
    assert again.restarted
    assert _texts(again) == ["a much longer first line than before", "b"]


def test_unterminated_json_that_is_no_entry_is_counted_once(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("one") + b'{"type": "user", "message": 5}')
    _age(path)
    result = read_from(path)
    assert _texts(result) == ["one"]
    assert (result.malformed, result.line, result.offset) == (1, 2, path.stat().st_size)
    again = read_from(path, result.offset, line=result.line, inode=result.inode)
    assert (again.malformed, again.entries, again.restarted) == (0, [], False)
