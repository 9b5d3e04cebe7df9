"""LoCoMo conversations as Claude Code transcripts, so cairn can be scored on a public long-memory benchmark.

LoCoMo (Maharana et al., ACL 2024) gives, per conversation, `speaker_a`, `speaker_b`, sessions `session_N`
of turns `{speaker, dia_id, text, [blip_caption]}` held on `session_N_date_time` ("1:56 pm on 8 May, 2023")
and questions `qa: [{question, answer, evidence: [dia_id...], category}]`. Categories 1-4 (multi-hop,
temporal, open-domain, single-hop) are scored; 5 (adversarial: the answer is not in the conversation) and
questions without evidence are left out, as the benchmark's own retrieval scoring does.

The conversion (`convert`):

- one project per conversation (cwd `/locomo/<name>`) and one JSONL session file per LoCoMo session,
  `<name>/session-NN.jsonl`, one line per turn, so a dia_id maps to one `(file, line)`;
- speaker A's turns are `user` entries (string content) and speaker B's `assistant` entries (a text block,
  each with its own message id so the reader never merges two turns). The roles only tell cairn who spoke;
  a two-person chat maps onto them naturally, and the speaker's name opens the text (`Caroline: ...`)
  because questions name people. A shared image is kept as its caption: `[shares a photo of ...]`;
- the first turn is at the session's date and time, each next one `TURN_SECONDS` later (the data has no
  per-turn times), in UTC (it has no zone either).

LoCoMo's evidence has known slips: `"D8:6; D9:17"` in one string, zero-padded turn numbers. Evidence
strings are read for every `D<session>:<turn>` they contain; an id naming no turn is reported and dropped,
and a question left without evidence is skipped (counted), rather than refusing a third-party data set
over one typo. A file that is not a LoCoMo conversation at all raises `BenchmarkError`.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cairn.evals.questions import BenchmarkError, Evidence, Question, read_json

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
TURN_SECONDS = 10
_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/snap-research/locomo")


class Turn(BaseModel):
    model_config = ConfigDict(extra="allow")

    speaker: str
    dia_id: str
    text: str
    blip_caption: str | None = None


class QAEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: str
    answer: Any = None
    evidence: list[str] = Field(default_factory=list)
    category: int


class _Conversation(BaseModel):
    model_config = ConfigDict(extra="allow")

    speaker_a: str = Field(min_length=1)
    speaker_b: str = Field(min_length=1)
    qa: list[QAEntry]


@dataclass(frozen=True)
class Session:
    number: int
    started: datetime
    turns: list[Turn]


@dataclass
class Conversation:
    """One LoCoMo file, checked: its speakers, sessions in order and questions."""

    source: Path
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    qa: list[QAEntry]


@dataclass
class Converted:
    """A conversation as transcripts: entries per file key, where each turn lands, the scored questions;
    `files` (key -> path) once `write` has put them on disk."""

    name: str
    entries: dict[str, list[dict[str, Any]]]
    line_of: dict[str, Evidence]
    questions: list[Question]
    skipped: dict[str, int] = field(default_factory=dict)
    unknown_evidence: list[dict[str, str]] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)

    def write(self, out_dir: Path) -> dict[str, Path]:
        """Write every session file under `out_dir` (keys are relative to it); returns key -> path."""
        (out_dir / self.name).mkdir(parents=True, exist_ok=True)
        for key, entries in self.entries.items():
            path = out_dir / key
            text = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
            path.write_text(text, encoding="utf-8")
            self.files[key] = path
        return self.files


def parse_date(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` as a UTC datetime; raises ValueError for anything else."""
    return datetime.strptime(" ".join(text.split()), DATE_FORMAT).replace(tzinfo=UTC)


