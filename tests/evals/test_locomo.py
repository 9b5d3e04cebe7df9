"""The LoCoMo converter: a hand-written conversation in LoCoMo's shape (no LoCoMo data: its licence forbids
redistribution) becomes Claude Code transcripts that cairn's own reader reads back turn by turn."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cairn.evals.benchmark import BenchmarkError, Evidence
from cairn.evals.locomo import (
    TURN_SECONDS,
    conversation_names,
    convert,
    load_conversation,
    parse_date,
    turn_text,
)
from cairn.transcripts import NormaliseOptions, Normaliser, read_from
from tests.evals.helpers import tiny_conversation


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


@pytest.fixture
def converted(tmp_path: Path):
    conversation = load_conversation(write(tmp_path / "7.json", tiny_conversation()))
    done = convert(conversation, "conv-7")
    assert done.files == {} and not (tmp_path / "out").exists()  # nothing written until asked
    assert done.write(tmp_path / "out") == {key: tmp_path / "out" / key for key in done.entries}
    return done


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dates_parse_and_turns_follow_the_session_time() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_date("8 May 2023")


def test_one_session_file_per_session_in_order_with_real_timestamps(converted) -> None:
    assert list(converted.files) == [
        "conv-7/session-01.jsonl",
        "conv-7/session-02.jsonl",
        "conv-7/session-10.jsonl",
    ]
    first = lines(converted.files["conv-7/session-01.jsonl"])
    assert [e["timestamp"] for e in first] == [
        "2023-05-08T13:56:00.000Z",
        f"2023-05-08T13:56:{TURN_SECONDS:02d}.000Z",
        f"2023-05-08T13:56:{2 * TURN_SECONDS:02d}.000Z",
    ]
    assert lines(converted.files["conv-7/session-10.jsonl"])[0]["timestamp"] == "2023-09-13T00:09:00.000Z"
    # One project per conversation, one session id per file, a parent chain within each session.
    everything = [e for path in converted.files.values() for e in lines(path)]
    assert {e["cwd"] for e in everything} == {"/locomo/conv-7"}
    assert len({e["sessionId"] for e in everything}) == 3
    assert first[0]["parentUuid"] is None and first[1]["parentUuid"] == first[0]["uuid"]


def test_speakers_map_to_user_and_assistant_with_names_and_captions(converted) -> None:
    ada, bo, ada_again = lines(converted.files["conv-7/session-01.jsonl"])
    assert ada["type"] == "user" and ada["message"] == {
        "role": "user",
        "content": "Ada: Hi Bo, I started pottery classes on Monday.",
    }
    assert bo["type"] == "assistant" and bo["message"]["role"] == "assistant"
    assert bo["message"]["content"] == [
        {
            "type": "text",
            "text": "Bo: Nice, look what I made last week. "
            "[shares a photo of a blue ceramic bowl on a table]",
        }
    ]
    assert ada_again["type"] == "user"


def test_the_line_map_points_at_the_turns_as_cairn_reads_them(converted) -> None:
    assert converted.line_of == {
        "D1:1": Evidence("conv-7/session-01.jsonl", 1),
        "D1:2": Evidence("conv-7/session-01.jsonl", 2),
        "D1:3": Evidence("conv-7/session-01.jsonl", 3),
        "D2:1": Evidence("conv-7/session-02.jsonl", 1),
        "D2:2": Evidence("conv-7/session-02.jsonl", 2),
        "D10:1": Evidence("conv-7/session-10.jsonl", 1),
    }
    for key, path in converted.files.items():
        result = read_from(path)
        assert result.malformed == 0
        messages = Normaliser(NormaliseOptions()).normalise(result.entries)
        by_line = {m.line: m for m in messages}
        for dia_id, evidence in converted.line_of.items():
            if evidence.file == key:
                message = by_line[evidence.line]
                assert message.end_line == evidence.line  # no two turns merged
                assert dia_id in {"D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D10:1"}
                assert message.text.split(":")[0] in {"Ada", "Bo"}


def test_only_categories_1_to_4_with_evidence_are_scored(converted) -> None:
    questions = {q.question: q for q in converted.questions}
    assert list(questions) == [
        "When did Ada start pottery?",
        "What did Bo make?",
        "What are Bo's dog's achievements?",
        "Would Ada like ceramics?",
    ]
    assert questions["When did Ada start pottery?"].category == "temporal"
    assert questions["When did Ada start pottery?"].id == "conv-7/q1"
    assert questions["What did Bo make?"].category == "single-hop"
    # "D2:1; D10:01" is two ids, the second zero-padded.
    assert questions["What are Bo's dog's achievements?"].evidence == (
        Evidence("conv-7/session-02.jsonl", 1),
        Evidence("conv-7/session-10.jsonl", 1),
    )
    assert questions["What are Bo's dog's achievements?"].category == "multi-hop"
    # An id naming no turn is dropped and reported; a question left with none is skipped.
    assert questions["Would Ada like ceramics?"].evidence == (Evidence("conv-7/session-01.jsonl", 3),)
    assert converted.unknown_evidence == [
        {"question": "conv-7/q4", "evidence": "D9:9"},
        {"question": "conv-7/q7", "evidence": "D7:1"},
    ]
    assert converted.skipped == {"adversarial or uncategorised": 1, "no evidence": 2}


def test_turn_text_without_a_caption() -> None:
    conversation = tiny_conversation()
    from cairn.evals.locomo import Turn

    assert (
        turn_text(Turn.model_validate(conversation["session_2"][0]))
        == "Bo: I adopted a greyhound called Pixel."
    )


def test_conversation_names_are_unique() -> None:
    assert conversation_names([Path("a/26.json"), Path("b/26.json"), Path("30.json")]) == [
        "conv-26",
        "conv-26-2",
        "conv-30",
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "x.json: not JSON: "),
        ([tiny_conversation()], "x.json: expected one LoCoMo conversation: an object with speaker_a"),
        (
            {"sample_id": "conv-1", "conversation": {}, "qa": []},
            "x.json: expected one LoCoMo conversation: an object with speaker_a, speaker_b, session_N lists "
            "and qa (this looks like a locomo10.json sample: pass its conversation)",
        ),
        (
            {k: v for k, v in tiny_conversation().items() if k != "speaker_b"},
            "x.json: expected one LoCoMo conversation: an object with speaker_a, speaker_b, session_N lists "
            "and qa: speaker_b is missing",
        ),
        (
            {**tiny_conversation(), "session_1_date_time": "yesterday"},
            "x.json: session_1_date_time: 'yesterday'",
        ),
        (
            {**tiny_conversation(), "session_1": [{"speaker": "Ada", "dia_id": "D1:1"}]},
            "x.json: session_1: turn D1:1: text is missing",
        ),
        (
            {**tiny_conversation(), "session_3": []},
            "x.json: session_3: session_3_date_time is missing",
        ),
        (
            {**tiny_conversation(), "session_1": [{"speaker": "Cy", "dia_id": "D1:1", "text": "hi"}]},
            "x.json: session_1: turn D1:1: speaker 'Cy' is neither 'Ada' nor 'Bo'",
        ),
        (
            {"speaker_a": "A", "speaker_b": "B", "qa": []},
            "x.json: expected one LoCoMo conversation: an object with speaker_a, speaker_b, session_N lists "
            "and qa: no session_N list of turns",
        ),
    ],
)
def test_files_of_another_shape_are_refused_with_one_line(tmp_path: Path, data: Any, message: str) -> None:
    with pytest.raises(BenchmarkError) as caught:
        load_conversation(write(tmp_path / "x.json", data))
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
