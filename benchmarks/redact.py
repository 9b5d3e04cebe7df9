"""How fast `redact` is on what it really sees: transcript text, and code the file index reads.

Usage: ``.venv/bin/python benchmarks/redact.py [FILE.jsonl ...]`` (default: every shared fixture under
``tests/fixtures/transcripts``). Every piece of text capture stores goes through `redact` first
(prompts, answers, tool inputs, tool results), so it sits on the per-line hot path of capture. Timed,
best of a few runs each:

* ``transcripts`` — `redact` on every string value of every JSON line of the fixtures (roughly what
  the normaliser hands it: one call per text block, tool input value and tool result);
* ``code`` — `redact` on cairn's own Python sources, concatenated (what every indexed file costs).

Throughput is reported in MB/s of text, with the number of replacements made (a change of rules shows
up there too).

* ``adversarial`` — hostile strings of ``ADVERSARIAL_BYTES`` each (a name made of thousands of secret
  words, with or without separators and quotes), each timed next to two baselines of the same size in
  the same run: real transcript text (the fixtures' strings joined) and prose without a secret word,
  which the rules' trigger check skips at once. Target: the worst at most 2x the transcript text (issue
  30: ``"key" * 16000`` took 14 s, quadratic in its length, where text of that size takes milliseconds).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cairn.transcripts.redact import redact_with_count

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO_ROOT / "tests" / "fixtures" / "transcripts"
RUNS = 5
ADVERSARIAL_BYTES = 48_000
#: Repeated to ADVERSARIAL_BYTES after "see ": each a shape a transcript could hold thousands of.
ADVERSARIAL = (
    "key",
    "Key",
    "KEY",
    "Token",
    "pass.",
    "secret-",
    "credential_",
    "KEY_",
    "key=",
    "key ",
    'key="',
)
PROSE = "the quick brown fox jumps over the lazy dog and runs back home again "


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _transcript_texts(paths: list[Path]) -> list[str]:
    texts: list[str] = []
    for path in paths:
        for line in path.read_bytes().split(b"\n"):
            if not line.strip():
                continue
            try:
                texts.extend(s for s in _strings(json.loads(line)) if s)
            except ValueError:
                continue
    return texts


def _best_of(work: Callable[[], int]) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(RUNS):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def _redact_all(texts: list[str]) -> int:
    return sum(redact_with_count(text)[1] for text in texts)


def _adversarial(texts: list[str]) -> float:
    """Print each hostile string's time next to its two baselines; return the worst ratio to transcript
    text of its size."""
    corpus = "\n".join(texts)
    worst = 0.0
    for unit in ADVERSARIAL:
        hostile = "see " + unit * (ADVERSARIAL_BYTES // len(unit))
        size = len(hostile)
        transcript = corpus[:size]
        prose = (PROSE * (size // len(PROSE) + 1))[:size]
        seconds, _ = _best_of(lambda text=hostile: redact_with_count(text)[1])  # type: ignore[misc]
        baseline, _ = _best_of(lambda text=transcript: redact_with_count(text)[1])  # type: ignore[misc]
        quick, _ = _best_of(lambda text=prose: redact_with_count(text)[1])  # type: ignore[misc]
        worst = max(worst, seconds / baseline)
        print(
            f"adversarial : {unit!r:14} x {ADVERSARIAL_BYTES // len(unit):6d}  {seconds * 1000:6.2f} ms;  "
            f"transcript text {baseline * 1000:5.2f} ms (ratio {seconds / baseline:5.2f}),  "
            f"prose {quick * 1000:5.2f} ms (ratio {seconds / quick:5.2f})"
        )
    print(f"adversarial : worst ratio to transcript text {worst:.2f} (target <= 2.0)")
    return worst


def main(argv: list[str]) -> int:
    paths = [Path(arg) for arg in argv] or sorted(DEFAULT_DIR.rglob("*.jsonl"))
    texts = _transcript_texts(paths)
    code = "".join(p.read_text(encoding="utf-8") for p in sorted((REPO_ROOT / "cairn").rglob("*.py")))
    for name, sample in (("transcripts", texts), ("code", [code])):
        size = sum(len(text.encode("utf-8")) for text in sample)
        seconds, replaced = _best_of(lambda sample=sample: _redact_all(sample))  # type: ignore[misc]
        print(
            f"{name:12}: {size / 1e6:6.2f} MB in {len(sample):6d} texts  {seconds * 1000:8.1f} ms  "
            f"{size / 1e6 / seconds:7.1f} MB/s  {replaced} replaced"
        )
    _adversarial(texts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
