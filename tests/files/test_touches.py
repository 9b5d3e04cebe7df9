"""touched_files over real-shaped transcripts: built, written, read back and turned into tool events."""

from __future__ import annotations

import json
from pathlib import Path

from cairn.files.touches import Touch, touched_files
from cairn.transcripts import read_from
from cairn.transcripts.tool_events import ToolEvent, tool_events
from tests.helpers.builders import Transcript

CWD = "/home/dev/project"


def _events(transcript: Transcript, path: Path) -> list[ToolEvent]:
    return list(tool_events(read_from(transcript.write(path)).entries))


def _paths(touches: list[Touch]) -> list[tuple[str, str]]:
    return [(t.path, t.reason) for t in touches]


def test_read_and_edit_tools_touch_the_file_in_their_input(tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.user("fix the login")
    t.tool("Read", {"file_path": f"{CWD}/src/login.ts"}, "     1→export const x = 1;")
    t.tool("Edit", {"file_path": "src/login.ts", "old_string": "1", "new_string": "2"}, "updated")
    t.tool("MultiEdit", {"file_path": f"{CWD}/src/a.ts", "edits": []}, "ok")
    t.tool("Write", {"file_path": "notes/plan.md", "content": "# Plan"}, "File created")
    t.tool("NotebookEdit", {"notebook_path": f"{CWD}/nb.ipynb", "new_source": "x"}, "ok")
    touches = touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20)
    assert _paths(touches) == [
        (f"{CWD}/src/login.ts", "read"),
        (f"{CWD}/src/a.ts", "edit"),
        (f"{CWD}/notes/plan.md", "edit"),
        (f"{CWD}/nb.ipynb", "edit"),
    ]
    assert {(t.session_id, t.cwd) for t in touches} == {(t.session_id, CWD)}


def test_failed_calls_touch_nothing(tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.tool("Read", {"file_path": f"{CWD}/missing.py"}, "File does not exist.", is_error=True)
    t.tool("Grep", {"pattern": "x"}, "rg: error", is_error=True)
    t.tool("Bash", {"command": "cat src/app.py"}, "print(1)")
    assert touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20) == []


def test_glob_prefers_claude_codes_structured_filenames(tmp_path: Path) -> None:
    t = Transcript(CWD)
    names = [f"{CWD}/src/a.ts", f"{CWD}/src/b.ts"]
    t.tool(
        "Glob",
        {"pattern": "src/*.ts"},
        "\n".join(names),
        structured={"filenames": names, "durationMs": 3, "numFiles": 2, "truncated": False},
    )
    assert _paths(touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20)) == [
        (names[0], "glob"),
        (names[1], "glob"),
    ]


def test_glob_text_without_structure_and_its_notices(tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.tool("Glob", {"pattern": "**/*.md"}, "No files found", structured={"filenames": [], "numFiles": 0})
    t.tool(
        "Glob",
        {"pattern": "**/*.py"},
        "src/one.py\n/abs/two.py\n(Results are truncated. Consider using a more specific path or pattern.)",
    )
    assert _paths(touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20)) == [
        (f"{CWD}/src/one.py", "glob"),
        ("/abs/two.py", "glob"),
    ]


def test_grep_files_with_matches_and_content_modes(tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.tool("Grep", {"pattern": "login"}, f"Found 2 files\n{CWD}/src/a.ts\nsrc/b.ts")
    t.tool(
        "Grep",
        {"pattern": "login", "output_mode": "content", "-n": True},
        "src/c.ts:12:  login();\nsrc/c.ts-13-  // context\nsrc/d.ts:4:const login = 1\n"
        "_posts/2024-01-15-login.md:3:login at last\n_posts/2024-01-15-login.md-4-more\n\n"
        "[Showing results with pagination = limit: 100, offset: 0]",
        structured={"mode": "content", "numFiles": 0, "filenames": [], "content": "...", "numLines": 3},
    )
    # Content mode on a single file prints no file names: code is not taken for paths.
    t.tool(
        "Grep",
        {"pattern": "x", "path": "src/e.py", "output_mode": "content"},
        "    self.x: int = 1\n    return self.x",
    )
    assert _paths(touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20)) == [
        (f"{CWD}/src/a.ts", "grep"),
        (f"{CWD}/src/b.ts", "grep"),
        (f"{CWD}/src/c.ts", "grep"),
        (f"{CWD}/src/d.ts", "grep"),
        (f"{CWD}/_posts/2024-01-15-login.md", "grep"),  # a dated name is not cut at `-01-`
    ]


