"""VectorIndex against real Chroma: an embedded PersistentClient per test, and a `chroma run` server."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from cairn.config import Settings
from cairn.store.embeddings import MiniLMInt8Embedding, OpenAICompatibleEmbedding
from cairn.store.vectors import (
    VECTOR_KINDS,
    EmbeddingConflictError,
    VectorHit,
    VectorIndex,
    VectorStoreUnavailable,
    parse_chroma_url,
    sanitize_metadata,
)

DOCS = {
    "1": ("LoginButton.tsx renders the sign-in button", {"project": "web", "kind": "file", "weight": 2}),
    "2": ("database migrations with alembic", {"project": "api", "kind": "note", "weight": 1}),
    "3": ("the daemon batches transcript updates every few seconds", {"project": "api", "kind": "note"}),
    "4": ("dark mode colours for the settings page", {"project": "web", "kind": "note", "archived": None}),
}


@register_embedding_function
class _HashEmbedding(EmbeddingFunction[Documents]):
    """A deterministic stand-in with another name, to create embedding-function conflicts."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        rows = []
        for text in input:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            row = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return rows

    @staticmethod
    def name() -> str:
        return "cairn-test-hash"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> _HashEmbedding:
        return _HashEmbedding()


@pytest.fixture(scope="module")
def minilm() -> MiniLMInt8Embedding:
    ef = MiniLMInt8Embedding()
    ef.load()
    return ef


@pytest.fixture
def index(settings: Settings, minilm: MiniLMInt8Embedding) -> Iterator[VectorIndex]:
    vectors = VectorIndex(settings, embedding_function=minilm)
    yield vectors
    vectors.close()


def fill(vectors: VectorIndex, kind: str = "ideas") -> None:
    ids = list(DOCS)
    vectors.upsert(kind, ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])


