"""Fit search's score factor per message origin and tool, or per idea intent, on the tuning sets.

Conversation and tool output compete in one ranking, and how much a tool result should weigh against
a reply is an empirical question: this script answers it on the development sets — coding-qa-dev,
coding-qa-corpus/dev.json and locomo-dev — and never on `coding-qa-corpus/held.json`, which is only
reported. Each set's store is built once (offline indexer, kept under `--stores`); every candidate
setting then only re-runs the searches, so a round over a dozen keys takes minutes.

The objective is the mean over the sets of hybrid/all MRR, subject to no set's recall@5 or recall@10
falling below what the defaults give. Coordinate descent: each key in turn takes the grid value that
improves the objective most, until a round changes nothing. It prints the chosen factors as the
`search_boosts` entries to put in `cairn/config.py`, and each set's figures before and after.

    PYTHONPATH=. .venv/bin/python scripts/fit_search_priors.py --shared ../shared --stores /tmp/priors
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.evals.benchmark import LineBM25, line_docs, run_benchmark, score_questions
from cairn.evals.indexing import eval_settings
from cairn.evals.locomo import conversation_names, convert, load_conversation
from cairn.evals.qa import load_qa
from cairn.evals.questions import Question
from cairn.store.store import Store

REPO = Path(__file__).resolve().parents[1]
GROUP = "hybrid/all"
#: The keys fitted: every message origin, and the tools whose output differs most in kind.
KEYS = (
    "prompt",
    "reply",
    "tool_call",
    "tool_result",
    "subagent",
    "summary",
    "tool_result:Bash",
    "tool_result:Read",
    "tool_result:Grep",
    "tool_result:Edit",
    "tool_call:TodoWrite",
)
#: Idea intents and topic spans: fitted when asked for (`--keys`), since ideas compete with messages.
IDEA_KEYS = ("decision", "conclusion", "solution", "problem", "question", "todo", "context", "span")
GRID = (0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0, 1.1, 1.25)


@dataclass
class DevSet:
    name: str
    files: dict[str, Path]
    questions: list[Question]
    home: Path
    tolerance: int
    store: Store | None = None
    bm25: LineBM25 | None = None


def dev_sets(shared: Path, stores: Path) -> list[DevSet]:
    """The tuning sets, each with the directory its store lives in."""
    qa = load_qa(REPO / "evals/datasets/coding-qa-dev/qa.json", REPO / "tests/fixtures/transcripts")
    corpus = load_qa(REPO / "evals/datasets/coding-qa-corpus/dev.json", shared / "corpus")
    paths = sorted((shared / "benchmarks/locomo-dev").glob("*.json"))
    conversations = [load_conversation(path) for path in paths]
    converted = [convert(c, n) for c, n in zip(conversations, conversation_names(paths), strict=True)]
    locomo_home = stores / "locomo-dev"
    for conversation in converted:
        conversation.write(locomo_home / "sessions")
    return [
        DevSet("coding-qa-dev", qa.files, qa.questions, stores / "coding-qa-dev", 3),
        DevSet("coding-qa-corpus-dev", corpus.files, corpus.questions, stores / "coding-qa-corpus-dev", 3),
        # `cairn eval locomo` scores LoCoMo at the evidence turn itself.
        DevSet(
            "locomo-dev",
            {key: path for c in converted for key, path in c.files.items()},
            [q for c in converted for q in c.questions],
            locomo_home,
            0,
        ),
    ]


async def open_set(dev: DevSet) -> None:
    """Build the set's store once (offline indexer), then open it for searching."""
    if not (dev.home / "cairn.db").exists():
        print(f"building {dev.name} in {dev.home} …", file=sys.stderr)
        await run_benchmark(
            benchmark="priors", dataset=dev.name, files=dev.files, questions=dev.questions[:1], home=dev.home
        )
    dev.store = await Store.open(eval_settings(dev.home))
    dev.bm25 = LineBM25(line_docs(dev.files))


async def figures(dev: DevSet, boosts: dict[str, float]) -> dict[str, float]:
    assert dev.store is not None and dev.bm25 is not None
    base = eval_settings(dev.home)
    dev.store.settings = base.model_copy(update={"search_boosts": boosts})
    key_of_path = {str(path.resolve()): key for key, path in dev.files.items()}
    scored = await score_questions(
        dev.store,
        dev.bm25,
        dev.questions,
        key_of_path,
        modes=("hybrid",),
        kinds=("all",),
        tolerance=dev.tolerance,
    )
    return dict(scored["retrieval"][GROUP])


#: Sets without tool output (LoCoMo is conversation only): a tool's factor cannot change them.
CONVERSATION_ONLY = frozenset({"locomo-dev"})


async def evaluate(
    sets: list[DevSet],
    boosts: dict[str, float],
    key: str | None = None,
    known: dict[str, dict[str, float]] | None = None,
) -> dict[str, dict[str, float]]:
    """Each set's figures under `boosts`; a set `key` cannot affect keeps its `known` figures."""
    skip = key is not None and known is not None and key not in ("prompt", "reply", *IDEA_KEYS)
    return {
        dev.name: known[dev.name]
        if skip and known and dev.name in CONVERSATION_ONLY
        else await figures(dev, boosts)
        for dev in sets
    }


def objective(results: dict[str, dict[str, float]], floor: dict[str, dict[str, float]]) -> float:
    """Mean MRR over the sets; minus infinity when a set's recall@5 or @10 falls below the floor."""
    for name, got in results.items():
        if any(got[k] < floor[name][k] - 1e-9 for k in ("recall_any@5", "recall_any@10")):
            return float("-inf")
    return sum(got["mrr"] for got in results.values()) / len(results)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, required=True, help="The shared data directory (../shared).")
    parser.add_argument("--stores", type=Path, required=True, help="Where the sets' stores are kept.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--keys",
        default=",".join(KEYS),
        help=f"Comma-separated keys to fit, of {', '.join(KEYS + IDEA_KEYS)} (default: the message keys).",
    )
    args = parser.parse_args()
    keys = tuple(key for key in args.keys.split(",") if key)
    if unknown := set(keys) - set(KEYS + IDEA_KEYS):
        parser.error(f"unknown keys: {', '.join(sorted(unknown))}")
    sets = dev_sets(args.shared.resolve(), args.stores.resolve())
    for dev in sets:
        await open_set(dev)
    try:
        defaults = dict(eval_settings(sets[0].home).search_boosts)
        before = await evaluate(sets, defaults)
        best, best_score = dict(defaults), objective(before, before)
        current = before
        for round_number in range(args.rounds):
            changed = False
            for key in keys:
                for value in GRID:
                    trial = {**best, key: value}
                    results = await evaluate(sets, trial, key, current)
                    got = objective(results, before)
                    if got > best_score + 1e-4:
                        best, best_score, current, changed = trial, got, results, True
                print(
                    f"round {round_number + 1} {key}={best.get(key)} objective {best_score:.4f} "
                    + " ".join(f"{name} @1 {got['recall_any@1']:.3f}" for name, got in current.items()),
                    file=sys.stderr,
                )
            if not changed:
                break
        after = await evaluate(sets, best)
    finally:
        for dev in sets:
            if dev.store is not None:
                await dev.store.close()
            if dev.bm25 is not None:
                dev.bm25.close()
    fitted = {key: best[key] for key in keys if key in best}
    report: dict[str, Any] = {"search_boosts": fitted, "before": before, "after": after}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
