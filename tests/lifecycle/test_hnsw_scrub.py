"""The unused slots of Chroma's HNSW files are zeroed after a forget; what Chroma reads stays the same.

Real Chroma in a temp dir. Chroma 1.5 writes an empty index's slots from uninitialised memory (a daemon's
heap once put a forgotten project's path into `length.bin`); the test plants such bytes where Chroma does.
"""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np

from cairn.lifecycle.hnsw_scrub import _HEADER, scrub_segments

PHRASE = b'invalid type: string "/home/dev/acme-api", expected i64'


def _collection(path: Path, count: int) -> tuple[list[list[str]], np.ndarray]:
    """A collection of `count` random vectors; the ids its first three vectors find."""
    client = chromadb.PersistentClient(path=str(path))
    things = client.get_or_create_collection("things", embedding_function=None)
    vectors = np.random.default_rng(7).normal(size=(count, 384)).astype(np.float32)
    for start in range(0, count, 500):
        chunk = vectors[start : start + 500]
        things.add(ids=[str(start + i) for i in range(len(chunk))], embeddings=chunk)
    return things.query(query_embeddings=vectors[:3], n_results=5)["ids"], vectors


def _requery(path: Path, vectors: np.ndarray) -> list[list[str]]:
    client = chromadb.PersistentClient(path=str(path))
    return client.get_collection("things").query(query_embeddings=vectors[:3], n_results=5)["ids"]


def _segment(path: Path) -> Path:
    (header,) = path.glob("*/header.bin")
    return header.parent


def test_an_empty_index_loses_the_memory_chroma_wrote_into_it(tmp_path: Path) -> None:
    before, vectors = _collection(tmp_path, 20)
    segment = _segment(tmp_path)
    count = _HEADER.unpack_from((segment / "header.bin").read_bytes())[3]
    assert count == 0, "a small collection's index has no elements yet: all its slots are unused"
    for name in ("length.bin", "data_level0.bin"):
        raw = bytearray((segment / name).read_bytes())
        raw[16 : 16 + len(PHRASE)] = PHRASE
        (segment / name).write_bytes(bytes(raw))
    header = (segment / "header.bin").read_bytes()

    assert scrub_segments(tmp_path) == 1
    for name in ("length.bin", "data_level0.bin"):
        assert PHRASE not in (segment / name).read_bytes()
        assert set((segment / name).read_bytes()) == {0}
    assert (segment / "header.bin").read_bytes() == header
    assert _requery(tmp_path, vectors) == before


def test_an_index_with_elements_is_left_as_chroma_reads_it(tmp_path: Path) -> None:
    before, vectors = _collection(tmp_path, 1500)
    segment = _segment(tmp_path)
    assert _HEADER.unpack_from((segment / "header.bin").read_bytes())[3] > 0
    files = {p.name: p.read_bytes() for p in segment.iterdir()}
    scrub_segments(tmp_path)
    assert {p.name: p.read_bytes() for p in segment.iterdir()} == files, "no unused slot was written"
    assert _requery(tmp_path, vectors) == before


def test_files_of_another_shape_are_left_alone(tmp_path: Path) -> None:
    segment = tmp_path / "segment"
    segment.mkdir()
    (segment / "header.bin").write_bytes(b"\x02" + bytes(99))
    (segment / "length.bin").write_bytes(PHRASE)
    (segment / "data_level0.bin").write_bytes(PHRASE)
    assert scrub_segments(tmp_path) == 0
    assert (segment / "length.bin").read_bytes() == PHRASE
