"""The viewer's search and home pages at 10K ideas: p50/p95 of each page next to the same ops in-process.

Usage::

    .venv/bin/python benchmarks/ui.py [--size 10000] [--cache DIR] [--repeats 3] [--json]

The store is `benchmarks/search.py`'s generated corpus (``--cache`` reuses one built there, e.g.
``--cache /tmp/bench10k``). Two figures, measured in the same run over the same ~50 queries (hybrid,
kind all, 10 results, usage recorded, as a person's search does):

* **ops**: `run_op(store, "search", ...)` in this process on an open store — what the CLI's direct path
  and the daemon compute, the baseline;
* **page**: a real `cairn ui` process (no daemon, so it opens the store itself, kept warm between
  searches) asked `GET /search?q=...` over HTTP with its token: the op plus routing, template rendering
  and HTTP. The ratio page/ops is what the viewer adds.

The home page (`GET /`) is timed the same way against its `overview` op in-process (`HOME_REPEATS`
times each; the page also reads `cairn status`'s figures, as the page does).

Also reported: the first page after the viewer's store was closed (the store opened and its vector
index loaded on that request). The target (issue 18): page p95 under 300 ms at 10K ideas.
Exit status: 0 when it holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The sibling benchmark builds (or reuses) the corpus.
from search import (
    _embedding,
    _summary,
    ensure_corpus,
    latency_queries,
    log,
    open_store,
)

TARGET_P95_MS = 300.0
HOME_REPEATS = 20
REPO = Path(__file__).resolve().parents[1]


def _args(query: str) -> dict[str, Any]:
    return {"query": query, "mode": "hybrid", "kind": "all", "limit": 10, "record_usage": True}


async def time_ops(home: Path, queries: list[str], repeats: int) -> tuple[list[float], list[float]]:
    """Search samples and `overview` (the home page's op) samples, on one open store."""
    from cairn.daemon.server import run_op

    store, _ = await open_store(home, _embedding())

    async def timed(op: str, args: dict[str, Any]) -> float:
        start = time.perf_counter()
        await run_op(store, op, args)
        return (time.perf_counter() - start) * 1000

    try:
        for q in queries:  # warm-up: collections open, model loaded, page cache filled
            await run_op(store, "search", _args(q))
        await run_op(store, "overview", {})
        samples = [await timed("search", _args(q)) for _ in range(repeats) for q in queries]
        overview = [await timed("overview", {}) for _ in range(HOME_REPEATS)]
        return samples, overview
    finally:
        await store.close()


def time_page(home: Path, queries: list[str], repeats: int) -> tuple[list[float], float, list[float]]:
    """Search page samples, the first page's time (store opened on that request), home page samples."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["CAIRN_HOME"] = str(home)
    cairn = REPO / ".venv" / "bin" / "cairn"
    proc = subprocess.Popen(
        [str(cairn), "ui", "--port", "0", "--json"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        started = json.loads(proc.stdout.readline())
        token = (home / "ui-token").read_text().strip()
        with httpx.Client(
            base_url=f"http://127.0.0.1:{started['port']}", headers={"x-cairn-token": token}, timeout=60
        ) as client:

            def get(path: str) -> float:
                start = time.perf_counter()
                response = client.get(path)
                elapsed = (time.perf_counter() - start) * 1000
                assert response.status_code == 200, response.text[:300]
                return elapsed

            def page(q: str) -> float:
                return get("/search?" + urlencode({"q": q, "limit": 10}))

            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    client.get("/forgets")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            first = page(queries[0])
            for q in queries:
                page(q)
            samples = [page(q) for _ in range(repeats) for q in queries]
            get("/")
            home_samples = [get("/") for _ in range(HOME_REPEATS)]
        return samples, first, home_samples
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--cache", type=Path, help="Directory holding (or to hold) ideas-SIZE stores.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cairn-ui-bench-") as scratch:
        base = args.cache or Path(scratch)
        home = base / f"ideas-{args.size}"
        info = asyncio.run(ensure_corpus(home, args.size, _embedding()))
        queries = latency_queries()
        log(f"timing {len(queries)} queries x {args.repeats} through the ops")
        search_samples, overview_samples = asyncio.run(time_ops(home, queries, args.repeats))
        ops, overview = _summary(search_samples), _summary(overview_samples)
        log("timing the same searches, and the home page, as pages of a running cairn ui")
        samples, first, home_samples = time_page(home, queries, args.repeats)
        page, home_page = _summary(samples), _summary(home_samples)
    figures = {
        "ideas": info["size"],
        "queries": len(queries),
        "repeats": args.repeats,
        "ops_ms": ops,
        "page_ms": page,
        "first_page_ms": round(first, 1),
        "ratio_p50": round(page["p50_ms"] / ops["p50_ms"], 2),
        "ratio_p95": round(page["p95_ms"] / ops["p95_ms"], 2),
        "overview_op_ms": overview,
        "home_page_ms": home_page,
        "ratio_home_p50": round(home_page["p50_ms"] / overview["p50_ms"], 2),
        "target_p95_ms": TARGET_P95_MS,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    met = page["p95_ms"] < TARGET_P95_MS
    if args.json:
        print(json.dumps({**figures, "met": met}, indent=2))
    else:
        print(f"search at {info['size']:,} ideas, {len(queries)} queries x {args.repeats}:")
        print(f"  ops (baseline)  p50 {ops['p50_ms']:7.1f} ms   p95 {ops['p95_ms']:7.1f} ms")
        print(f"  viewer page     p50 {page['p50_ms']:7.1f} ms   p95 {page['p95_ms']:7.1f} ms")
        print(f"  ratio page/ops  p50 {figures['ratio_p50']}x   p95 {figures['ratio_p95']}x")
        print(f"  first page (store opened on it): {first:.0f} ms")
        print(f"home, {HOME_REPEATS} times:")
        print(f"  overview op (baseline) p50 {overview['p50_ms']:7.1f} ms   p95 {overview['p95_ms']:7.1f} ms")
        print(f"  home page      p50 {home_page['p50_ms']:7.1f} ms   p95 {home_page['p95_ms']:7.1f} ms")
        print(f"  ratio page/op  p50 {figures['ratio_home_p50']}x")
        print(f"  target: page p95 < {TARGET_P95_MS:.0f} ms — {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
