"""Property tests: arbitrary bytes never break the reader; reading while a writer appends in arbitrary
pieces gives exactly the entries of reading the finished file at once."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.transcripts import ReadEntry, read_from
from cairn.transcripts.reader import CHUNK_SIZE, SETTLE_SECONDS
from tests.helpers.paths import real_transcripts

_VALID = b'{"type": "user", "message": {"content": "hi"}}'
_LINE_PIECES = st.one_of(
    st.binary(max_size=40),
    st.just(_VALID),
    st.just(b'{"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": "x"}]}}'),
    st.just(b'{"type": "mystery"}'),
    st.just(b""),
    st.just(b"\xff\xfe{"),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(st.binary(max_size=600), st.lists(_LINE_PIECES, max_size=12).map(b"\n".join)),
    chunk_size=st.integers(min_value=1, max_value=64),
    max_line_bytes=st.integers(min_value=1, max_value=200),
)
def test_arbitrary_bytes_never_raise_and_every_line_is_accounted_for(
    data: bytes, chunk_size: int, max_line_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_bytes(data)
        result = read_from(path, chunk_size=chunk_size, max_line_bytes=max_line_bytes)

    complete = data[: data.rfind(b"\n") + 1]
    lines = complete.split(b"\n")[:-1]
    assert result.line == len(lines)
    assert result.offset == len(complete)
    assert result.partial_bytes == len(data) - len(complete)
    assert result.offset + result.partial_bytes == result.size == len(data)
    blank = sum(1 for line in lines if len(line) <= max_line_bytes and not line.strip())
    assert len(result.entries) + result.malformed + result.oversized + blank == len(lines)
    assert result.oversized == sum(1 for line in lines if len(line) > max_line_bytes)
    for read in result.entries:
        assert data[read.byte_end - 1 : read.byte_end] == b"\n"
        assert data[read.byte_start : read.byte_end].count(b"\n") == 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.lists(_LINE_PIECES, max_size=12).map(b"\n".join),
    chunk_size=st.integers(min_value=1, max_value=64),
)
def test_a_finished_files_unterminated_tail_is_consumed_only_when_it_is_one_json_object(
    data: bytes, chunk_size: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_bytes(data)
        result = read_from(path, chunk_size=chunk_size, settle_seconds=0)

    complete = data[: data.rfind(b"\n") + 1]
    tail = data[len(complete) :]
    try:
        consumed = isinstance(json.loads(tail), dict)
    except ValueError:
        consumed = False
    assert result.offset == (len(data) if consumed else len(complete))
    assert result.line == complete.count(b"\n") + consumed
    assert result.partial_bytes == len(data) - result.offset


def _read_incrementally(
    path: Path, data: bytes, cuts: list[int], chunk_size: int, settle_seconds: float
) -> list[ReadEntry]:
    """Simulate a writer appending ``data`` in pieces, reading after each append, then once finished."""
    entries: list[ReadEntry] = []
    offset, line, inode = 0, 0, None
    written = 0
    path.write_bytes(b"")
    for cut in [*cuts, len(data), None]:
        if cut is None:  # the writer is done: its file settles
            settle_seconds = 0
        else:
            with path.open("ab") as fh:
                fh.write(data[written:cut])
            written = cut
        result = read_from(
            path, offset, line=line, inode=inode, chunk_size=chunk_size, settle_seconds=settle_seconds
        )
        assert not result.restarted
        assert result.offset + result.partial_bytes == written
        entries.extend(result.entries)
        offset, line, inode = result.offset, result.line, result.inode
    assert line == read_from(path, settle_seconds=0).line
    return entries


@pytest.mark.parametrize("fixture", real_transcripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_appending_in_random_pieces_gives_the_same_entries(fixture: Path) -> None:
    """Pauses fall anywhere, also just before a newline; with ``settle_seconds=0`` every pause looks
    finished, so an entry whose newline comes later is read at once, and must not be read again."""
    data = fixture.read_bytes()
    whole = read_from(fixture).entries
    line_ends = [i for i in range(len(data)) if data[i] == 0x0A]
    cut = st.one_of(st.integers(min_value=0, max_value=len(data)), st.sampled_from(line_ends))

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        cuts=st.lists(cut, max_size=8).map(sorted),
        chunk_size=st.sampled_from([1021, 4096, 65536, CHUNK_SIZE]),
        settle_seconds=st.sampled_from([0, SETTLE_SECONDS]),
    )
    def check(cuts: list[int], chunk_size: int, settle_seconds: float) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            incremental = _read_incrementally(Path(tmp) / "t.jsonl", data, cuts, chunk_size, settle_seconds)
        # An entry read before its newline arrived ends one byte early; everything else is identical.
        assert [(r.entry, r.line, r.byte_start) for r in incremental] == [
            (r.entry, r.line, r.byte_start) for r in whole
        ]

    check()
