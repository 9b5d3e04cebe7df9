"""`VectorIndex`: the one place cairn talks to Chroma.

Chroma holds vectors derived from SQLite (the truth), one collection per kind of row, keyed by the
row's id as a string. Only embeddings and metadata go to Chroma: the text lives in SQLite, and
storing it twice would double Chroma's disk use and its write time (it full-text-indexes documents).

The API is synchronous, as Chroma's is; async callers use `asyncio.to_thread`. One process must own
an embedded Chroma path (it is not multi-process safe, see the stack notes); with `chroma_url` set,
a Chroma server owns it instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chromadb
import httpx
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import NotFoundError

from cairn.config import Settings
from cairn.config_checks import parse_chroma_url as parse_chroma_url  # checked at load, used here
from cairn.errors import Failure
from cairn.store.cpus import EmbeddingMode, embedding_threads
from cairn.store.embeddings import MiniLMInt8Embedding, make_embedding_function
from cairn.store.failures import describe_write_failure

log = logging.getLogger(__name__)

#: Query vectors `VectorIndex.embed` keeps (384 floats each: ~3 MB for 256).
QUERY_CACHE = 256
#: Metadata key holding a digest of the text a vector was made from (`text_key`).
TEXT_KEY = "text_sha"

VECTOR_KINDS = ("ideas", "spans", "entities", "messages", "chunks", "associations", "passages")
COLLECTION_PREFIX = "cairn_"
SPACE = "cosine"

#: Config keys of embedding functions that do not change the vectors they produce, so a
#: difference in them between the stored and the current function is no conflict.
_NON_IDENTITY_CONFIG_KEYS = frozenset({"batch_size", "api_base", "api_key_env_var", "preferred_providers"})

MetadataValue = str | int | float | bool | list[str] | list[int] | list[float] | list[bool]


class VectorStoreError(Failure):
    """Chroma could not do what cairn asked."""


_PERSISTED = re.compile(r"persisted:\s*([\w.:-]+)")


class EmbeddingConflictError(VectorStoreError):
    """A collection holds vectors from another embedding function than the configured one."""


class VectorStoreUnavailable(VectorStoreError):
    """The Chroma server at `chroma_url` cannot be reached."""


@dataclass(frozen=True)
class VectorHit:
    """One query result. `score` is cosine similarity (1 - cosine distance), higher is closer."""

    id: str
    distance: float
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def collection_name(kind: str) -> str:
    """Chroma's name for a kind's collection; unknown kinds are a programming error."""
    if kind not in VECTOR_KINDS:
        raise ValueError(f"unknown vector kind {kind!r}; expected one of {', '.join(VECTOR_KINDS)}")
    return COLLECTION_PREFIX + kind


def text_key(text: str) -> str:
    """A short digest of `text`: equal texts have equal vectors under one embedding function."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def sanitize_metadata(metadata: Mapping[str, Any] | None) -> dict[str, MetadataValue] | None:
    """A copy Chroma accepts: None values and empty lists dropped, None when nothing is left.

    Anything else Chroma cannot store (nested dicts, datetimes, ...) is a caller's bug and raises
    rather than being silently stringified, so `where` filters never meet surprising types.
    """
    if not metadata:
        return None
    clean: dict[str, MetadataValue] = {}
    for key, value in metadata.items():
        if value is None or (isinstance(value, list) and not value):
            continue
        if not isinstance(key, str) or key.startswith("#"):
            raise TypeError(f"metadata key {key!r} is not allowed by Chroma")
        scalar = isinstance(value, str | int | float | bool)
        if scalar or (
            isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)
        ):
            clean[key] = value
        else:
            raise TypeError(
                f"metadata {key!r} has a {type(value).__name__}; Chroma stores str/int/float/bool"
            )
    return clean or None


