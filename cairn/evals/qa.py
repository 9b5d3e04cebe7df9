"""Evidence-line QA sets over real Claude Code transcripts (the format of `coding-qa-dev/qa.json`).

The file is a JSON list of questions, each `{id, session, question, answer, category, evidence: [{file,
line}]}` with `session` and every evidence `file` relative to the transcripts directory and `line` the
1-based physical line of that JSONL file. `load_qa` checks everything before anything is backfilled —
the JSON, each item's fields and category, that every named transcript exists and that every evidence line
is inside its file — and raises `BenchmarkError` with one line naming the file and the item.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cairn.evals.questions import BenchmarkError, Evidence, Question, physical_lines, read_json

CATEGORIES = ("decision", "problem", "howto", "exact", "todo")

_REPO = Path(__file__).resolve().parents[2]
#: The repository's coding QA set (60 questions over real sessions) and the transcripts it names. Neither
#: is package data: an installed wheel has none and must be told.
DEFAULT_QA = _REPO / "evals" / "datasets" / "coding-qa-dev" / "qa.json"
DEFAULT_QA_TRANSCRIPTS = _REPO / "tests" / "fixtures" / "transcripts"


def resolve_qa(path: Path | None, transcripts: Path | None) -> tuple[Path, Path]:
    """The QA file and transcripts directory to use: the repository's set when no file is given. A file
    of one's own must say where its transcripts are: its paths mean nothing relative to ours."""
    if path is None:
        if not DEFAULT_QA.is_file() or not DEFAULT_QA_TRANSCRIPTS.is_dir():
            raise BenchmarkError(
                f"{DEFAULT_QA}: the default QA set is not there (it ships with the cairn repository, not the "
                "installed package): pass QA_FILE --transcripts DIR"
            )
        return DEFAULT_QA, transcripts or DEFAULT_QA_TRANSCRIPTS
    if transcripts is None:
        raise BenchmarkError(f"{path.name}: say where its transcripts are: --transcripts DIR")
    return path, transcripts


def relative_key(value: str) -> str:
    path = PurePosixPath(value)
    if not value.strip() or path.is_absolute() or ".." in path.parts:
        raise ValueError(f"{value!r} must be a path relative to the transcripts directory")
    return value


class QAEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: int = Field(ge=1)

    @field_validator("file")
    @classmethod
    def _relative_file(cls, value: str) -> str:
        return relative_key(value)


class QAItem(BaseModel):
    """One question; unknown keys are allowed (a set may carry notes), known ones are checked."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    session: str
    question: str = Field(min_length=1)
    answer: str = ""
    category: str
    evidence: list[QAEvidence] = Field(min_length=1)

    @field_validator("session")
    @classmethod
    def _relative_session(cls, value: str) -> str:
        return relative_key(value)

    @field_validator("category")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"category {value!r} is unknown (use {', '.join(CATEGORIES)})")
        return value


@dataclass(frozen=True)
class QASet:
    path: Path
    transcripts: Path
    questions: list[Question]
    files: dict[str, Path]  # key (relative path) -> file, every transcript the questions name


def validation_reason(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{where} is missing"
    if not where or message.startswith(f"{where} "):
        return message
    return f"{where}: {message}"


def _item_name(raw: Any, index: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]:
        return str(raw["id"])
    return f"#{index + 1}"


def load_qa(path: Path, transcripts: Path) -> QASet:
    """Read and check a QA file against the transcripts directory; raises `BenchmarkError`."""
    name = path.name
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise BenchmarkError(f"{name}: expected a non-empty JSON list of questions")
    if not transcripts.is_dir():
        raise BenchmarkError(f"{transcripts}: no such transcripts directory")
    items: list[QAItem] = []
    seen: set[str] = set()
    for index, raw in enumerate(data):
        label = _item_name(raw, index)
        if not isinstance(raw, dict):
            raise BenchmarkError(f"{name}: item {label}: expected an object, got {type(raw).__name__}")
        try:
            item = QAItem.model_validate(raw)
        except ValidationError as exc:
            raise BenchmarkError(f"{name}: item {label}: {validation_reason(exc)}") from exc
        if item.id in seen:
            raise BenchmarkError(f"{name}: item {label}: the id is used twice")
        seen.add(item.id)
        items.append(item)
    lines: dict[str, int] = {}
    files: dict[str, Path] = {}
    for item in items:
        for key in [item.session, *(e.file for e in item.evidence)]:
            if key in files:
                continue
            file = transcripts / key
            if not file.is_file():
                raise BenchmarkError(f"{name}: item {item.id}: transcript {key} not found in {transcripts}")
            files[key] = file
            lines[key] = len(physical_lines(file))
        for evidence in item.evidence:
            if evidence.line > lines[evidence.file]:
                raise BenchmarkError(
                    f"{name}: item {item.id}: evidence line {evidence.line} is past the end of "
                    f"{evidence.file} ({lines[evidence.file]} lines)"
                )
    questions = [
        Question(
            id=item.id,
            question=item.question,
            category=item.category,
            evidence=tuple(dict.fromkeys(Evidence(e.file, e.line) for e in item.evidence)),
            session=item.session,
            answer=item.answer,
        )
        for item in items
    ]
    return QASet(path=path, transcripts=transcripts, questions=questions, files=files)
