"""Scoring what an indexer stored against gold labels: pure functions over plain rows, no store access.

Kept apart from the store plumbing (`cairn.evals.indexing`) so every number can be checked by hand on a
tiny case. The matching rules are deliberately forgiving where labellers and models legitimately differ
and strict where a difference is a real error:

- An idea matches a gold idea of the same case when its source line is within `tolerance` lines (the
  model may anchor at the message before or after), the intent is the same (a decision stored as context
  is a wrong idea), and it shares at least `MIN_SIMILARITY` of the gold content's key words (wording is
  free; the subject is not). Matching is one-to-one, greedy by similarity, so two stored copies of one
  idea are one hit and one false positive.
- Relations, answers and completions are judged on the idea keys their ends were matched to: a relation
  between ideas that match no gold idea is a false positive, since it cannot be right.
- A question counts as answered at the right place when it points at the gold answer idea, or when it
  was resolved within `tolerance` lines of that answer: the executor records an answer given in a
  message that yields no new idea by its line alone.
- Entities are scored for deduplication: the first stored entity naming a gold entity (by its name or an
  alias, compared like `cairn.tools.matching.name_key`; a gold entity's own name wins over another's
  alias) finds it; a second one is a duplicate and counts against precision like an entity nobody
  labelled.

Counts are kept per case and summed over cases (micro averages), and `cairn.evals.metrics.prf` turns
them into precision, recall and F1 (empty gold and empty output score 1.0: nothing was missed or wrong).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cairn.evals.dataset import IdeaLabel, Labels
from cairn.evals.metrics import prf
from cairn.tools.matching import name_key

MIN_SIMILARITY = 0.2
TOPIC_TOLERANCE = 3
_WORD = re.compile(r"\w+")
# Function words say nothing about what an idea is about. Negations stay: "do not need" is the point.
_STOPWORD_TEXT = """
    a about after all also am an and any are as at be been before being but by can could did do does
    doing for from had has have having he her here his how i if in into is it its itself just let lets
    me more most my of on once only or other our out over own same she should so some such than that the
    their them then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    """A light stem so `locked`/`locking`/`locks` and `cache`/`cached`/`caching` compare equal."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def key_words(text: str) -> set[str]:
    """The words that say what `text` is about: lowercased, stopwords removed, lightly stemmed."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def similarity(gold: str, stored: str) -> float:
    """Share of the gold content's key words found in the stored content (1.0 when gold has none)."""
    wanted = key_words(gold)
    return len(wanted & key_words(stored)) / len(wanted) if wanted else 1.0


@dataclass(frozen=True)
class StoredIdea:
    id: int
    case: str
    line: int | None
    intent: str
    content: str
    answered: bool = False
    answered_by: int | None = None
    completed: bool = False
    resolved_line: int | None = None


@dataclass(frozen=True)
class StoredRelation:
    from_id: int
    to_id: int
    type: str


@dataclass(frozen=True)
class StoredEntity:
    id: int
    names: tuple[str, ...]
    cases: frozenset[str]


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Counts) -> None:
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn

    def prf(self) -> dict[str, Any]:
        return prf(self.tp, self.fp, self.fn)


IdeaMap = dict[int, tuple[str, str]]


def match_ideas(labels: Mapping[str, Labels], stored: Iterable[StoredIdea], tolerance: int) -> IdeaMap:
    """Stored idea id -> (case, gold key): one-to-one, best similarity first, then nearest line."""
    candidates: list[tuple[float, int, int, int, str, str]] = []
    for idea in stored:
        gold = labels.get(idea.case)
        if gold is None or idea.line is None:
            continue
        for order, label in enumerate(gold.ideas):
            distance = abs(idea.line - label.line)
            if distance > tolerance or idea.intent != label.intent:
                continue
            score = similarity(label.content, idea.content)
            if score >= MIN_SIMILARITY:
                candidates.append((-score, distance, idea.id, order, idea.case, label.key))
    mapping: IdeaMap = {}
    taken: set[tuple[str, str]] = set()
    for _score, _distance, idea_id, _order, case, key in sorted(candidates):
        if idea_id not in mapping and (case, key) not in taken:
            mapping[idea_id] = (case, key)
            taken.add((case, key))
    return mapping


