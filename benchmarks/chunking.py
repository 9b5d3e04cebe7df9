"""How long chunking a file at the index's size cap takes, next to tokenizing it once.

Usage: ``.venv/bin/python benchmarks/chunking.py [FILE ...]`` (default: cairn's own Python sources,
concatenated to ~500 KB, the `files_max_bytes` cap). Every changed file the agent touches is
chunked, so this is the index's hot path. Timed (best of a few runs each):

* ``encode`` — tiktoken encoding the whole text once: the floor for anything that counts tokens;
* ``chunk_text`` — per-line token counts plus break and overlap decisions (900 tokens, 15 %);
* ``keywords`` — ``document_keywords`` over the same text;
* ``redact`` — the redaction pass every indexed file goes through first;
* ``chunk_text`` on a minified file of the same size (one line, cut into pieces), for information.

Chunking is expected to cost at most twice the single encode (it counts tokens per line, once).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from cairn.files.chunking import chunk_text
from cairn.files.keywords import document_keywords
from cairn.tokens import encoding
from cairn.transcripts.redact import redact

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_BYTES = 500_000
RUNS = 5
TARGET_RATIO = 2.0


def _sample(files: list[Path]) -> str:
    parts: list[str] = []
    size = 0
    while size < TARGET_BYTES:
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            parts.append(text)
            size += len(text.encode("utf-8"))
            if size >= TARGET_BYTES:
                break
    return "".join(parts)


def _best_of(work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str]) -> int:
    files = [Path(arg) for arg in argv] or sorted((REPO_ROOT / "cairn").rglob("*.py"))
    text = _sample(files)
    enc = encoding()
    enc.encode_ordinary("warm up")
    tokens = len(enc.encode_ordinary(text))
    encode = _best_of(lambda: enc.encode_ordinary(text))
    chunks = chunk_text(text)
    chunking = _best_of(lambda: chunk_text(text))
    keywords = _best_of(lambda: document_keywords("sample.py", text))
    redacting = _best_of(lambda: redact(text))
    minified = "var a=function(b){return b*2+c.d(e,'xyz')};" * (len(text) // 43)
    chunking_minified = _best_of(lambda: chunk_text(minified))
    ratio = chunking / encode
    lines = text.count("\n")
    print(f"input: {len(text.encode('utf-8')) / 1000:.0f} KB, {lines} lines, {tokens} tokens")
    print(f"encode whole text  : {encode * 1000:8.1f} ms")
    print(f"chunk_text         : {chunking * 1000:8.1f} ms  ({len(chunks)} chunks)")
    print(f"document_keywords  : {keywords * 1000:8.1f} ms")
    print(f"redact             : {redacting * 1000:8.1f} ms")
    print(f"chunk_text minified: {chunking_minified * 1000:8.1f} ms  (one {len(minified) // 1000} KB line)")
    print(f"ratio chunk/encode : {ratio:8.2f}  (target <= {TARGET_RATIO})")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
