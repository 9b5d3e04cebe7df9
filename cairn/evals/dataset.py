"""Eval datasets on disk: transcripts, their gold labels and retrieval queries, validated on load.

The format is described in `evals/datasets/README.md`. Everything is checked before any indexing starts
(a typo in a key or a line past the end of a transcript would otherwise show up as a silently lower
score), and every problem names the file it is in, because the people who hit these errors are the
ones writing labels by hand.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cairn.errors import Refusal
from cairn.store.vocab import EntityType, Intent, RelationType

# The repository's own dataset. It is not package data: an installed wheel has none and must be told.
DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "evals" / "datasets" / "core"


class DatasetError(Refusal):
    """A dataset is missing, malformed or inconsistent; the message names the file and the problem."""


class _Label(BaseModel):
    # Unknown fields are refused: a misspelt field name would otherwise be dropped without a word.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class IdeaLabel(_Label):
    key: str = Field(min_length=1)
    line: int = Field(ge=1)
    intent: Intent
    content: str = Field(min_length=1)


class RelationLabel(_Label):
    type: RelationType
    from_: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)


class AnsweredLabel(_Label):
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class CompletedLabel(_Label):
    todo: str = Field(min_length=1)
    line: int = Field(ge=1)


class TopicLabel(_Label):
    line: int = Field(ge=1)
    name: str = ""


class EntityLabel(_Label):
    name: str = Field(min_length=1)
    type: EntityType
    aliases: list[str] = Field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]


class Labels(_Label):
    case: str = Field(min_length=1)
    ideas: list[IdeaLabel]
    relations: list[RelationLabel] = Field(default_factory=list)
    answered: list[AnsweredLabel] = Field(default_factory=list)
    completed: list[CompletedLabel] = Field(default_factory=list)
    topics: list[TopicLabel] = Field(default_factory=list)
    entities: list[EntityLabel] = Field(default_factory=list)
    skip_lines: list[int] = Field(default_factory=list)
    secrets: list[str] = Field(default_factory=list)

    def idea(self, key: str) -> IdeaLabel:
        return next(idea for idea in self.ideas if idea.key == key)


class Query(_Label):
    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    case: str = Field(min_length=1)
    ideas: list[str] = Field(default_factory=list)
    lines: list[int] = Field(default_factory=list)


class Case(BaseModel):
    name: str
    transcript: Path
    labels: Labels


class Dataset(BaseModel):
    name: str
    root: Path
    cases: list[Case]
    queries: list[Query] = Field(default_factory=list)

    def case(self, name: str) -> Case:
        return next(case for case in self.cases if case.name == name)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON: {exc}") from exc


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())


def _line_count(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def _duplicates(values: list[str]) -> list[str]:
    return sorted(value for value, count in Counter(values).items() if count > 1)


def _check_labels(path: Path, labels: Labels, case: str, lines: int) -> None:
    """Every reference resolves and every line lies inside the transcript (1-based, like the store)."""

    def bad(problem: str) -> DatasetError:
        return DatasetError(f"{path}: {problem}")

    if labels.case != case:
        raise bad(f"'case' is {labels.case!r} but the file is for case {case!r}")
    keys = [idea.key for idea in labels.ideas]
    if dupes := _duplicates(keys):
        raise bad(f"duplicate idea keys: {', '.join(dupes)}")
    known = set(keys)

    def check_key(key: str, where: str) -> None:
        if key not in known:
            raise bad(f"{where} refers to unknown idea key {key!r}")

    def check_line(line: int, where: str) -> None:
        if not 1 <= line <= lines:
            raise bad(f"{where}: line {line} is outside the transcript (lines 1-{lines})")

    for idea in labels.ideas:
        check_line(idea.line, f"idea {idea.key}")
    for rel in labels.relations:
        check_key(rel.from_, f"relation {rel.type} from")
        check_key(rel.to, f"relation {rel.type} to")
        if rel.from_ == rel.to:
            raise bad(f"relation {rel.type} links idea {rel.from_!r} to itself")
    for pair in labels.answered:
        check_key(pair.question, "answered.question")
        check_key(pair.answer, "answered.answer")
    for done in labels.completed:
        check_key(done.todo, "completed.todo")
        check_line(done.line, f"completed {done.todo}")
    for topic in labels.topics:
        check_line(topic.line, f"topic {topic.name!r}")
    for line in labels.skip_lines:
        check_line(line, "skip_lines")
    if any(not secret.strip() for secret in labels.secrets):
        raise bad("an empty secret (it would be found everywhere)")


def _load_case(root: Path, transcript: Path) -> Case:
    name = transcript.stem
    path = root / "labels" / f"{name}.json"
    if not path.is_file():
        raise DatasetError(f"{path}: missing: every session needs its labels (case {name!r})")
    try:
        labels = Labels.model_validate(_read_json(path))
    except ValidationError as exc:
        raise DatasetError(f"{path}: {_problems(exc)}") from exc
    _check_labels(path, labels, name, _line_count(transcript))
    return Case(name=name, transcript=transcript, labels=labels)


def _query_files(root: Path) -> list[Path]:
    """`queries.json`, else every `queries-*.json` (several labellers write their own), else none."""
    single = root / "queries.json"
    return [single] if single.is_file() else sorted(root.glob("queries-*.json"))


def _load_queries(root: Path, cases: dict[str, Case]) -> list[Query]:
    queries: list[Query] = []
    seen: dict[str, Path] = {}
    for path in _query_files(root):
        data = _read_json(path)
        items = data.get("queries") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise DatasetError(f'{path}: expected {{"queries": [...]}}')
        for index, item in enumerate(items):
            try:
                query = Query.model_validate(item)
            except ValidationError as exc:
                raise DatasetError(f"{path}: query #{index + 1}: {_problems(exc)}") from exc
            where = f"{path}: query {query.id}"
            if query.id in seen:
                raise DatasetError(f"{where}: id already used in {seen[query.id]}")
            seen[query.id] = path
            case = cases.get(query.case)
            if case is None:
                raise DatasetError(f"{where}: unknown case {query.case!r}")
            keys = {idea.key for idea in case.labels.ideas}
            if missing := [key for key in query.ideas if key not in keys]:
                raise DatasetError(f"{where}: unknown idea keys of case {query.case}: {', '.join(missing)}")
            lines = _line_count(case.transcript)
            if outside := [line for line in query.lines if not 1 <= line <= lines]:
                raise DatasetError(f"{where}: lines {outside} outside the transcript (lines 1-{lines})")
            queries.append(query)
    return queries


def load_dataset(path: str | Path | None = None) -> Dataset:
    """The dataset at `path` (default `DEFAULT_DATASET`), fully validated; raises `DatasetError`."""
    if path is None:
        if not DEFAULT_DATASET.is_dir():
            raise DatasetError(
                f"{DEFAULT_DATASET}: the default dataset is not there (it ships with the cairn repository, "
                "not the installed package): pass --dataset DIR"
            )
        path = DEFAULT_DATASET
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise DatasetError(f"{root}: no such dataset directory")
    sessions = root / "sessions"
    transcripts = sorted(sessions.glob("*.jsonl"))
    if not transcripts:
        raise DatasetError(f"{sessions}: no sessions/*.jsonl transcripts")
    cases = {t.stem: _load_case(root, t) for t in transcripts}
    orphans = sorted(p.name for p in (root / "labels").glob("*.json") if p.stem not in cases)
    if orphans:
        raise DatasetError(f"{root / 'labels'}: labels without a session: {', '.join(orphans)}")
    return Dataset(name=root.name, root=root, cases=list(cases.values()), queries=_load_queries(root, cases))
