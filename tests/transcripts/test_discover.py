"""Finding transcripts: Claude Code's layout, subagent files, and JSONL files that are not transcripts."""

from __future__ import annotations

import shutil
from pathlib import Path

from cairn.transcripts.discover import find_transcripts, is_transcript, session_id_for
from tests.helpers.paths import REAL_TRANSCRIPTS


def test_hook_logs_are_not_transcripts_and_real_sessions_are() -> None:
    assert not is_transcript(REAL_TRANSCRIPTS / "fasthooks" / "sample_hook_logs.jsonl")
    for path in REAL_TRANSCRIPTS.rglob("*.jsonl"):
        if path.name != "sample_hook_logs.jsonl":
            assert is_transcript(path), path


def test_claude_code_layout(tmp_path: Path) -> None:
    project = tmp_path / "-home-dev-acme"
    session = "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001"
    main = project / f"{session}.jsonl"
    agent = project / session / "subagents" / "agent-a1b2c3.jsonl"
    agent.parent.mkdir(parents=True)
    shutil.copy(REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl", main)
    shutil.copy(REAL_TRANSCRIPTS / "fasthooks" / "sample_agent_sidechain.jsonl", agent)
    (project / "notes.jsonl").write_text('{"event": "not a transcript"}\n')
    (project / "empty.jsonl").write_text("")  # a session that has just started

    found = list(find_transcripts([tmp_path, main]))  # a file named twice is listed once
    assert found == sorted([main.resolve(), agent.resolve(), (project / "empty.jsonl").resolve()])
    assert session_id_for(main) == session
    assert session_id_for(agent) == session


def test_long_first_line_is_judged_by_its_type_tag(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"type":"user","message":{"role":"user","content":"' + "x" * 200_000 + '"}}\n')
    assert is_transcript(path)
    other = tmp_path / "other.jsonl"
    other.write_text('{"kind":"log","payload":"' + "x" * 200_000 + '"}\n')
    assert not is_transcript(other)
