"""What passages cost and what they hold, on the shared fixtures, each figure next to its baseline.

Usage: ``.venv/bin/python benchmarks/passages.py [--repeats 5] [--home DIR]``

1. **Splitting.** Every message of ``tests/fixtures/transcripts`` is normalised (tool results
   whole) and split; reported: time against the MiniLM tokenizer encoding the same text (the cost a
   token-exact splitter would start from), passages per kind, the boundary each cut fell on (why
   passages need no overlap), and true word pieces per passage (MiniLM tokenizer).
2. **Vectors.** Which passages the ``passage_vectors`` setting embeds and what that adds to the
   messages' own vectors, in count and in word pieces (embedding time grows with word pieces).
3. **Per-query cost.** The fixtures are captured into a store (``cairn sync --no-index`` semantics,
   in this process, or reuse ``--home``); then, for the labelled queries of
   ``benchmarks/data/search_queries.json``, ``keyword_hits`` and ``vector_matches`` for messages run
   with their passage query and without it (the passage step replaced by nothing), alternating, and
   p50/p95 of each are reported: what the one extra FTS5 query and the one extra Chroma query cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from cairn.config import Settings  # noqa: E402
from cairn.ingest import sync_paths  # noqa: E402
from cairn.search import keyword, semantic  # noqa: E402
from cairn.search.filters import Filters  # noqa: E402
from cairn.search.query import build  # noqa: E402
from cairn.store.embeddings import MiniLMInt8Embedding  # noqa: E402
from cairn.store.store import PASSAGE_KINDS, Store  # noqa: E402
from cairn.transcripts import NormaliseOptions, Normaliser, read_from  # noqa: E402
from cairn.transcripts import passages as split_module  # noqa: E402

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "transcripts"
QUERIES = REPO_ROOT / "benchmarks" / "data" / "search_queries.json"
BOUNDARIES = {4: "blank line", 3: "line", 2: "sentence end", 1: "whitespace", 0: "hard cut"}


def quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def splitting() -> None:
    files = sorted(FIXTURES.rglob("*.jsonl"))
    messages = [m for f in files for m in Normaliser(NormaliseOptions()).normalise(read_from(f).entries)]
    texts = [m.searchable_text for m in messages if not m.is_noise and m.kind in PASSAGE_KINDS]
    function = MiniLMInt8Embedding()
    tokenizer = function._ensure_loaded().tokenizer
    tokenizer.no_truncation()
    started = time.perf_counter()
    cut = [split_module.split(text) for text in texts]
    split_s = time.perf_counter() - started
    started = time.perf_counter()
    tokenizer.encode_batch(texts)
    tokenize_s = time.perf_counter() - started
    chars = sum(len(t) for t in texts)
    print(f"{len(messages)} messages, {len(texts)} searchable, {chars:,} characters (tool results whole)")
    print(f"  split: {split_s * 1000:.0f} ms; tokenizer over the same text: {tokenize_s * 1000:.0f} ms")

    kinds = [m.kind for m in messages if not m.is_noise and m.kind in PASSAGE_KINDS]
    by_kind: Counter[str] = Counter()
    with_passages: Counter[str] = Counter()
    beyond_first: Counter[str] = Counter()
    cuts: Counter[tuple[str, str]] = Counter()
    sizes: dict[str, list[int]] = {}
    own_tokens = 0
    for kind, text, found in zip(kinds, texts, cut, strict=True):
        group = "tool output" if kind == "tool_result" else "prose"
        own_tokens += min(256, len(tokenizer.encode(text).ids))
        if not found:
            continue
        with_passages[group] += 1
        by_kind[group] += len(found)
        beyond_first[group] += len(found) - 1
        prefix = split_module._prefix(text)
        units = split_module._units(text, prefix, 0, len(text), 0, split_module._PARAGRAPH, 200)
        starts = sorted((start, strength) for start, _, strength, _ in units)
        for passage in found[1:]:
            strength = max((s for s in starts if s[0] <= passage.start), default=(0, 0))[1]
            cuts[(group, BOUNDARIES[strength])] += 1
        sizes.setdefault(group, []).extend(
            len(e.ids) - 2 for e in tokenizer.encode_batch([p.text for p in found])
        )
    for group in ("prose", "tool output"):
        median, p95 = quantiles([float(v) for v in sizes.get(group, [0])])
        print(
            f"  {group}: {with_passages[group]} messages with passages, {by_kind[group]} passages "
            f"({beyond_first[group]} beyond the first); word pieces per passage p50 {median:.0f}, "
            f"p95 {p95:.0f}, max {max(sizes.get(group, [0]))}"
        )
        print(
            "    cuts at: "
            + ", ".join(f"{b} {cuts[(group, b)]}" for b in BOUNDARIES.values() if cuts[(group, b)])
        )

    own = len(texts)
    print(f"vectors: {own} message vectors ({own_tokens:,} word pieces embedded)")
    for policy, groups in (("prose", ("prose",)), ("all", ("prose", "tool output"))):
        extra = sum(beyond_first[g] for g in groups)
        tokens = sum(
            min(256, len(e.ids))
            for kind, found in zip(kinds, cut, strict=True)
            if found and ("tool output" if kind == "tool_result" else "prose") in groups
            for e in tokenizer.encode_batch([p.text for p in found[1:]])
        )
        print(
            f"  passage_vectors={policy}: +{extra} vectors ({(own + extra) / own:.3f} per message), "
            f"+{tokens:,} word pieces (+{tokens / own_tokens:.1%})"
        )


async def per_query(home: Path | None, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cairn-bench-passages-") as tmp:
        settings = Settings.load(home or Path(tmp))
        async with await Store.open(settings) as store:
            if not await store.db.scalar("SELECT count(*) FROM messages"):
                print("capturing the fixtures (embedding every message and passage)...", flush=True)
                await sync_paths(store, sorted(FIXTURES.rglob("*.jsonl")), settings)
            passages = await store.db.scalar("SELECT count(*) FROM message_passages")
            vectors = store.vectors.count("passages")
            messages = await store.db.scalar("SELECT count(*) FROM messages")
            print(f"store: {messages} messages, {passages} passages, {vectors} passage vectors")
            queries = [q["query"] for q in json.loads(QUERIES.read_text())["queries"]]
            embeddings = store.vectors.embed(queries)
            filters = Filters()
            original_hits, original_matches = keyword._passage_hits, semantic._passage_matches

            async def no_hits(*_: object) -> list[object]:
                return []

            timings: dict[tuple[str, str], list[float]] = {}
            for repeat in range(repeats + 1):  # the first round warms caches and is not counted
                for with_passages in (True, False) if repeat % 2 else (False, True):
                    keyword._passage_hits = original_hits if with_passages else no_hits  # type: ignore[assignment]
                    semantic._passage_matches = original_matches if with_passages else no_hits  # type: ignore[assignment]
                    label = "with passages" if with_passages else "without"
                    for query, embedding in zip(queries, embeddings, strict=True):
                        fts = build(query)
                        if fts is not None:
                            started = time.perf_counter()
                            await keyword.keyword_hits(
                                store.db, "message", fts, filters, settings.search_candidates
                            )
                            if repeat:
                                timings.setdefault(("keyword_hits", label), []).append(
                                    time.perf_counter() - started
                                )
                        started = time.perf_counter()
                        await semantic.vector_matches(
                            store.vectors, "message", embedding, filters, settings.search_candidates, settings
                        )
                        if repeat:
                            timings.setdefault(("vector_matches", label), []).append(
                                time.perf_counter() - started
                            )
            keyword._passage_hits, semantic._passage_matches = original_hits, original_matches
    print(f"per query, kind=message, {len(queries)} queries x {repeats} rounds (p50 / p95 ms):")
    for step in ("keyword_hits", "vector_matches"):
        cells = []
        for label in ("without", "with passages"):
            median, p95 = quantiles(timings[(step, label)])
            cells.append(f"{label} {median * 1000:6.2f} / {p95 * 1000:6.2f}")
        print(f"  {step:15s} " + "   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--home", type=Path, default=None, help="reuse (or fill) this CAIRN_HOME")
    options = parser.parse_args()
    splitting()
    asyncio.run(per_query(options.home, options.repeats))


if __name__ == "__main__":
    main()
