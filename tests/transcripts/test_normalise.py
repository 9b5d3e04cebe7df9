"""Normalisation: merged assistant turns, tool calls and results, noise, sidechains, clipping, redaction."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cairn.transcripts import (
    Message,
    NormaliseOptions,
    Normaliser,
    ReadEntry,
    normalise,
    read_from,
)
from tests.helpers.builders import Transcript
from tests.helpers.paths import REAL_TRANSCRIPTS

from .redaction_corpus import ANTHROPIC_KEY, GITHUB_PAT_CLASSIC, OPENAI_LEGACY_KEY

MAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"
AGENT = REAL_TRANSCRIPTS / "fasthooks" / "sample_agent_sidechain.jsonl"
VIEWER = REAL_TRANSCRIPTS / "claude-code-viewer"
ORCHESTRATOR = VIEWER / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
INIT = VIEWER / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
ELISION = re.compile(r"…\[(\d+) chars elided\]…")


def _by_line(messages: list[Message]) -> dict[int, Message]:
    return {message.line: message for message in messages}


def _reads(tmp_path: Path, *objs: dict[str, Any]) -> list[ReadEntry]:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(json.dumps(obj).encode() + b"\n" for obj in objs))
    result = read_from(path)
    assert result.malformed == 0
    return result.entries


def _user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": "s", "message": {"role": "user", "content": content}, **extra}


def _assistant(message_id: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": "s", "message": {"id": message_id, "content": list(blocks)}}


def _tool_use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def _tool_result(tool_id: str, content: Any, *, is_error: bool | None = None) -> dict[str, Any]:
    return _user([{"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}])


def test_main_fixture_compaction_and_noise() -> None:
    messages = _by_line(normalise(read_from(MAIN).entries))
    boundary, summary = messages[59], messages[60]
    assert (boundary.role, boundary.kind, boundary.text) == (
        "system",
        "system",
        "[compact_boundary] Conversation compacted",
    )
    assert summary.kind == "compact_summary" and summary.is_compact_summary and not summary.is_noise
    assert summary.text.startswith("This session is being continued from a previous conversation")
    caveat, command, stdout = messages[61], messages[62], messages[63]
    assert (caveat.kind, caveat.is_noise) == ("meta", True)
    assert (command.kind, command.is_noise, command.text) == ("command", True, "/compact")
    assert (stdout.kind, stdout.is_noise) == ("command", True)
    assert stdout.text.startswith("Compacted (ctrl+o to see full summary)") and "\x1b" not in stdout.text
    assert not any(message.is_noise for line, message in messages.items() if line < 61)


def test_bookkeeping_entries_yield_no_message() -> None:
    messages = normalise(read_from(MAIN).entries)
    covered = {line for message in messages for line in range(message.line, message.end_line + 1)}
    snapshots_and_hook_summaries = {1, 8, 9, 13, 17, 25, 33, 56, 57, 58}
    assert not covered & snapshots_and_hook_summaries
    assert all(message.role != "system" or message.line == 59 for message in messages)


def test_assistant_lines_sharing_message_id_are_merged() -> None:
    result = read_from(MAIN)
    messages = _by_line(normalise(result.entries))
    turn = messages[43]
    assert (turn.end_line, turn.message_id, turn.role) == (46, "msg_01WMh3eZ1wBMUSJpiqpPxEy4", "assistant")
    assert [call.name for call in turn.tool_calls] == ["Read", "Bash", "Bash"]
    assert turn.tool_calls[1].input == (
        'command="python /workspace/number_generator.py" '
        'description="Execute Python script to generate numbers"'
    )
    assert turn.text.splitlines()[1] == f"[tool_use Bash] {turn.tool_calls[1].input}"
    entries = {read.line: read for read in result.entries}
    assert (turn.byte_start, turn.byte_end) == (entries[43].byte_start, entries[46].byte_end)
    assert messages[36].end_line == 38  # the snapshot on line 39 does not belong to the turn
    assert [call.name for call in messages[36].tool_calls] == ["Write", "Write"]
    assert not any(line in messages for line in (44, 45, 46, 37, 38))


def test_thinking_is_left_out_unless_asked_for() -> None:
    thought = "The user is asking me to run the command `ls -la`."
    default = _by_line(normalise(read_from(MAIN).entries))
    assert all(
        thought not in message.text and "[thinking]" not in message.text for message in default.values()
    )
    assert default[3].text.startswith("[tool_use Bash]")
    with_thinking = _by_line(normalise(read_from(MAIN).entries, NormaliseOptions(include_thinking=True)))
    assert with_thinking[3].text.startswith(f"[thinking] {thought}")
    assert with_thinking[3].end_line == 4


def test_tool_results_are_named_and_errors_flagged() -> None:
    messages = _by_line(normalise(read_from(MAIN).entries))
    failed = messages[48]
    assert failed.kind == "tool_result" and failed.role == "user"
    assert [(ref.tool_name, ref.is_error) for ref in failed.tool_results] == [("Bash", True)]
    assert (
        failed.text == "[tool_result Bash error] Exit code 127\n/bin/bash: line 1: python: command not found"
    )
    read_back = messages[22]
    assert read_back.text.startswith('[tool_result Read] 1→print("Hello, World!")')
    assert "<system-reminder>" not in read_back.text and "malware" not in read_back.text


def test_tool_result_finds_its_tool_use_across_an_incremental_boundary(tmp_path: Path) -> None:
    data = MAIN.read_bytes()
    cut = sum(len(line) for line in data.splitlines(keepends=True)[:46])  # through the three tool_use lines
    path = tmp_path / "live.jsonl"
    path.write_bytes(data[:cut])
    normaliser = Normaliser()
    first = read_from(path)
    normaliser.normalise(first.entries)
    with path.open("ab") as fh:
        fh.write(data[cut:])
    second = read_from(path, first.offset, line=first.line, inode=first.inode)
    later = _by_line(normaliser.normalise(second.entries))
    assert [ref.tool_name for ref in later[47].tool_results] == ["Read"]
    assert later[47].text.startswith("[tool_result Read] ")
    assert [ref.tool_name for ref in later[48].tool_results] == ["Bash"]

    forgetful = _by_line(Normaliser().normalise(second.entries))
    assert [ref.tool_name for ref in forgetful[47].tool_results] == [None]
    assert forgetful[47].text.startswith("[tool_result] ")


def test_sidechains_keep_their_flags() -> None:
    agent = normalise(read_from(AGENT).entries)
    assert [(m.role, m.is_sidechain, m.agent_id) for m in agent] == [
        ("user", True, "af1ff21"),
        ("assistant", True, "af1ff21"),
    ]
    inline = _by_line(normalise(read_from(ORCHESTRATOR).entries))
    assert inline[16].is_sidechain and inline[17].is_sidechain and inline[17].end_line == 18
    assert not inline[12].is_sidechain and not inline[37].is_sidechain
    assert inline[37].tool_results[0].tool_name == "Task"


def test_slash_commands_and_meta_prompts_are_noise() -> None:
    orchestrator = _by_line(normalise(read_from(ORCHESTRATOR).entries))
    assert orchestrator[1].role == "summary" and orchestrator[1].kind == "summary"
    assert orchestrator[1].text == "Empty Repo Setup: CLAUDE.md Foundation Created"
    assert (orchestrator[2].kind, orchestrator[2].text) == (
        "command",
        "/orchestrator create TODO app by Next.js",
    )
    assert (orchestrator[3].kind, orchestrator[3].is_noise) == ("meta", True)
    init = _by_line(normalise(read_from(INIT).entries))
    assert (init[1].kind, init[1].is_noise, init[1].text) == ("command", True, "/init")
    assert (init[2].kind, init[2].is_noise) == ("meta", True)
    assert sum(message.is_noise for message in init.values()) == 2


def test_long_tool_results_are_clipped_with_a_marker() -> None:
    options = NormaliseOptions(tool_result_head_chars=300, tool_result_tail_chars=100)
    messages = _by_line(normalise(read_from(ORCHESTRATOR).entries, options))
    long_result = messages[108]
    match = ELISION.search(long_result.text)
    assert match is not None and int(match.group(1)) > 20_000
    label, _, body = long_result.text.partition("] ")
    assert label == "[tool_result Bash"
    assert len(body) == 300 + len(match.group(0)) + 100
    assert body.index(match.group(0)) == 300
    short = messages[7]
    assert short.text == "[tool_result Glob] No files found"


def test_clipping_keeps_exact_head_and_tail(tmp_path: Path) -> None:
    output = "".join(f"{i:04d}\n" for i in range(1000))
    reads = _reads(
        tmp_path, _assistant("m1", _tool_use("t1", "Bash", command="seq")), _tool_result("t1", output)
    )
    options = NormaliseOptions(tool_result_head_chars=10, tool_result_tail_chars=5)
    result = normalise(reads, options)[1]
    elided = len(output.strip()) - 15
    assert result.text == f"[tool_result Bash] 0000\n0001\n…[{elided} chars elided]…\n0999"


def test_a_clipped_tool_result_keeps_its_whole_redacted_text_beside_the_clipped_one(tmp_path: Path) -> None:
    output = "".join(f"{i:04d}\n" for i in range(1000)) + f"token={ANTHROPIC_KEY}\n" + "end"
    reads = _reads(
        tmp_path,
        _assistant("m1", _tool_use("t1", "Bash", command="seq"), _tool_use("t2", "Bash", command="true")),
        _user(
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": output},
                {"type": "tool_result", "tool_use_id": "t2", "content": "done"},
            ]
        ),
        _tool_result("t2", "short and whole"),
    )
    options = NormaliseOptions(tool_result_head_chars=10, tool_result_tail_chars=5)
    call, clipped, short = normalise(reads, options)
    assert call.full_text is None and short.full_text is None
    assert short.searchable_text == short.text == "[tool_result Bash] short and whole"
    assert ELISION.search(clipped.text) is not None
    assert clipped.full_text is not None and clipped.searchable_text == clipped.full_text
    assert (
        clipped.full_text.startswith("[tool_result Bash] 0000\n0001\n") and "0567\n0568" in clipped.full_text
    )
    assert clipped.full_text.endswith("\n[tool_result Bash] done")  # the unclipped result as it was
    assert clipped.text.endswith("\n[tool_result Bash] done")
    # Redacted before anything is kept: the whole text holds no secret either.
    assert ANTHROPIC_KEY not in clipped.full_text and "[REDACTED:" in clipped.full_text


def test_tool_input_is_one_compact_capped_line(tmp_path: Path) -> None:
    content = "line one\nline two\n" * 100
    reads = _reads(
        tmp_path,
        _assistant("m1", _tool_use("t1", "Write", file_path="/a.py", content=content)),
        _assistant("m2", _tool_use("t2", "Bash", command="ls -la")),
    )
    write, bash = normalise(reads, NormaliseOptions(tool_input_max_chars=60))
    (call,) = write.tool_calls
    assert len(call.input) == 60 and call.input.endswith("…") and "\n" not in call.input
    assert call.input.startswith('file_path="/a.py" content="line one\\nline two\\n')
    assert write.text == f"[tool_use Write] {call.input}"
    assert bash.text == '[tool_use Bash] command="ls -la"'


def test_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    reads = _reads(
        tmp_path,
        _user(f"my key is {ANTHROPIC_KEY}"),
        _assistant(
            "m1",
            {"type": "thinking", "thinking": f"the user pasted {OPENAI_LEGACY_KEY}"},
            {"type": "text", "text": "I will use password=hunter2 now"},
            _tool_use(
                "t1",
                "Bash",
                command=f"git clone https://{GITHUB_PAT_CLASSIC}@github.com/o/r",
                password="pw1234",
            ),
        ),
        _tool_result("t1", [{"type": "text", "text": f"export TOKEN={GITHUB_PAT_CLASSIC}"}]),
        {"type": "summary", "summary": f"Session about {ANTHROPIC_KEY}"},
        {"type": "system", "subtype": "api_error", "content": f"auth failed for {OPENAI_LEGACY_KEY}"},
        _user("<private>my address is 1 Elm St</private> ship it"),
    )
    messages = normalise(reads, NormaliseOptions(include_thinking=True))
    assert len(messages) == 6
    everything = "\n".join([m.text for m in messages] + [c.input for m in messages for c in m.tool_calls])
    for secret in (ANTHROPIC_KEY, OPENAI_LEGACY_KEY, GITHUB_PAT_CLASSIC, "hunter2", "pw1234", "1 Elm St"):
        assert secret not in everything
    assert "[REDACTED:" in messages[0].text
    assert messages[-1].text == "[private] ship it"


def test_a_secret_is_redacted_before_clipping_cuts_it(tmp_path: Path) -> None:
    output = "x" * 15 + " " + ANTHROPIC_KEY + " " + "y" * 200
    reads = _reads(tmp_path, _tool_result("t1", output))
    (message,) = normalise(reads, NormaliseOptions(tool_result_head_chars=25, tool_result_tail_chars=5))
    assert "sk-ant" not in message.text
    assert ANTHROPIC_KEY[:12] not in message.text


def test_empty_messages_are_dropped_and_images_rendered(tmp_path: Path) -> None:
    reads = _reads(
        tmp_path,
        _user(""),
        _assistant("m1", {"type": "thinking", "thinking": "only thinking"}),
        {"type": "progress", "data": {"x": 1}},
        {"type": "queue-operation", "operation": "enqueue"},
        {"type": "attachment", "attachment": {"type": "file"}},
        {"type": "unheard-of", "content": "ignored"},
        {"type": "system", "subtype": "turn_duration", "durationMs": 5},
        _user(
            [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "base64", "data": "AA"}}]
        ),
    )
    (message,) = normalise(reads)
    assert (message.line, message.text, message.kind) == (8, "look\n[image]", "text")


def test_a_turn_split_across_reads_yields_two_messages_with_the_same_id(tmp_path: Path) -> None:
    reads = _reads(
        tmp_path,
        _assistant("m1", {"type": "text", "text": "first half"}),
        _assistant("m1", {"type": "text", "text": "second half"}),
    )
    normaliser = Normaliser()
    first = normaliser.normalise(reads[:1])
    second = normaliser.normalise(reads[1:])
    assert [(m.message_id, m.line, m.text) for m in first + second] == [
        ("m1", 1, "first half"),
        ("m1", 2, "second half"),
    ]
    (whole,) = Normaliser().normalise(reads)
    assert (whole.line, whole.end_line, whole.text) == (1, 2, "first half\nsecond half")


def test_message_metadata_comes_from_the_entries() -> None:
    messages = _by_line(normalise(read_from(MAIN).entries))
    first = messages[2]
    assert first.session_id == "c45af7b1-cb7c-4e51-93db-8cbb250a877a"
    assert first.uuid == "0bdd2740-b6f7-4e7b-b1c9-f159cc83b104"
    assert first.cwd == "/workspace"
    assert first.git_branch is None  # Claude Code writes "" outside a git repository
    assert first.timestamp is not None and first.timestamp.isoformat() == "2026-01-02T19:18:31.028000+00:00"
    assert messages[3].message_id == "msg_012yp674BDbdduJCYtTe3GMH"


@pytest.mark.parametrize("bad", [{"tool_result_head_chars": -1}, {"tool_input_max_chars": 0}])
def test_options_are_validated(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        NormaliseOptions(**bad)


def test_tool_map_is_bounded_and_forgets_the_oldest(tmp_path: Path) -> None:
    reads = _reads(
        tmp_path,
        _assistant("m1", _tool_use("t1", "Read"), _tool_use("t2", "Grep"), _tool_use("t3", "Bash")),
        _tool_result("t1", "a"),
        _tool_result("t3", "c"),
    )
    normaliser = Normaliser(max_tracked_tools=2)
    _, first, third = normaliser.normalise(reads)
    assert normaliser.tool_for("t1") is None and normaliser.tool_for("t2") == ("Grep", "")
    assert first.tool_results[0].tool_name is None
    assert third.tool_results[0].tool_name == "Bash"


def test_a_branch_name_holding_a_secret_is_redacted(tmp_path: Path) -> None:
    """Issue 30: `gitBranch` (messages.git_branch, sessions.git_branch) was stored raw: `feat/ghp_…`."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    transcript = Transcript(tmp_path)
    transcript.user("hello")
    path = transcript.write(tmp_path / "s.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line["gitBranch"] = f"feat/{token}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (message,) = normalise(read_from(path).entries)
    assert message.git_branch == "feat/[REDACTED:github_token]"
