"""inspect_files: counts checked against an independent json.loads pass over the same files."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from cairn.transcripts import InspectReport, TranscriptNotFound, inspect_files
from tests.helpers.paths import REAL_TRANSCRIPTS, real_transcripts

from .plain import physical_lines, plain_lines, plain_tool_use_counts, plain_type_counts


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_counts_match_an_independent_json_pass(path: Path) -> None:
    (report,) = inspect_files([path]).files
    rows = plain_lines(path)
    assert report.tool_calls_by_name == dict(plain_tool_use_counts(path))
    assert report.entries_by_type == dict(plain_type_counts(path))
    assert report.entries == len(rows)
    assert report.lines == physical_lines(path)
    assert report.bytes == path.stat().st_size
    assert (report.malformed_lines, report.oversized_lines, report.partial_bytes) == (0, 0, 0)
    stamps = [
        datetime.fromisoformat(obj["timestamp"]) for _, obj in rows if "timestamp" in obj and "type" in obj
    ]
    assert report.first_timestamp == (min(stamps) if stamps else None)
    assert report.last_timestamp == (max(stamps) if stamps else None)
    sessions = Counter(obj["sessionId"] for _, obj in rows if obj.get("sessionId"))
    assert {s.session_id: s.entries for s in report.sessions} == dict(sessions)


def test_totals_over_all_shared_files(real_files: list[Path]) -> None:
    report = inspect_files(real_files)
    expected_tools: Counter[str] = Counter()
    for path in real_files:
        expected_tools.update(plain_tool_use_counts(path))
    assert report.total.tool_calls_by_name == dict(expected_tools)
    assert report.total.entries == sum(f.entries for f in report.files)
    sessions = {s.session_id: s for s in report.total.sessions}
    main = sessions["c45af7b1-cb7c-4e51-93db-8cbb250a877a"]  # the main transcript and its subagent file
    assert main.cwd == "/workspace"
    assert main.entries == 53 + 2
    assert sessions["5c0375b4-57a5-4f26-b12d-d022ee4e51b7"].git_branch == "main"
    summaries = sum(plain_type_counts(path)["summary"] for path in real_files)
    assert report.total.messages_by_role["summary"] == summaries > 0
    assert report.total.noise_messages == sum(f.noise_messages for f in report.files) > 0


def test_report_round_trips_through_json(real_files: list[Path]) -> None:
    report = inspect_files(real_files)
    assert InspectReport.model_validate_json(report.model_dump_json()) == report
    assert json.loads(report.model_dump_json())["total"]["entries"] == report.total.entries


def test_bad_lines_and_partial_tail_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = {
        "type": "assistant",
        "sessionId": "s1",
        "cwd": "/repo",
        "gitBranch": "dev",
        "timestamp": "2026-02-01T10:00:00Z",
        "message": {"id": "m", "content": [{"type": "tool_use", "id": "t", "name": "Grep", "input": {}}]},
    }
    path.write_bytes(json.dumps(good).encode() + b"\nbroken\n" + b"x" * 300 + b"\n" + b'{"type": "us')
    (report,) = inspect_files([path], max_line_bytes=280).files
    assert (report.malformed_lines, report.oversized_lines, report.partial_bytes) == (
        1,
        1,
        len(b'{"type": "us'),
    )
    assert [line for line, _ in report.malformed_samples] == [2]
    assert report.tool_calls_by_name == {"Grep": 1}
    assert report.messages_by_role == {"assistant": 1}
    (session,) = report.sessions
    assert (session.session_id, session.cwd, session.git_branch) == ("s1", "/repo", "dev")
    assert (
        session.first_timestamp
        == session.last_timestamp
        == datetime.fromisoformat("2026-02-01T10:00:00+00:00")
    )


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TranscriptNotFound):
        inspect_files([tmp_path / "nope.jsonl"])


def test_no_files() -> None:
    report = inspect_files([])
    assert report.files == [] and report.total.entries == 0


def test_shared_dir_constant_points_at_the_fixtures() -> None:
    assert REAL_TRANSCRIPTS.is_dir()
