"""Session-truth sets: what the next session should be told, labelled by line; how SessionStart scores.

A truth file (the format of `evals/datasets/session-truth-dev/truth.json`) is a JSON object keyed by a
transcript path relative to the transcripts directory; each session carries `cwd`, `summary` and five
lists — `open_items` `{text, line, why_open}`, `closed_items` `{text, raised_line, resolved_line}`,
`decisions` `{text, line}`, `fixes` `{problem, fix, problem_line, fix_line}` and `declined` `{text, line}`
— every line a 1-based physical line of that file. `load_truth` checks all of it before any work and raises
`BenchmarkError` with one line naming the file and the session.

`score_session` follows the set's README: a shown item is one idea with the transcript lines it stands
on, and it matches a label within `tolerance` lines, one to one, nearest first.

- **open** (open questions and todos): correct when it matches an open item; an unmatched one near a
  closed item's raised or resolved line, or near a declined suggestion, is a *wrong open* — the
  costliest error, telling the agent that finished or rejected work is still to do;
- **decisions**: correct when it matches a decision;
- **fixes**: correct when the fix's line or the problem it answers matches a fix pair;
- **conclusions** have no label of their own: correct when near any labelled line (decision, fix,
  closed item, open item), so a conclusion that states nothing a teammate marked counts against it.

In every section an unmatched item near a declined line is counted as *declined shown*: a rejected
suggestion presented as a fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cairn.evals.qa import relative_key, validation_reason
from cairn.evals.questions import BenchmarkError, physical_lines, read_json

SECTIONS = ("open", "decisions", "fixes", "conclusions")

_REPO = Path(__file__).resolve().parents[2]
#: The repository's session-truth set (8 real sessions) over the same transcripts as coding-qa-dev.
DEFAULT_TRUTH = _REPO / "evals" / "datasets" / "session-truth-dev" / "truth.json"


class _Label(BaseModel):
    model_config = ConfigDict(extra="allow")


class OpenLabel(_Label):
    text: str
    line: int = Field(ge=1)


class ClosedLabel(_Label):
    text: str
    raised_line: int = Field(ge=1)
    resolved_line: int = Field(ge=1)


class DecisionLabel(_Label):
    text: str
    line: int = Field(ge=1)


class FixLabel(_Label):
    problem: str
    fix: str
    problem_line: int = Field(ge=1)
    fix_line: int = Field(ge=1)


class SessionTruth(_Label):
    """The labels of one session."""

    cwd: str = Field(min_length=1)
    summary: str = ""
    open_items: list[OpenLabel] = Field(default_factory=list)
    closed_items: list[ClosedLabel] = Field(default_factory=list)
    decisions: list[DecisionLabel] = Field(default_factory=list)
    fixes: list[FixLabel] = Field(default_factory=list)
    declined: list[DecisionLabel] = Field(default_factory=list)

    def lines(self) -> list[int]:
        """Every labelled line."""
        return [
            *(o.line for o in self.open_items),
            *(line for c in self.closed_items for line in (c.raised_line, c.resolved_line)),
            *(d.line for d in self.decisions),
            *(line for f in self.fixes for line in (f.problem_line, f.fix_line)),
            *(d.line for d in self.declined),
        ]


@dataclass(frozen=True)
class TruthSet:
    path: Path
    transcripts: Path
    sessions: dict[str, SessionTruth]  # key (relative path) -> labels
    files: dict[str, Path]  # key -> transcript file


def load_truth(path: Path, transcripts: Path) -> TruthSet:
    """Read and check a truth file against the transcripts directory; raises `BenchmarkError`."""
    name = path.name
    data = read_json(path)
    if not isinstance(data, dict) or not data:
        raise BenchmarkError(f"{name}: expected a non-empty JSON object keyed by transcript path")
    if not transcripts.is_dir():
        raise BenchmarkError(f"{transcripts}: no such transcripts directory")
    sessions: dict[str, SessionTruth] = {}
    files: dict[str, Path] = {}
    for key, raw in data.items():
        try:
            relative_key(key)
            truth = SessionTruth.model_validate(raw)
        except ValueError as exc:
            reason = validation_reason(exc) if isinstance(exc, ValidationError) else str(exc)
            raise BenchmarkError(f"{name}: session {key}: {reason}") from exc
        file = transcripts / key
        if not file.is_file():
            raise BenchmarkError(f"{name}: session {key}: transcript not found in {transcripts}")
        count = len(physical_lines(file))
        if past := [line for line in truth.lines() if line > count]:
            raise BenchmarkError(f"{name}: session {key}: line {past[0]} is past the end ({count} lines)")
        sessions[key] = truth
        files[key] = file
    return TruthSet(path=path, transcripts=transcripts, sessions=sessions, files=files)


@dataclass(frozen=True)
class Shown:
    """One item SessionStart showed: its section, idea, text and the transcript lines it stands on
    (its source line; for a fix also the line of the problem it answers)."""

    section: str
    idea: int
    text: str
    lines: tuple[int, ...]


def _near(lines: Iterable[int], targets: Iterable[int], tolerance: int) -> int | None:
    """The smallest distance between any of `lines` and any of `targets` if within `tolerance`."""
    distances = [abs(a - b) for a in lines for b in targets]
    best = min(distances, default=None)
    return best if best is not None and best <= tolerance else None


def _match(
    shown: Sequence[Shown], labels: Sequence[Sequence[int]], tolerance: int
) -> tuple[dict[int, int], set[int]]:
    """One-to-one matching, nearest pair first: `{shown index: label index}` and the labels matched."""
    pairs = sorted(
        (distance, i, j)
        for i, item in enumerate(shown)
        for j, label in enumerate(labels)
        if (distance := _near(item.lines, label, tolerance)) is not None
    )
    matched: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in pairs:
        if i not in matched and j not in used:
            matched[i] = j
            used.add(j)
    return matched, used


def _labels(truth: SessionTruth, section: str) -> list[tuple[int, ...]]:
    if section == "open":
        return [(o.line,) for o in truth.open_items]
    if section == "decisions":
        return [(d.line,) for d in truth.decisions]
    if section == "fixes":
        return [(f.problem_line, f.fix_line) for f in truth.fixes]
    return [(line,) for line in truth.lines() if line not in {d.line for d in truth.declined}]


def score_session(truth: SessionTruth, shown: Sequence[Shown], tolerance: int = 3) -> dict[str, Any]:
    """Per section: shown, correct, labels, labels recalled, wrong opens (open only) and declined shown."""
    closed = [line for c in truth.closed_items for line in (c.raised_line, c.resolved_line)]
    declined = [d.line for d in truth.declined]
    figures: dict[str, Any] = {}
    for section in SECTIONS:
        items = [s for s in shown if s.section == section]
        labels = _labels(truth, section)
        if section == "conclusions":
            correct = {
                i
                for i, item in enumerate(items)
                if any(_near(item.lines, lb, tolerance) is not None for lb in labels)
            }
            recalled = None
        else:
            matched, used = _match(items, labels, tolerance)
            correct, recalled = set(matched), len(used)
        wrong = [items[i] for i in range(len(items)) if i not in correct]
        row: dict[str, Any] = {
            "shown": len(items),
            "correct": len(correct),
            "labels": None if section == "conclusions" else len(labels),
            "recalled": recalled,
            "declined_shown": sum(_near(w.lines, declined, tolerance) is not None for w in wrong),
        }
        if section == "open":
            row["wrong_open"] = sum(_near(w.lines, closed + declined, tolerance) is not None for w in wrong)
        row["misses"] = [{"idea": w.idea, "lines": list(w.lines), "text": w.text} for w in wrong]
        figures[section] = row
    return figures


def totals(per_session: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Micro-averaged totals per section: precision = correct / shown, recall = recalled / labels."""
    result: dict[str, Any] = {}
    for section in SECTIONS:
        rows = [figures[section] for figures in per_session.values()]
        shown = sum(r["shown"] for r in rows)
        correct = sum(r["correct"] for r in rows)
        row: dict[str, Any] = {
            "shown": shown,
            "correct": correct,
            "precision": round(correct / shown, 4) if shown else None,
            "declined_shown": sum(r["declined_shown"] for r in rows),
        }
        if section != "conclusions":
            labels = sum(r["labels"] for r in rows)
            recalled = sum(r["recalled"] for r in rows)
            row.update(
                labels=labels, recalled=recalled, recall=round(recalled / labels, 4) if labels else None
            )
        if section == "open":
            row["wrong_open"] = sum(r["wrong_open"] for r in rows)
        result[section] = row
    return result