def _per_case(cases: Iterable[str]) -> dict[str, Counts]:
    return {case: Counts() for case in cases}


def score_ideas(
    labels: Mapping[str, Labels], stored: list[StoredIdea], mapping: IdeaMap
) -> dict[str, Counts]:
    counts = _per_case(labels)
    for idea in stored:
        if idea.case in counts:
            counts[idea.case].tp += idea.id in mapping
            counts[idea.case].fp += idea.id not in mapping
    for case, gold in labels.items():
        counts[case].fn = len(gold.ideas) - counts[case].tp
    return counts


def score_relations(
    labels: Mapping[str, Labels],
    ideas: Mapping[int, StoredIdea],
    relations: list[StoredRelation],
    mapping: IdeaMap,
) -> dict[str, Counts]:
    """Stored relations (counted in the case of their `from` idea) against gold (type, from, to)."""
    counts = _per_case(labels)
    found: set[tuple[str, str, str, str]] = set()
    gold = {(case, r.type, r.from_, r.to) for case, lab in labels.items() for r in lab.relations}
    for rel in relations:
        source = ideas.get(rel.from_id)
        if source is None or source.case not in counts:
            continue
        start, end = mapping.get(rel.from_id), mapping.get(rel.to_id)
        key = (start[0], rel.type, start[1], end[1]) if start and end and start[0] == end[0] else None
        if key in gold and key not in found:
            found.add(key)
            counts[source.case].tp += 1
        else:
            counts[source.case].fp += 1
    for case, lab in labels.items():
        counts[case].fn = len({(r.type, r.from_, r.to) for r in lab.relations}) - counts[case].tp
    return counts


def score_answered(
    labels: Mapping[str, Labels], stored: list[StoredIdea], mapping: IdeaMap, tolerance: int
) -> dict[str, Counts]:
    counts = _per_case(labels)
    matched: set[tuple[str, str, str]] = set()
    for idea in stored:
        if not idea.answered or idea.case not in counts:
            continue
        gold = labels[idea.case]
        question = mapping.get(idea.id)
        answer = mapping.get(idea.answered_by) if idea.answered_by is not None else None
        hit = None
        for pair in gold.answered:
            key = (idea.case, pair.question, pair.answer)
            if question != (idea.case, pair.question) or key in matched:
                continue
            near = idea.resolved_line is not None and (
                abs(idea.resolved_line - gold.idea(pair.answer).line) <= tolerance
            )
            if answer == (idea.case, pair.answer) or near:
                hit = key
                break
        if hit is not None:
            matched.add(hit)
            counts[idea.case].tp += 1
        else:
            counts[idea.case].fp += 1
    for case, gold in labels.items():
        counts[case].fn = len(gold.answered) - counts[case].tp
    return counts


def score_completed(
    labels: Mapping[str, Labels], stored: list[StoredIdea], mapping: IdeaMap, tolerance: int
) -> dict[str, Counts]:
    counts = _per_case(labels)
    matched: set[tuple[str, str]] = set()
    for idea in stored:
        if not idea.completed or idea.case not in counts:
            continue
        todo = mapping.get(idea.id)
        gold = next(
            (c for c in labels[idea.case].completed if todo == (idea.case, c.todo)),
            None,
        )
        if (
            gold is not None
            and todo not in matched
            and idea.resolved_line is not None
            and abs(idea.resolved_line - gold.line) <= tolerance
        ):
            matched.add((idea.case, gold.todo))
            counts[idea.case].tp += 1
        else:
            counts[idea.case].fp += 1
    for case, gold in labels.items():
        counts[case].fn = len(gold.completed) - counts[case].tp
    return counts


def _match_lines(found: list[int], gold: list[int], tolerance: int) -> int:
    """How many of `found` pair one-to-one with a `gold` line within `tolerance`, nearest pairs first."""
    pairs = sorted(
        (abs(f - g), i, j) for i, f in enumerate(found) for j, g in enumerate(gold) if abs(f - g) <= tolerance
    )
    used_found: set[int] = set()
    used_gold: set[int] = set()
    for _distance, i, j in pairs:
        if i not in used_found and j not in used_gold:
            used_found.add(i)
            used_gold.add(j)
    return len(used_found)