class VectorIndex:
    """cairn's vector collections in an embedded Chroma under `settings.chroma_dir`, or a server.

    The client and collections are opened at first use, under a lock, so constructing one is free
    and safe from any thread. `embedding_function` defaults to the one `settings.embedding` selects,
    built for `mode` (`cairn.store.cpus`: "bulk" for a command the user waits on, "steady" otherwise);
    a collection created with another function raises `EmbeddingConflictError` when opened.
    """

    def __init__(
        self,
        settings: Settings,
        embedding_function: EmbeddingFunction[Documents] | None = None,
        *,
        mode: EmbeddingMode = "steady",
    ) -> None:
        self.settings = settings
        self.embedding_function = (
            embedding_function if embedding_function is not None else make_embedding_function(settings, mode)
        )
        self._client: ClientAPI | None = None
        # Where a rebuild moved a damaged embedded store, and why it could not be opened.
        self.moved_aside: tuple[Path, str] | None = None
        self._collections: dict[str, Collection] = {}
        self._lock = threading.RLock()
        self._queries: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        #: Texts `upsert` embedded, and those it found a vector for already (`_known_vectors`).
        self.embedded = 0
        self.reused = 0

    @contextlib.contextmanager
    def embedding_mode(self, mode: EmbeddingMode) -> Iterator[None]:
        """Embed for `mode` inside the block (`cairn.store.cpus`), then as before.

        The daemon opens its store for steady embedding and runs the jobs a client waits on (backfill,
        reindex, import, ...) in bulk mode. The offline model's threads are fixed when it loads, so the
        block swaps in the function loaded with the mode's threads and unloads the one it replaces, and
        the reverse at its end: one model in memory at a time, not two. Other functions run no model
        here and stay. Blocks that overlap (an import during a backfill) are not nested: the first to
        end swaps back, and what still runs embeds at the steady count.
        """
        current = self.embedding_function
        threads = embedding_threads(mode, self.settings.embedding_threads)
        if not isinstance(current, MiniLMInt8Embedding) or current.threads == threads:
            yield
            return
        replacement = current.with_threads(threads)
        with self._lock:
            self.embedding_function = replacement
        current.release()
        try:
            yield
        finally:
            with self._lock:
                self.embedding_function = current
            replacement.release()

    # Client and collections

    @property
    def location(self) -> str:
        """Where the vectors live, for messages: the server URL or the embedded directory."""
        return self.settings.chroma_url or str(self.settings.chroma_dir)

    def _get_client(self) -> ClientAPI:
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _connect(self) -> ClientAPI:
        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        url = self.settings.chroma_url
        if url is None:
            self.settings.chroma_dir.mkdir(parents=True, exist_ok=True)
            try:
                return chromadb.PersistentClient(path=str(self.settings.chroma_dir), settings=chroma_settings)
            except Exception:
                # Chroma caches one system per path even when starting it failed, and every later
                # client of that path then fails with unrelated errors (missing tenant, missing
                # bindings): forget it, so a retry meets the real cause again (a full disk, say).
                with contextlib.suppress(Exception):
                    SharedSystemClient.clear_system_cache()
                raise
        host, port, ssl = parse_chroma_url(url)
        try:
            return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=chroma_settings)
        except Exception as exc:
            raise VectorStoreUnavailable(f"cannot reach the Chroma server at {url}: {exc}") from exc

    def _collection(self, kind: str) -> Collection:
        name = collection_name(kind)
        with self._lock:
            collection = self._collections.get(kind)
            if collection is None:
                collection = self._open(name)
                self._collections[kind] = collection
            return collection

    def _open(self, name: str) -> Collection:
        client = self._get_client()
        try:
            collection = client.get_or_create_collection(
                name,
                embedding_function=self.embedding_function,
                configuration={"hnsw": {"space": SPACE}},
            )
        except ValueError as exc:
            if "Embedding function conflict" in str(exc):
                # Chroma's text ends "Embedding function conflict: new: cairn-openai vs persisted:
                # cairn-minilm-int8"; the part before it is advice for Chroma's own users.
                persisted = _PERSISTED.search(str(exc))
                detail = f"its vectors were made with {persisted[1]}" if persisted else str(exc)
                raise self._conflict(name, detail) from exc
            raise
        self._check_compatible(name, collection)
        return collection

    def _check_compatible(self, name: str, collection: Collection) -> None:
        """Chroma compares only function names; also compare what determines the vectors."""
        configuration = collection.configuration_json or {}
        space = (configuration.get("hnsw") or {}).get("space") or (configuration.get("spann") or {}).get(
            "space"
        )
        if space is not None and space != SPACE:
            raise self._conflict(name, f"it uses the {space!r} distance, cairn needs {SPACE!r}")
        stored = configuration.get("embedding_function") or {}
        stored_config = stored.get("config") or {}
        current_config = self.embedding_function.get_config() or {}
        for key in (stored_config.keys() | current_config.keys()) - _NON_IDENTITY_CONFIG_KEYS:
            if stored_config.get(key) != current_config.get(key):
                raise self._conflict(
                    name,
                    f"its vectors were made with {stored.get('name')} {key}={stored_config.get(key)!r}, "
                    f"the configured function has {key}={current_config.get(key)!r}",
                )

    def _conflict(self, name: str, detail: str) -> EmbeddingConflictError:
        return EmbeddingConflictError(
            f"Chroma collection {name} at {self.location} was built with another embedding function "
            f"than the configured {self.embedding_function.name()!r} ({detail}). Run `cairn reindex-vectors` "
            "to rebuild the vectors from SQLite with the configured function."
        )

    @contextlib.contextmanager
    def _reachable(self) -> Iterator[None]:
        """Turn a lost connection to a Chroma server into `VectorStoreUnavailable`, so callers such
        as the outbox can tell "retry later" from a bug."""
        try:
            yield
        except httpx.TransportError as exc:
            raise VectorStoreUnavailable(f"Chroma at {self.location} does not answer: {exc}") from exc
        except VectorStoreError:
            raise
        except Exception as exc:
            # A full disk or a read-only directory is no bug either: callers treat it as they treat
            # an unreachable server (the outbox keeps the work, `cairn stats` reports it).
            if (failure := describe_write_failure(exc, self.settings.home)) is None:
                raise
            raise VectorStoreError(failure) from exc

    def _max_batch(self) -> int:
        return max(1, self._get_client().get_max_batch_size())

    # Operations

    def upsert(
        self,
        kind: str,
        ids: list[str],
        documents: list[str],
        metadatas: list[dict[str, Any]] | None = None,
    ) -> None:
        """Embed `documents` and store their vectors under `ids` (replacing any already there).

        A repeated id keeps its last occurrence, as if the upserts had run in order (Chroma itself
        rejects duplicates within one call). Texts are embedded by the embedding function's own
        batches; writes go to Chroma in chunks of at most `get_max_batch_size()`.
        """
        if len(documents) != len(ids) or (metadatas is not None and len(metadatas) != len(ids)):
            raise ValueError(
                f"upsert needs as many documents and metadatas as ids: {len(ids)} ids, "
                f"{len(documents)} documents, {len(metadatas) if metadatas is not None else 0} metadatas"
            )
        with self._reachable():
            self._upsert(self._collection(kind), ids, documents, metadatas)

    def _upsert(
        self,
        collection: Collection,
        ids: list[str],
        documents: list[str],
        metadatas: list[dict[str, Any]] | None,
    ) -> None:
        last: dict[str, int] = {}
        for position, record_id in enumerate(ids):
            if not isinstance(record_id, str) or not record_id:
                raise ValueError(f"vector ids must be non-empty strings, got {record_id!r}")
            last[record_id] = position
        positions = sorted(last.values())
        step = self._max_batch()
        for start in range(0, len(positions), step):
            chunk = positions[start : start + step]
            keys = [text_key(documents[i]) for i in chunk]
            chunk_metadatas = [
                sanitize_metadata({**(metadatas[i] if metadatas else {}), TEXT_KEY: key})
                for i, key in zip(chunk, keys, strict=True)
            ]
            vectors = self._known_vectors(collection, keys)
            missing = {key: documents[i] for i, key in zip(chunk, keys, strict=True) if key not in vectors}
            if missing:
                computed = self.embedding_function(list(missing.values()))
                vectors.update(zip(missing, computed, strict=True))
            self.embedded += len(missing)
            self.reused += len(chunk) - len(missing)
            collection.upsert(
                ids=[ids[i] for i in chunk],
                embeddings=[vectors[key] for key in keys],  # type: ignore[misc]
                metadatas=chunk_metadatas,  # type: ignore[arg-type]
            )

    @staticmethod
    def _known_vectors(collection: Collection, keys: list[str]) -> dict[str, Any]:
        """Vectors this collection already holds for texts with these keys (`TEXT_KEY` metadata): the
        same text embeds to the same vector, so a message a resumed session repeats, or an idea said
        twice, is embedded once. The lookup is one indexed metadata query; vectors written before the
        key existed simply never match."""
        unique = list(dict.fromkeys(keys))
        found = collection.get(where={TEXT_KEY: {"$in": unique}}, include=["embeddings", "metadatas"])
        embeddings = found.get("embeddings")
        if embeddings is None:
            return {}
        return {
            str(meta[TEXT_KEY]): vector
            for meta, vector in zip(found.get("metadatas") or [], embeddings, strict=False)
            if meta and TEXT_KEY in meta
        }

    def delete(self, kind: str, ids: list[str]) -> None:
        """Remove the vectors of `ids`; ids that are not there are ignored."""
        collection_name(kind)
        if not ids:
            return
        unique = list(dict.fromkeys(ids))
        with self._reachable():
            collection = self._collection(kind)
            step = self._max_batch()
            for start in range(0, len(unique), step):
                collection.delete(ids=unique[start : start + step])

    def embed(self, texts: list[str]) -> list[list[float]]:
        """The configured function's vectors for `texts` (embed a query once, search several kinds).

        A single text is a search query: its vector is kept (`QUERY_CACHE` texts, least recently used
        dropped first), because the same query comes back — the next page of a search re-runs it, an
        agent repeats a search — and embedding it is the largest single step of a search (~7 ms of
        CPU on 2 cores). The function is deterministic, so a kept vector is the one it would compute.
        """
        if len(texts) != 1:
            return [list(map(float, vector)) for vector in self.embedding_function(texts)]
        text = texts[0]
        with self._lock:
            kept = self._queries.get(text)
            if kept is not None:
                self._queries.move_to_end(text)
                return [list(kept)]
        vector = [float(value) for value in self.embedding_function([text])[0]]
        with self._lock:
            self._queries[text] = tuple(vector)
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return [vector]

    def forget_queries(self) -> None:
        """Drop the kept query vectors (`embed`): for measuring what a new query costs."""
        with self._lock:
            self._queries.clear()

    def query(
        self,
        kind: str,
        text: str | None = None,
        n: int = 10,
        where: dict[str, Any] | None = None,
        *,
        embedding: list[float] | None = None,
        metadata: bool = False,
    ) -> list[VectorHit]:
        """The `n` stored vectors closest to `text`'s (or to `embedding`), closest first, optionally
        filtered by metadata; with `metadata`, each hit carries its item's metadata."""
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        if (text is None) == (embedding is None):
            raise ValueError("query needs exactly one of text or embedding")
        include: list[Any] = ["distances", "metadatas"] if metadata else ["distances"]
        with self._reachable():
            collection = self._collection(kind)
            if embedding is not None:
                result = collection.query(
                    query_embeddings=[embedding], n_results=n, where=where or None, include=include
                )
            else:
                result = collection.query(
                    query_texts=[text], n_results=n, where=where or None, include=include
                )
        ids = result["ids"][0]
        distances = (result["distances"] or [[]])[0]
        metadatas = (result.get("metadatas") or [[None] * len(ids)])[0] if metadata else [None] * len(ids)
        hits = []
        for record_id, distance, meta in zip(ids, distances, metadatas, strict=True):
            # HNSW returns tiny negative distances for identical vectors; clamp to the cosine range.
            clamped = min(2.0, max(0.0, float(distance)))
            hits.append(
                VectorHit(id=record_id, distance=clamped, score=1.0 - clamped, metadata=dict(meta or {}))
            )
        return hits

    def get_embeddings(self, kind: str, ids: list[str]) -> dict[str, list[float]]:
        """The stored vectors of `ids` (those that have one), to score items a vector query missed."""
        found, matrix = self.get_matrix(kind, ids)
        return dict(zip(found, matrix.tolist(), strict=True))

    def get_matrix(self, kind: str, ids: list[str]) -> tuple[list[str], np.ndarray]:
        """The stored vectors of `ids` that have one: their ids and one matrix row each, as Chroma
        returns them. Scoring a search's few hundred candidates this way makes no Python float per
        dimension (turning 300 vectors into lists cost more than reading them)."""
        if ids:
            with self._reachable():
                result = self._collection(kind).get(ids=list(dict.fromkeys(ids)), include=["embeddings"])
            embeddings = result.get("embeddings")
            if embeddings is not None and len(result["ids"]) > 0:
                return list(result["ids"]), np.asarray(embeddings, dtype=np.float64)
        return [], np.zeros((0, 0))

    def get_ids(self, kind: str) -> set[str]:
        """Every id stored for `kind`, read page by page (for consistency checks against SQLite)."""
        found: set[str] = set()
        with self._reachable():
            collection = self._collection(kind)
            step = self._max_batch()
            offset = 0
            while True:
                page = collection.get(include=[], limit=step, offset=offset)["ids"]
                found.update(page)
                if len(page) < step:
                    return found
                offset += step

    def count(self, kind: str) -> int:
        with self._reachable():
            return self._collection(kind).count()

    def reset(self, kind: str | None = None) -> None:
        """Drop and recreate one kind's collection, or all of them, with the configured function.

        This is how `cairn reindex-vectors` gets out of an embedding conflict: the collections are
        dropped without being opened, so their stored function never needs to match.
        """
        kinds = VECTOR_KINDS if kind is None else (kind,)
        names = [collection_name(k) for k in kinds]
        with self._lock, self._reachable():
            client = self._client_to_rebuild() if kind is None else self._get_client()
            for k, name in zip(kinds, names, strict=True):
                self._collections.pop(k, None)
                with contextlib.suppress(NotFoundError):
                    client.delete_collection(name)
            for k in kinds:
                self._collection(k)

    def _client_to_rebuild(self) -> ClientAPI:
        """The client a rebuild of every collection writes to. An embedded store too damaged to open
        ("file is not a database") holds nothing a rebuild needs, since SQLite is the source of truth:
        it is moved aside (`moved_aside`, kept for a look) and a new one is made in its place."""
        try:
            return self._get_client()
        except Exception as exc:
            if self.settings.chroma_url is not None or describe_write_failure(exc, self.settings.home):
                raise
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            aside = self.settings.chroma_dir.with_name(f"{self.settings.chroma_dir.name}.damaged-{stamp}")
            self.settings.chroma_dir.rename(aside)
            self.moved_aside = (aside, " ".join(str(exc).split())[:200])
            log.warning("the vector store could not be opened (%s): moved to %s", exc, aside)
            return self._get_client()

    def heartbeat(self) -> int:
        """Chroma's heartbeat (nanoseconds since the epoch): proof the client or server answers.

        Raises `VectorStoreUnavailable` when the server cannot be reached.
        """
        with self._reachable():
            return int(self._get_client().heartbeat())

    def close(self) -> None:
        """Release the client (for an embedded store: its SQLite handles). Later calls reopen it."""
        with self._lock:
            client, self._client = self._client, None
            self._collections.clear()
        if client is not None:
            close = getattr(client, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
