"""Shared by the eval tests: JSON files written for the loaders, a scripted indexer that stores the demo
session's gold ideas, and a tiny LoCoMo conversation."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cairn.agent.models import ModelChoice, request_settings
from cairn.agent.schema import BATCH_OPEN, IndexResult, extract_batch
from cairn.config import Settings
from cairn.evals import indexing
from tests.evals import DEMO_LABELS

IdeaSpec = tuple[int, str, str]  # line, intent, content
GOLD_SPECS: list[IdeaSpec] = [(i["line"], i["intent"], i["content"]) for i in DEMO_LABELS["ideas"]]


def write_json(path: Path, data: Any) -> Path:
    """`data` written to `path` as JSON (a string as it is, for malformed files)."""
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _scripted(specs: list[IdeaSpec]) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """An indexer that stores exactly `specs` (those whose line is in the batch), and nothing else."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = next(
            part.content
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, UserPromptPart)
            and isinstance(part.content, str)
            and BATCH_OPEN in part.content
        )
        ideas = []
        for update in extract_batch(prompt).updates:
            lines = {m.line for m in update.messages}
            for line, intent, content in specs:
                if line in lines:
                    ideas.append(
                        {
                            "session": update.session,
                            "source_file": update.file_path,
                            "source_line": line,
                            "content": content,
                            "intent": intent,
                        }
                    )
        result = IndexResult.model_validate({"ideas": ideas})
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, result.model_dump(mode="json"))])

    return respond


def use_model(monkeypatch: pytest.MonkeyPatch, name: str, model: FunctionModel) -> None:
    """Make `run_indexing` resolve every model string to `model` (under `name`)."""

    def resolve(settings: Settings, _override: str | None = None) -> ModelChoice:
        return ModelChoice(name, model, request_settings(settings))

    monkeypatch.setattr(indexing, "resolve_model", resolve)


def tiny_conversation() -> dict[str, Any]:
    """Two speakers, three sessions listed out of order, a photo, and questions of every category."""
    return {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        "session_2_date_time": "9:05 am on 3 June, 2023",
        "session_2": [
            {"speaker": "Bo", "dia_id": "D2:1", "text": "I adopted a greyhound called Pixel."},
            {"speaker": "Ada", "dia_id": "D2:2", "text": "Lovely! Mine still hates the vacuum."},
        ],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "Hi Bo, I started pottery classes on Monday."},
            {
                "speaker": "Bo",
                "dia_id": "D1:2",
                "text": "Nice, look what I made last week.",
                "img_url": ["https://example.invalid/bowl.jpg"],
                "blip_caption": "a photo of a blue ceramic bowl on a table",
            },
            {"speaker": "Ada", "dia_id": "D1:3", "text": "That glaze is gorgeous."},
        ],
        "session_10_date_time": "12:09 am on 13 September, 2023",
        "session_10": [{"speaker": "Bo", "dia_id": "D10:1", "text": "Pixel won a race today."}],
        # A date without turns (LoCoMo has those): ignored.
        "session_11_date_time": "1:00 pm on 14 September, 2023",
        "events_session_1": {"Ada": ["starts pottery"]},
        "qa": [
            {
                "question": "When did Ada start pottery?",
                "answer": "May 2023",
                "evidence": ["D1:1"],
                "category": 2,
            },
            {"question": "What did Bo make?", "answer": "a bowl", "evidence": ["D1:2"], "category": 4},
            {
                "question": "What are Bo's dog's achievements?",
                "answer": "a race",
                "evidence": ["D2:1; D10:01"],
                "category": 1,
            },
            {
                "question": "Would Ada like ceramics?",
                "answer": "yes",
                "evidence": ["D1:3", "D9:9"],
                "category": 3,
            },
            {
                "question": "What did Ada adopt?",
                "adversarial_answer": "a cat",
                "evidence": ["D2:1"],
                "category": 5,
            },
            {"question": "What is Bo's job?", "answer": "unknown", "evidence": [], "category": 4},
            {"question": "Where is D7?", "answer": "?", "evidence": ["D7:1"], "category": 4},
        ],
    }
