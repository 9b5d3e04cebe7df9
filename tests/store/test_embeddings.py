"""Embedding functions: the offline MiniLM int8 model for real, the OpenAI-compatible one against a
local fake endpoint, and Chroma's registration/config round-trip."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromadb.utils.embedding_functions import config_to_embedding_function
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

from cairn.config import Settings
from cairn.store import embeddings
from cairn.store.cpus import embedding_threads
from cairn.store.embeddings import (
    EMBEDDING_DIM,
    MODEL_SHA256,
    EmbeddingModelError,
    MiniLMInt8Embedding,
    OpenAICompatibleEmbedding,
    default_model_path,
    default_tokenizer_path,
    describe,
    make_embedding_function,
)

LOGIN = "login button component"
LOGIN_FILE = "LoginButton.tsx renders the sign-in button"
MIGRATIONS = "database migrations with alembic"


@pytest.fixture(scope="module")
def minilm() -> MiniLMInt8Embedding:
    ef = MiniLMInt8Embedding()
    ef.load()
    return ef


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# The offline MiniLM model


def test_vectors_are_384_dim_unit_float32(minilm: MiniLMInt8Embedding) -> None:
    vectors = minilm([LOGIN, "", "x" * 5000])
    assert len(vectors) == 3
    for vector in vectors:
        assert vector.shape == (EMBEDDING_DIM,)
        assert vector.dtype == np.float32
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_embedding_is_deterministic_and_independent_of_batch_mates(minilm: MiniLMInt8Embedding) -> None:
    alone = minilm.embed([LOGIN])
    again = minilm.embed([LOGIN])
    np.testing.assert_array_equal(alone, again)
    # In a batch padded to a much longer neighbour, the masked mean-pool must give the same vector.
    mixed = minilm.embed([MIGRATIONS + " " + "and more words " * 40, LOGIN])
    np.testing.assert_allclose(mixed[1], alone[0], atol=1e-5)


def test_similar_texts_are_close_and_unrelated_ones_are_not(minilm: MiniLMInt8Embedding) -> None:
    login, login_file, migrations = minilm.embed([LOGIN, LOGIN_FILE, MIGRATIONS])
    related = cosine(login, login_file)
    unrelated = cosine(login, migrations)
    assert related > 0.6
    assert unrelated < 0.15
    assert related - unrelated > 0.5


def test_batches_give_the_same_vectors_in_input_order(minilm: MiniLMInt8Embedding) -> None:
    texts = [LOGIN_FILE + " " + MIGRATIONS, LOGIN, MIGRATIONS, "pytest fixtures", "the daemon owns the store"]
    one_by_one = np.concatenate([minilm.embed([text]) for text in texts])
    for ef in (minilm, MiniLMInt8Embedding(batch_size=2), MiniLMInt8Embedding(max_batch_tokens=16)):
        np.testing.assert_allclose(ef.embed(texts), one_by_one, atol=1e-5)


def test_the_session_runs_the_threads_asked_and_plans_no_memory_per_shape(
    minilm: MiniLMInt8Embedding,
) -> None:
    """The steady mode's threads unless told (`cairn.store.cpus`), and no per-shape memory plans: every
    batch has its own (texts, width) shape, so the plans only grew the arena (issue 16, part 4)."""
    assert minilm._loaded is not None
    options = minilm._loaded.session.get_session_options()
    assert options.intra_op_num_threads == minilm.threads == embedding_threads("steady")
    assert options.enable_mem_pattern is False
    assert minilm.max_batch_tokens == 512


def test_batches_are_grouped_by_length_within_both_limits() -> None:
    ef = MiniLMInt8Embedding(batch_size=3, max_batch_tokens=20)
    lengths = [9, 2, 30, 5, 3, 4, 6, 2]
    batches = ef._batches([[1] * n for n in lengths])
    assert sorted(p for batch in batches for p in batch) == list(range(len(lengths)))
    widths = [[lengths[p] for p in batch] for batch in batches]
    assert widths == [[2, 2, 3], [4, 5, 6], [9], [30]]
    for batch in widths:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(batch) <= 20


def test_long_texts_are_truncated_at_256_word_pieces(minilm: MiniLMInt8Embedding) -> None:
    # "word" is one word piece; everything past 254 of them (+ [CLS], [SEP]) must be ignored.
    long_a = "word " * 300
    long_b = "word " * 300 + "completely different tail about databases " * 20
    a, b = minilm.embed([long_a, long_b])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_empty_input_gives_empty_output(minilm: MiniLMInt8Embedding) -> None:
    assert minilm([]) == []
    assert minilm.embed([]).shape == (0, EMBEDDING_DIM)


def test_nothing_is_loaded_until_the_first_call(tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    ef = MiniLMInt8Embedding(model_path=missing)
    assert ef.get_config()["model_sha256"] == MODEL_SHA256
    with pytest.raises(EmbeddingModelError, match=r"missing\.onnx"):
        ef(["hello"])


def test_a_tampered_tokenizer_is_rejected(tmp_path: Path) -> None:
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(default_tokenizer_path(), copy)
    MiniLMInt8Embedding(tokenizer_path=copy).load()  # an intact copy loads

    data = json.loads(copy.read_text())
    data["model"]["vocab"]["button"], data["model"]["vocab"]["database"] = (
        data["model"]["vocab"]["database"],
        data["model"]["vocab"]["button"],
    )
    copy.write_text(json.dumps(data))
    with pytest.raises(EmbeddingModelError, match=r"MiniLM tokenizer at .*tokenizer\.json has sha256"):
        MiniLMInt8Embedding(tokenizer_path=copy)(["button"])


def test_a_tampered_model_is_rejected(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(default_model_path(), copy)
    with copy.open("r+b") as handle:
        handle.seek(-100, 2)
        byte = handle.read(1)
        handle.seek(-100, 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingModelError, match=r"MiniLM ONNX model at .*model\.onnx has sha256"):
        MiniLMInt8Embedding(model_path=copy)(["hello"])


def test_concurrent_first_calls_load_once_and_agree(
    minilm: MiniLMInt8Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    ef = MiniLMInt8Embedding(batch_size=4)
    loads = 0
    real_load = MiniLMInt8Embedding._load

    def counting_load(self: MiniLMInt8Embedding) -> Any:
        nonlocal loads
        loads += 1
        return real_load(self)

    monkeypatch.setattr(MiniLMInt8Embedding, "_load", counting_load)
    monkeypatch.setattr(embeddings, "_shared", {})  # as in a fresh process: nothing loaded yet
    texts = [LOGIN, LOGIN_FILE, MIGRATIONS, "threads share one session", "a b c", "ideas and spans"]
    expected = minilm.embed(texts)
    start = threading.Barrier(6)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            start.wait()
            for _ in range(3):
                results.append(ef.embed(texts))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert loads == 1
    assert len(results) == 18
    for result in results:
        np.testing.assert_allclose(result, expected, atol=1e-5)


def test_registered_and_rebuilt_from_its_stored_config(minilm: MiniLMInt8Embedding) -> None:
    stored = {"type": "known", "name": minilm.name(), "config": minilm.get_config()}
    rebuilt = config_to_embedding_function(stored)
    assert isinstance(rebuilt, MiniLMInt8Embedding)
    assert rebuilt.get_config() == minilm.get_config()
    assert not minilm.is_legacy()
    assert minilm.default_space() == "cosine"
    with pytest.raises(EmbeddingModelError, match="reindex-vectors"):
        MiniLMInt8Embedding.build_from_config({**minilm.get_config(), "model_sha256": "0" * 64})


# Choosing a function from settings


def test_factory_follows_settings(settings: Settings, cairn_home: Path) -> None:
    default = make_embedding_function(settings)
    assert isinstance(default, MiniLMInt8Embedding)
    assert default.batch_size == settings.embedding_batch_size

    onnx = make_embedding_function(Settings.load(cairn_home, embedding="chroma-onnx"))
    assert isinstance(onnx, ONNXMiniLM_L6_V2)  # built lazily: nothing is downloaded here

    openai_settings = Settings.load(
        cairn_home,
        embedding="openai",
        embedding_url="http://127.0.0.1:9/v1",
        embedding_model="nomic-embed-text",
        embedding_api_key_env="MY_EMBED_KEY",
        embedding_batch_size=8,
    )
    remote = make_embedding_function(openai_settings)
    assert isinstance(remote, OpenAICompatibleEmbedding)
    assert remote.get_config() == {
        "model_name": "nomic-embed-text",
        "api_base": "http://127.0.0.1:9/v1",
        "api_key_env_var": "MY_EMBED_KEY",
        "batch_size": 8,
    }
    assert "nomic-embed-text" in describe(openai_settings)
    assert "offline" in describe(settings)


# The OpenAI-compatible function, against a local fake endpoint


class _FakeEmbeddings:
    """A tiny OpenAI-style `/v1/embeddings` server that answers in reverse index order."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, **body})
                fake.auth.append(self.headers.get("Authorization"))
                data = [
                    {"object": "embedding", "index": i, "embedding": [float(len(text)), float(i), 1.0]}
                    for i, text in enumerate(body["input"])
                ]
                payload = json.dumps(
                    {
                        "object": "list",
                        "data": list(reversed(data)),
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)


@pytest.fixture
def fake_openai() -> Iterator[_FakeEmbeddings]:
    fake = _FakeEmbeddings()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


def test_openai_compatible_batches_orders_and_sends_the_named_key(
    fake_openai: _FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "sk-test-123")
    ef = OpenAICompatibleEmbedding(
        "nomic-embed-text", api_base=fake_openai.url, api_key_env_var="MY_EMBED_KEY", batch_size=2
    )
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = ef(texts)
    assert [v[0] for v in vectors] == [1.0, 2.0, 3.0, 4.0, 5.0]  # input order despite reversed replies
    assert [len(r["input"]) for r in fake_openai.requests] == [2, 2, 1]
    assert {r["model"] for r in fake_openai.requests} == {"nomic-embed-text"}
    assert {r["path"] for r in fake_openai.requests} == {"/v1/embeddings"}
    assert set(fake_openai.auth) == {"Bearer sk-test-123"}
    assert ef([]) == []


def test_openai_compatible_needs_no_key_for_a_self_hosted_endpoint(
    fake_openai: _FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CAIRN_TEST_ABSENT_KEY", raising=False)
    ef = OpenAICompatibleEmbedding("m", api_base=fake_openai.url, api_key_env_var="CAIRN_TEST_ABSENT_KEY")
    assert len(ef(["hello"])) == 1
    assert fake_openai.auth == [f"Bearer {OpenAICompatibleEmbedding.NO_KEY}"]


def test_openai_without_a_key_fails_clearly_at_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAIRN_TEST_ABSENT_KEY", raising=False)
    ef = OpenAICompatibleEmbedding("text-embedding-3-small", api_key_env_var="CAIRN_TEST_ABSENT_KEY")
    rebuilt = config_to_embedding_function({"type": "known", "name": ef.name(), "config": ef.get_config()})
    assert isinstance(rebuilt, OpenAICompatibleEmbedding)  # rebuilding needs no key
    with pytest.raises(EmbeddingModelError, match=r"\$CAIRN_TEST_ABSENT_KEY"):
        ef(["hello"])


def test_functions_of_one_process_share_one_loaded_model(tmp_path: Path) -> None:
    """Chroma rebuilds a function per collection and a process may run many commands: one ONNX session
    serves them all, while a file changed since is verified and loaded anew."""
    first, second = MiniLMInt8Embedding(), MiniLMInt8Embedding()
    assert first._ensure_loaded() is second._ensure_loaded()
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(default_tokenizer_path(), copy)
    assert MiniLMInt8Embedding(tokenizer_path=copy)._ensure_loaded() is not first._ensure_loaded()