@dataclass(frozen=True)
class Stored:
    """One idea the indexer stored for a session: its intent, line, whether it is settled (answered or
    completed) and whether recall leaves it out as abandoned."""

    idea: int
    intent: str
    line: int
    settled: bool
    abandoned: bool


_RAISED = ("question", "problem", "todo")


def score_ideas(truth: SessionTruth, ideas: Sequence[Stored], tolerance: int = 3) -> dict[str, Any]:
    """How the indexer itself did, before SessionStart chooses: per label, whether an idea of the right
    kind sits within `tolerance` lines of it (captured) and, for raised items, whether its state is
    right (open items left unsettled, closed ones settled). Declined suggestions stored as a live
    decision or fix are counted as errors.

    Returns `{open, closed, decisions, fixes: {labels, captured, state_right}, declined_as_fact}`; a
    label's state is right when some captured idea near it has the right state.
    """

    def near(line: int, kinds: tuple[str, ...]) -> list[Stored]:
        return [i for i in ideas if i.intent in kinds and abs(i.line - line) <= tolerance]

    open_found = [near(o.line, _RAISED) for o in truth.open_items]
    closed_found = [near(c.raised_line, _RAISED) for c in truth.closed_items]
    figures: dict[str, Any] = {
        "open": {
            "labels": len(truth.open_items),
            "captured": sum(bool(found) for found in open_found),
            "state_right": sum(any(not i.settled for i in found) for found in open_found),
        },
        "closed": {
            "labels": len(truth.closed_items),
            "captured": sum(bool(found) for found in closed_found),
            "state_right": sum(any(i.settled for i in found) for found in closed_found),
        },
        "decisions": {
            "labels": len(truth.decisions),
            "captured": sum(bool(near(d.line, ("decision",))) for d in truth.decisions),
        },
        "fixes": {
            "labels": len(truth.fixes),
            "captured": sum(
                bool(near(f.fix_line, ("solution",)) or near(f.problem_line, ("problem", "question")))
                for f in truth.fixes
            ),
        },
    }
    figures["declined_as_fact"] = sum(
        any(not i.abandoned for i in near(d.line, ("decision", "solution"))) for d in truth.declined
    )
    return figures


def idea_totals(per_session: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """`score_ideas` summed over sessions, with the captured and state-right shares."""
    result: dict[str, Any] = {}
    for part in ("open", "closed", "decisions", "fixes"):
        rows = [figures[part] for figures in per_session.values()]
        row = {key: sum(r[key] for r in rows) for key in rows[0]} if rows else {"labels": 0, "captured": 0}
        labels = row["labels"]
        row["captured_share"] = round(row["captured"] / labels, 4) if labels else None
        if "state_right" in row:
            row["state_right_share"] = round(row["state_right"] / labels, 4) if labels else None
        result[part] = row
    result["declined_as_fact"] = sum(figures["declined_as_fact"] for figures in per_session.values())
    return result