def _reason(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing":
        return f"{where} is missing"
    return f"{where}: {error['msg']}" if where else str(error["msg"])


SHAPE = "expected one LoCoMo conversation: an object with speaker_a, speaker_b, session_N lists and qa"


def load_conversation(path: Path) -> Conversation:
    """Read and check one LoCoMo file; raises `BenchmarkError` naming the file and the item at fault."""
    name = path.name
    data = read_json(path)
    if not isinstance(data, dict):
        raise BenchmarkError(f"{name}: {SHAPE}, got a JSON {type(data).__name__}")
    if "conversation" in data and "speaker_a" not in data:
        raise BenchmarkError(
            f"{name}: {SHAPE} (this looks like a locomo10.json sample: pass its conversation)"
        )
    try:
        head = _Conversation.model_validate(data)
    except ValidationError as exc:
        raise BenchmarkError(f"{name}: {SHAPE}: {_reason(exc)}") from exc
    sessions: list[Session] = []
    for key in data:
        match = _SESSION.match(key)
        if match is None:
            continue
        number = int(match[1])
        raw_turns = data[key]
        if not isinstance(raw_turns, list):
            raise BenchmarkError(f"{name}: {key}: expected a list of turns, got {type(raw_turns).__name__}")
        when = data.get(f"{key}_date_time")
        if not isinstance(when, str):
            raise BenchmarkError(f"{name}: {key}: {key}_date_time is missing")
        try:
            started = parse_date(when)
        except ValueError as exc:
            raise BenchmarkError(
                f"{name}: {key}_date_time: {when!r} is not a date like '1:56 pm on 8 May, 2023'"
            ) from exc
        turns = []
        for index, raw in enumerate(raw_turns):
            try:
                turn = Turn.model_validate(raw)
            except ValidationError as exc:
                label = raw.get("dia_id") if isinstance(raw, dict) else None
                raise BenchmarkError(f"{name}: {key}: turn {label or index + 1}: {_reason(exc)}") from exc
            if turn.speaker not in (head.speaker_a, head.speaker_b):
                raise BenchmarkError(
                    f"{name}: {key}: turn {turn.dia_id}: speaker {turn.speaker!r} is neither "
                    f"{head.speaker_a!r} nor {head.speaker_b!r}"
                )
            turns.append(turn)
        sessions.append(Session(number, started, turns))
    if not sessions:
        raise BenchmarkError(f"{name}: {SHAPE}: no session_N list of turns")
    seen: set[str] = set()
    for session in sessions:
        for turn in session.turns:
            if turn.dia_id in seen:
                raise BenchmarkError(f"{name}: session_{session.number}: turn {turn.dia_id} appears twice")
            seen.add(turn.dia_id)
    sessions.sort(key=lambda s: s.number)
    return Conversation(path, head.speaker_a, head.speaker_b, sessions, head.qa)


def turn_text(turn: Turn) -> str:
    """What a turn says in the transcript: the speaker's name, the text, and a shared photo's caption."""
    text = f"{turn.speaker}: {turn.text.strip()}"
    if turn.blip_caption and turn.blip_caption.strip():
        text += f" [shares {turn.blip_caption.strip()}]"
    return text


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def session_entries(conversation: Conversation, name: str, session: Session) -> list[dict[str, Any]]:
    """The transcript entries of one session, one per turn, in order."""
    session_id = str(uuid.uuid5(_NAMESPACE, f"{name}/session-{session.number}"))
    cwd = f"/locomo/{name}"
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for index, turn in enumerate(session.turns):
        entry_id = str(uuid.uuid5(_NAMESPACE, f"{name}/{turn.dia_id}"))
        text = turn_text(turn)
        if turn.speaker == conversation.speaker_a:
            kind, message = "user", {"role": "user", "content": text}
        else:
            kind = "assistant"
            message = {
                "id": f"msg_{entry_id.replace('-', '')}",
                "type": "message",
                "role": "assistant",
                "model": "locomo",
                "content": [{"type": "text", "text": text}],
            }
        entries.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session_id,
                "version": "locomo",
                "type": kind,
                "uuid": entry_id,
                "timestamp": _stamp(session.started + timedelta(seconds=TURN_SECONDS * index)),
                "message": message,
            }
        )
        parent = entry_id
    return entries


def _canonical(evidence: str) -> list[str]:
    """Every `D<session>:<turn>` in one evidence string, without zero padding."""
    return [f"D{int(a)}:{int(b)}" for a, b in _DIA_ID.findall(evidence)]


def convert(conversation: Conversation, name: str) -> Converted:
    """`conversation` as transcripts of the project `name`: the entries of each session file (keyed
    `<name>/session-NN.jsonl`), the turn map and the scorable questions. Nothing is written yet."""
    files: dict[str, list[dict[str, Any]]] = {}
    line_of: dict[str, Evidence] = {}
    for session in conversation.sessions:
        key = f"{name}/session-{session.number:02d}.jsonl"
        files[key] = session_entries(conversation, name, session)
        for line, turn in enumerate(session.turns, start=1):
            canonical = _canonical(turn.dia_id)
            line_of[canonical[0] if canonical else turn.dia_id] = Evidence(key, line)
    questions: list[Question] = []
    skipped = {"adversarial or uncategorised": 0, "no evidence": 0}
    unknown: list[dict[str, str]] = []
    for index, item in enumerate(conversation.qa, start=1):
        qid = f"{name}/q{index}"
        category = CATEGORIES.get(item.category)
        if category is None:
            skipped["adversarial or uncategorised"] += 1
            continue
        evidence: list[Evidence] = []
        for raw in item.evidence:
            ids = _canonical(raw) or [raw]
            for dia_id in ids:
                if dia_id in line_of:
                    evidence.append(line_of[dia_id])
                else:
                    unknown.append({"question": qid, "evidence": raw})
        if not evidence:
            skipped["no evidence"] += 1
            continue
        questions.append(
            Question(
                id=qid,
                question=item.question,
                category=category,
                evidence=tuple(dict.fromkeys(evidence)),
                session=name,
                answer=None if item.answer is None else str(item.answer),
            )
        )
    return Converted(name, files, line_of, questions, skipped, unknown)


def conversation_names(paths: list[Path]) -> list[str]:
    """`conv-<stem>` per file, made unique (`conv-26`, `conv-26-2`) when two files share a stem."""
    names: list[str] = []
    for path in paths:
        base = f"conv-{re.sub(r'[^A-Za-z0-9._-]+', '-', path.stem).strip('-') or 'x'}"
        name, counter = base, 2
        while name in names:
            name, counter = f"{base}-{counter}", counter + 1
        names.append(name)
    return names
