"""What the indexer distilled from one labelled session, scored by line against its session-truth labels.

Pure: the caller reads the store (`cairn.evals.sessions`) and hands over plain records, so every figure
here is tested on hand-built labels and ideas. The labels are `cairn.evals.truth.SessionTruth`; a label is
*covered* when some idea, of any intent, sits within `tolerance` lines of it — the question is whether
the indexer kept anything at the place a teammate marked, not whether it named it rightly (the intent
and state are `cairn.evals.truth.score_ideas`'s business):

- **decisions** at `line`; **fixes** at `problem_line` or `fix_line`; **closed** items at `raised_line`
  or `resolved_line`; **open** items at `line`;
- **near a label**: the share of ideas within `tolerance` of any labelled line (open, closed raised and
  resolved, decisions, fix problem and fix lines — not declined suggestions, which nothing should keep
  as a fact): how much of what the indexer stores is something a teammate marked;
- **answered links**: each idea the store marks answered, with the line that answers it. A link is
  correct when its question lies within `tolerance` of a closed item's `raised_line` and its answer
  within `tolerance` of that same item's `resolved_line` — or, for a failure settled by its fix, of a
  fix's `problem_line` and `fix_line` (the change that made it pass: a labeller lists a failed check
  fixed later as a fix pair, not always as a closed item too). `by_fix` counts the links right only as
  a fix pair. Todos marked done are scored the same way apart (*done links*).

`add` sums sessions' figures (micro-averaged: shares are recomputed from the summed counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cairn.evals.truth import SessionTruth

PARTS = ("decisions", "fixes", "closed", "open")
DIGITS = 4


@dataclass(frozen=True)
class Idea:
    """One stored idea: its id, intent and source line."""

    id: int
    intent: str
    line: int


@dataclass(frozen=True)
class Link:
    """An idea the store settled (answered, or done for a todo) and the line that settled it."""

    idea: int
    line: int  # the question's (or todo's) own line
    answer_line: int


def share(part: int, whole: int) -> float | None:
    return round(part / whole, DIGITS) if whole else None


def _near(line: int, targets: Iterable[int], tolerance: int) -> bool:
    return any(abs(line - target) <= tolerance for target in targets)


def _labels(truth: SessionTruth, part: str) -> list[tuple[tuple[int, ...], dict[str, Any]]]:
    """A part's labels: the lines each may be covered at, and what to show when it is not."""
    if part == "decisions":
        return [((d.line,), {"text": d.text, "line": d.line}) for d in truth.decisions]
    if part == "fixes":
        return [
            (
                (f.problem_line, f.fix_line),
                {"text": f"{f.problem} -> {f.fix}", "lines": [f.problem_line, f.fix_line]},
            )
            for f in truth.fixes
        ]
    if part == "closed":
        return [
            ((c.raised_line, c.resolved_line), {"text": c.text, "lines": [c.raised_line, c.resolved_line]})
            for c in truth.closed_items
        ]
    return [((o.line,), {"text": o.text, "line": o.line}) for o in truth.open_items]


def labelled_lines(truth: SessionTruth) -> list[int]:
    """Every line a teammate marked as worth keeping (declined suggestions left out)."""
    return [
        *(o.line for o in truth.open_items),
        *(line for c in truth.closed_items for line in (c.raised_line, c.resolved_line)),
        *(d.line for d in truth.decisions),
        *(line for f in truth.fixes for line in (f.problem_line, f.fix_line)),
    ]


def _links(truth: SessionTruth, links: Sequence[Link], tolerance: int) -> dict[str, Any]:
    def near(link: Link, pairs: Iterable[tuple[int, int]]) -> bool:
        return any(
            abs(link.line - raised) <= tolerance and abs(link.answer_line - resolved) <= tolerance
            for raised, resolved in pairs
        )

    closed = [(c.raised_line, c.resolved_line) for c in truth.closed_items]
    fixes = [(f.problem_line, f.fix_line) for f in truth.fixes]
    wrong = [link for link in links if not near(link, closed) and not near(link, fixes)]
    by_fix = sum(not near(link, closed) and near(link, fixes) for link in links)
    return {
        "links": len(links),
        "correct": len(links) - len(wrong),
        "precision": share(len(links) - len(wrong), len(links)),
        "by_fix": by_fix,
        "wrong": [{"idea": w.idea, "line": w.line, "answer_line": w.answer_line} for w in wrong],
    }


def score_distilled(
    truth: SessionTruth,
    ideas: Sequence[Idea],
    *,
    messages: int,
    answered: Sequence[Link] = (),
    done: Sequence[Link] = (),
    tolerance: int = 3,
) -> dict[str, Any]:
    """One session's figures (see the module docstring), with each uncovered label's text and lines."""
    lines = [i.line for i in ideas]
    coverage: dict[str, Any] = {}
    for part in PARTS:
        labels = _labels(truth, part)
        missed = [
            shown for targets, shown in labels if not any(_near(line, targets, tolerance) for line in lines)
        ]
        covered = len(labels) - len(missed)
        coverage[part] = {"labels": len(labels), "covered": covered, "share": share(covered, len(labels))}
        coverage[part]["missed"] = missed
    marked = labelled_lines(truth)
    near = sum(_near(line, marked, tolerance) for line in lines)
    return {
        "messages": messages,
        "ideas": len(ideas),
        "ideas_per_100_messages": _per_100(len(ideas), messages),
        "coverage": coverage,
        "near_label": {"ideas": len(ideas), "near": near, "share": share(near, len(ideas))},
        "answered_links": _links(truth, answered, tolerance),
        "done_links": _links(truth, done, tolerance),
    }


def _per_100(ideas: int, messages: int) -> float | None:
    return round(100 * ideas / messages, 2) if messages else None


def add(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Sessions' `score_distilled` figures summed, shares recomputed (micro-averaged); no lists of misses."""
    rows = list(rows)
    messages = sum(r["messages"] for r in rows)
    ideas = sum(r["ideas"] for r in rows)
    coverage = {}
    for part in PARTS:
        labels = sum(r["coverage"][part]["labels"] for r in rows)
        covered = sum(r["coverage"][part]["covered"] for r in rows)
        coverage[part] = {"labels": labels, "covered": covered, "share": share(covered, labels)}
    near = sum(r["near_label"]["near"] for r in rows)
    result: dict[str, Any] = {
        "sessions": len(rows),
        "messages": messages,
        "ideas": ideas,
        "ideas_per_100_messages": _per_100(ideas, messages),
        "coverage": coverage,
        "near_label": {"ideas": ideas, "near": near, "share": share(near, ideas)},
    }
    for name in ("answered_links", "done_links"):
        links = sum(r[name]["links"] for r in rows)
        correct = sum(r[name]["correct"] for r in rows)
        by_fix = sum(r[name].get("by_fix", 0) for r in rows)
        result[name] = {
            "links": links,
            "correct": correct,
            "precision": share(correct, links),
            "by_fix": by_fix,
        }
    return result