def score_topics(labels: Mapping[str, Labels], span_starts: Mapping[str, list[int]]) -> dict[str, Counts]:
    counts = _per_case(labels)
    for case, gold in labels.items():
        found = span_starts.get(case, [])
        lines = [topic.line for topic in gold.topics]
        tp = _match_lines(found, lines, TOPIC_TOLERANCE)
        counts[case] = Counts(tp, len(found) - tp, len(lines) - tp)
    return counts


def score_entities(labels: Mapping[str, Labels], entities: list[StoredEntity]) -> dict[str, Counts]:
    """Per case: each stored entity linked to the case's ideas finds at most one gold entity."""
    counts = _per_case(labels)
    for case, gold in labels.items():
        canonical = [name_key(label.name) for label in gold.entities]
        keys = [{name_key(n) for n in label.names} for label in gold.entities]
        found: set[int] = set()
        for entity in sorted((e for e in entities if case in e.cases), key=lambda e: e.id):
            names = {name_key(n) for n in entity.names}
            # A gold entity named so comes before one merely aliased so (`JWT` vs PyJWT's alias `jwt`).
            open_ = [i for i in range(len(keys)) if i not in found]
            hit = next((i for i in open_ if canonical[i] in names), None)
            if hit is None:
                hit = next((i for i in open_ if keys[i] & names), None)
            if hit is None:
                counts[case].fp += 1
            else:
                found.add(hit)
                counts[case].tp += 1
        counts[case].fn = len(keys) - len(found)
    return counts


def ideas_at_skip_lines(labels: Mapping[str, Labels], stored: list[StoredIdea]) -> dict[str, int]:
    skip = {case: set(lab.skip_lines) for case, lab in labels.items()}
    result = dict.fromkeys(labels, 0)
    for idea in stored:
        if idea.case in skip and idea.line in skip[idea.case]:
            result[idea.case] += 1
    return result


def misses(
    labels: Mapping[str, Labels], stored: list[StoredIdea], mapping: IdeaMap, tolerance: int
) -> dict[str, list[dict[str, Any]]]:
    """Gold ideas no stored idea matched, each with the stored ideas near its line: for the labeller."""
    taken = set(mapping.values())
    result: dict[str, list[dict[str, Any]]] = {}
    for case, gold in labels.items():
        rows = [
            _miss(label, case, stored, tolerance) for label in gold.ideas if (case, label.key) not in taken
        ]
        if rows:
            result[case] = rows
    return result


def _miss(label: IdeaLabel, case: str, stored: list[StoredIdea], tolerance: int) -> dict[str, Any]:
    near = [
        {
            "id": idea.id,
            "line": idea.line,
            "intent": idea.intent,
            "similarity": round(similarity(label.content, idea.content), 3),
            "content": idea.content,
        }
        for idea in stored
        if idea.case == case and idea.line is not None and abs(idea.line - label.line) <= tolerance
    ]
    return {**label.model_dump(), "near": near}


def mask(secret: str) -> str:
    """Enough of a secret to say which one leaked, without the report repeating it."""
    return secret[:8] + "…" if len(secret) > 8 else "…"


@dataclass
class Scores:
    """Per-field counts by case, and the figures that are counts rather than P/R/F1."""

    fields: dict[str, dict[str, Counts]] = field(default_factory=dict)
    skip: dict[str, int] = field(default_factory=dict)
    secrets: dict[str, int] = field(default_factory=dict)
    leaked: dict[str, list[str]] = field(default_factory=dict)

    def totals(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        for name, per_case in self.fields.items():
            total = Counts()
            for counts in per_case.values():
                total.add(counts)
            metrics[name] = total.prf()
        metrics["skip"] = {"ideas_at_skip_lines": sum(self.skip.values())}
        metrics["redaction"] = {
            "secrets": sum(self.secrets.values()),
            "leaked": sum(len(v) for v in self.leaked.values()),
        }
        return metrics

    def per_case(self) -> dict[str, dict[str, Any]]:
        return {
            case: {
                **{name: per_case[case].prf() for name, per_case in self.fields.items()},
                "skip": {"ideas_at_skip_lines": self.skip.get(case, 0)},
                "redaction": {
                    "secrets": self.secrets.get(case, 0),
                    "leaked": len(self.leaked.get(case, [])),
                    "leaked_secrets": [mask(s) for s in self.leaked.get(case, [])],
                },
            }
            for case in self.secrets
        }