def round_trip(vectors: VectorIndex) -> None:
    """The contract every backend must meet: upsert, query (with filters), replace, delete, count."""
    fill(vectors)
    assert vectors.count("ideas") == 4
    assert vectors.get_ids("ideas") == set(DOCS)

    hits = vectors.query("ideas", "login button component", n=4)
    assert hits[0].id == "1"
    assert len(hits) == 4
    assert all(isinstance(hit, VectorHit) for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    for hit in hits:
        assert hit.score == pytest.approx(1 - hit.distance)
    assert hits[0].score > 0.5
    assert hits[-1].score < 0.3

    api_only = vectors.query("ideas", "login button component", n=10, where={"project": "api"})
    assert {hit.id for hit in api_only} == {"2", "3"}
    heavy = vectors.query(
        "ideas", "anything", n=10, where={"$and": [{"kind": "note"}, {"weight": {"$gte": 1}}]}
    )
    assert {hit.id for hit in heavy} == {"2"}

    # Replacing a vector moves it; other kinds are untouched.
    vectors.upsert("ideas", ["2"], ["the sign-in button on the login page"], [{"project": "web"}])
    assert vectors.query("ideas", "login button component", n=1)[0].id in {"1", "2"}
    assert {hit.id for hit in vectors.query("ideas", "x", n=10, where={"project": "web"})} == {"1", "2", "4"}
    assert vectors.count("spans") == 0

    vectors.delete("ideas", ["1", "does-not-exist"])
    assert vectors.count("ideas") == 3
    assert "1" not in {hit.id for hit in vectors.query("ideas", "login button component", n=10)}


def test_round_trip(index: VectorIndex) -> None:
    round_trip(index)


def test_collections_are_cosine_and_remember_their_function(index: VectorIndex) -> None:
    fill(index, "entities")
    configuration = index._collection("entities").configuration_json
    assert configuration["hnsw"]["space"] == "cosine"
    assert configuration["embedding_function"]["name"] == "cairn-minilm-int8"


def test_vectors_persist_across_instances(settings: Settings, minilm: MiniLMInt8Embedding) -> None:
    first = VectorIndex(settings, embedding_function=minilm)
    fill(first, "spans")
    before = first.query("spans", "sign-in button", n=2)
    first.close()

    second = VectorIndex(settings)  # the function the settings name, rebuilt from scratch
    try:
        assert second.count("spans") == 4
        assert second.get_ids("spans") == set(DOCS)
        after = second.query("spans", "sign-in button", n=2)
        assert [hit.id for hit in after] == [hit.id for hit in before]
        assert after[0].score == pytest.approx(before[0].score, abs=1e-5)
    finally:
        second.close()
    assert (settings.chroma_dir / "chroma.sqlite3").exists()


def test_duplicate_ids_in_one_upsert_keep_the_last(index: VectorIndex) -> None:
    index.upsert(
        "messages",
        ["7", "8", "7"],
        ["alembic migrations", "dark mode", "the sign-in button"],
        [{"n": 1}, {"n": 2}, {"n": 3}],
    )
    assert index.count("messages") == 2
    assert index.query("messages", "login button", n=1)[0].id == "7"
    assert {hit.id for hit in index.query("messages", "x", n=5, where={"n": 3})} == {"7"}


def test_writes_and_reads_are_chunked_by_the_max_batch(
    index: VectorIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "_max_batch", lambda: 3)
    ids = [str(i) for i in range(10)]
    index.upsert("spans", ids, [f"note number {i}" for i in ids])
    assert index.count("spans") == 10
    assert index.get_ids("spans") == set(ids)
    index.delete("spans", ids[:7])
    assert index.get_ids("spans") == {"7", "8", "9"}


def test_a_text_already_embedded_is_not_embedded_again(
    settings: Settings, minilm: MiniLMInt8Embedding
) -> None:
    embedded: list[str] = []

    def counting(texts: Documents) -> Embeddings:
        embedded.extend(texts)
        return minilm(texts)

    vectors = VectorIndex(settings, embedding_function=minilm)
    try:
        assert vectors.count("messages") == vectors.count("ideas") == 0  # collections made with MiniLM
        vectors.embedding_function = counting  # type: ignore[assignment]
        vectors.upsert("messages", ["1", "2"], ["run the migrations first", "then restart the api"])
        # A resumed session repeats a message; another repeats itself within one call.
        vectors.upsert("messages", ["3", "4", "5"], ["run the migrations first", "new text", "new text"])
        assert embedded == ["run the migrations first", "then restart the api", "new text"]
        assert (vectors.embedded, vectors.reused) == (3, 2)
        stored = vectors.get_embeddings("messages", ["1", "3", "4", "5"])
        assert np.allclose(stored["1"], stored["3"]) and np.allclose(stored["4"], stored["5"])
        assert vectors.query("messages", "run the migrations first", n=2)[0].score > 0.99
        # Other kinds keep their own vectors: the same text as an idea is embedded for that collection.
        vectors.upsert("ideas", ["1"], ["run the migrations first"])
        assert embedded[-1] == "run the migrations first" and len(embedded) == 4
    finally:
        vectors.close()


def test_none_metadata_is_dropped(index: VectorIndex) -> None:
    index.upsert("ideas", ["1", "2"], ["a", "b"], [{"topic": None}, {"topic": "x", "tags": []}])
    assert index.count("ideas") == 2
    assert {hit.id for hit in index.query("ideas", "a", n=5, where={"topic": "x"})} == {"2"}


def test_sanitize_metadata() -> None:
    assert sanitize_metadata(None) is None
    assert sanitize_metadata({"a": None, "b": []}) is None
    assert sanitize_metadata({"a": 1, "b": "x", "c": True, "d": 1.5, "e": None, "f": ["t"]}) == {
        "a": 1,
        "b": "x",
        "c": True,
        "d": 1.5,
        "f": ["t"],
    }
    with pytest.raises(TypeError, match="'when'"):
        sanitize_metadata({"when": object()})
    with pytest.raises(TypeError, match="nested"):
        sanitize_metadata({"nested": {"a": 1}})


def test_bad_arguments_are_rejected(index: VectorIndex) -> None:
    for call in (
        lambda: index.upsert("notes", ["1"], ["x"]),
        lambda: index.query("notes", "x"),
        lambda: index.count("notes"),
        lambda: index.get_ids("notes"),
        lambda: index.delete("notes", ["1"]),
        lambda: index.reset("notes"),
    ):
        with pytest.raises(ValueError, match="unknown vector kind 'notes'"):
            call()
    with pytest.raises(ValueError, match="as many documents"):
        index.upsert("ideas", ["1", "2"], ["only one"])
    with pytest.raises(ValueError, match="as many documents"):
        index.upsert("ideas", ["1"], ["x"], [{}, {}])
    with pytest.raises(ValueError, match="non-empty strings"):
        index.upsert("ideas", [""], ["x"])
    with pytest.raises(ValueError, match="n must be"):
        index.query("ideas", "x", n=0)


def test_empty_operations(index: VectorIndex) -> None:
    index.upsert("ideas", [], [])
    index.delete("ideas", [])
    assert index.query("ideas", "nothing stored yet") == []
    assert index.count("ideas") == 0
    assert index.get_ids("ideas") == set()


def test_reset_one_kind_or_all(index: VectorIndex) -> None:
    for kind in VECTOR_KINDS:
        fill(index, kind)
    index.reset("spans")
    assert index.count("spans") == 0
    assert index.count("ideas") == 4
    index.reset()
    assert all(index.count(kind) == 0 for kind in VECTOR_KINDS)
    fill(index, "spans")  # usable again after a reset
    assert index.count("spans") == 4


def test_another_embedding_function_is_a_clear_conflict(settings: Settings, index: VectorIndex) -> None:
    fill(index)
    index.close()
    other = VectorIndex(settings, embedding_function=_HashEmbedding())
    with pytest.raises(EmbeddingConflictError, match=r"cairn_ideas.*cairn reindex-vectors") as caught:
        other.count("ideas")
    assert "cairn-test-hash" in str(caught.value)
    # reindex-vectors' way out: reset drops the collection without opening it.
    other.reset("ideas")
    other.upsert("ideas", ["1"], ["x"])
    assert other.count("ideas") == 1
    other.close()


def test_same_function_with_another_model_is_a_conflict(settings: Settings) -> None:
    # Chroma itself compares only names; cairn also compares the model the vectors came from.
    first = VectorIndex(settings, OpenAICompatibleEmbedding("model-a", api_base="http://127.0.0.1:9/v1"))
    assert first.count("ideas") == 0
    first.close()
    same_model_other_batch = VectorIndex(
        settings, OpenAICompatibleEmbedding("model-a", api_base="http://127.0.0.1:9/v1", batch_size=3)
    )
    assert same_model_other_batch.count("ideas") == 0
    same_model_other_batch.close()
    second = VectorIndex(settings, OpenAICompatibleEmbedding("model-b", api_base="http://127.0.0.1:9/v1"))
    with pytest.raises(EmbeddingConflictError, match=r"model_name='model-a'.*reindex-vectors"):
        second.count("ideas")
    second.close()


def test_heartbeat_and_reopen_after_close(index: VectorIndex) -> None:
    assert index.heartbeat() > 0
    fill(index)
    index.close()
    assert index.count("ideas") == 4  # a closed index reopens lazily


def test_parse_chroma_url() -> None:
    assert parse_chroma_url("http://127.0.0.1:8000") == ("127.0.0.1", 8000, False)
    assert parse_chroma_url("https://chroma.example.com") == ("chroma.example.com", 443, True)
    assert parse_chroma_url("http://localhost/") == ("localhost", 8000, False)
    for bad in ("127.0.0.1:8000", "ftp://host:1", "http://host:1/prefix"):
        with pytest.raises(ValueError, match="chroma_url"):
            parse_chroma_url(bad)


# A real Chroma server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chroma_cli() -> Path:
    return Path(sys.executable).parent / "chroma"


@contextlib.contextmanager
def running_chroma(data: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`chroma run` on a free local port, once its heartbeat answers (60 s at most).

    The process is always terminated on exit, also when start-up fails or the test does.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = data / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(chroma_cli()),
                "run",
                "--path",
                str(data / "db"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    pytest.fail(f"chroma run exited with {process.returncode}: {log_path.read_text()}")
                try:
                    with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"chroma run did not answer within 60 s: {log_path.read_text()}")
                time.sleep(0.2)
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_chroma(tmp_path_factory.mktemp("chroma-server")) as (url, _process):
        yield url


@pytest.fixture
def server_settings(cairn_home: Path, chroma_server: str) -> Settings:
    return Settings.load(cairn_home, chroma_url=chroma_server)


def test_round_trip_through_a_chroma_server(server_settings: Settings, minilm: MiniLMInt8Embedding) -> None:
    vectors = VectorIndex(server_settings, embedding_function=minilm)
    vectors.reset()  # the server outlives single tests
    try:
        assert vectors.heartbeat() > 0
        round_trip(vectors)
    finally:
        vectors.close()
    again = VectorIndex(server_settings, embedding_function=minilm)
    try:
        assert again.count("ideas") == 3
        assert not server_settings.chroma_dir.exists()  # nothing embedded was created
    finally:
        again.close()


def test_server_conflicts_are_reported_too(server_settings: Settings, minilm: MiniLMInt8Embedding) -> None:
    vectors = VectorIndex(server_settings, embedding_function=minilm)
    vectors.reset("entities")
    vectors.close()
    with pytest.raises(EmbeddingConflictError, match="reindex-vectors"):
        VectorIndex(server_settings, embedding_function=_HashEmbedding()).count("entities")


def test_unreachable_server_is_a_clear_error(cairn_home: Path, minilm: MiniLMInt8Embedding) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    vectors = VectorIndex(Settings.load(cairn_home, chroma_url=url), embedding_function=minilm)
    with pytest.raises(VectorStoreUnavailable, match=url):
        vectors.heartbeat()
    with pytest.raises(VectorStoreUnavailable, match=url):
        vectors.count("ideas")


@pytest.mark.process
def test_a_server_lost_mid_run_is_reported_as_unavailable(
    tmp_path: Path, cairn_home: Path, minilm: MiniLMInt8Embedding
) -> None:
    with running_chroma(tmp_path) as (url, process):
        vectors = VectorIndex(Settings.load(cairn_home, chroma_url=url), embedding_function=minilm)
        fill(vectors)
        process.terminate()
        process.wait(timeout=10)
        for call in (
            lambda: vectors.count("ideas"),
            lambda: vectors.upsert("ideas", ["9"], ["x"]),
            lambda: vectors.query("ideas", "x"),
            lambda: vectors.delete("ideas", ["1"]),
            lambda: vectors.get_ids("ideas"),
            vectors.heartbeat,
        ):
            with pytest.raises(VectorStoreUnavailable, match=url):
                call()


def test_a_query_text_is_embedded_once(settings: Settings) -> None:
    calls: list[list[str]] = []

    class Counting(_HashEmbedding):
        def __call__(self, input: Documents) -> Embeddings:
            calls.append(list(input))
            return super().__call__(input)

    vectors = VectorIndex(settings, embedding_function=Counting())
    first = vectors.embed(["sqlite locking"])
    first[0][0] = 99.0  # a caller's changes never reach the kept vector
    again = vectors.embed(["sqlite locking"])
    assert calls == [["sqlite locking"]]
    assert again[0] == vectors.embed(["sqlite locking"])[0] != first[0]
    vectors.embed(["a", "b"])
    vectors.embed(["a", "b"])
    assert calls[1:] == [["a", "b"], ["a", "b"]]  # batches are documents, not queries: not kept
    vectors.forget_queries()
    vectors.embed(["sqlite locking"])
    assert calls[-1] == ["sqlite locking"]