def test_at_most_per_result_paths_per_result(tmp_path: Path) -> None:
    t = Transcript(CWD)
    names = [f"{CWD}/gen/file_{i}.ts" for i in range(50)]
    t.tool("Glob", {"pattern": "gen/*"}, "\n".join(names), structured={"filenames": names})
    t.tool("Grep", {"pattern": "y"}, "Found 50 files\n" + "\n".join(reversed(names)))
    touches = touched_files(_events(t, tmp_path / "t.jsonl"), per_result=3)
    assert [p for p, _ in _paths(touches)] == names[:3] + names[-1:-4:-1]
    assert touched_files(_events(t, tmp_path / "t.jsonl"), per_result=0) == []


def test_each_path_once_with_its_first_reason(tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.tool("Grep", {"pattern": "z"}, f"Found 1 file\n{CWD}/src/a.ts")
    t.tool("Read", {"file_path": f"{CWD}/src/a.ts"}, "...")
    t.tool("Edit", {"file_path": f"{CWD}/src/a.ts", "old_string": "a", "new_string": "b"}, "ok")
    assert _paths(touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20)) == [
        (f"{CWD}/src/a.ts", "grep")
    ]


def test_a_result_whose_call_came_in_an_earlier_read_uses_the_known_tool_names(tmp_path: Path) -> None:
    t = Transcript(CWD)
    glob_id = t.tool("Glob", {"pattern": "*.ts"}, None)
    grep_id = t.tool("Grep", {"pattern": "q"}, None)
    path = tmp_path / "t.jsonl"
    t.append(path)
    first = read_from(path)
    t.result(glob_id, "src/late.ts")
    t.result(grep_id, "Found 1 file\nsrc/found.ts")
    t.append(path)
    later = list(tool_events(read_from(path, first.offset, line=first.line).entries))
    assert touched_files(later, per_result=20) == []  # unknown calls are ignored
    touches = touched_files(later, per_result=20, tool_names={glob_id: "Glob", grep_id: "Grep"})
    assert _paths(touches) == [(f"{CWD}/src/late.ts", "glob"), (f"{CWD}/src/found.ts", "grep")]


def test_odd_inputs_are_ignored_not_fatal(tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.tool("Read", {"file_path": 42}, "?")
    t.tool("Read", {"path": "wrong-key.py"}, "?")
    t.tool("Read", {"file_path": ""}, "?")
    t.tool("Glob", {"pattern": "*"}, "", structured={"filenames": "not a list"})
    t.tool("Glob", {"pattern": "*"}, [{"type": "text", "text": "src/from_blocks.ts"}])
    t.tool("Grep", {"pattern": "*"}, json.dumps({"unexpected": True}))
    assert _paths(touched_files(_events(t, tmp_path / "t.jsonl"), per_result=20)) == [
        (f"{CWD}/src/from_blocks.ts", "glob")
    ]


def test_relative_paths_stay_relative_without_a_cwd_and_dotdot_is_kept_for_the_policy() -> None:
    from cairn.transcripts.tool_events import ToolUse

    events: list[ToolEvent] = [
        ToolUse(
            id="1", name="Read", input={"file_path": "src/x.py"}, at=None, session_id=None, cwd=None, line=1
        ),
        ToolUse(
            id="2", name="Read", input={"file_path": "../up.py"}, at=None, session_id="s", cwd=CWD, line=2
        ),
    ]
    assert _paths(touched_files(events, per_result=5)) == [("src/x.py", "read"), (f"{CWD}/../up.py", "read")]
