"""One bad transcript line stopped capture.

A `.jsonl` whose first line is `'[' * 2000 + ']' * 2000` made `cairn sync` and `cairn backfill` exit 1
with a RecursionError traceback and capture nothing (discovery's sniff let the RecursionError out), and
a line too long for the hot path's parser but nested a few hundred deep passed the long-line path and
raised a RecursionError in normalisation. Every such line is now a counted skip, like any other
malformed line: the rest of its file and every other file are captured.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cairn.transcripts import normalise, read_from
from cairn.transcripts.discover import not_a_transcript
from cairn.transcripts.reader import MAX_NESTING, MAX_TEXT_CHARS
from tests.helpers.builders import Transcript, prompts_after
from tests.helpers.cli import cairn, cairn_json

DEEP = "[" * 2000 + "]" * 2000


def _tool_line(depth: int, pad: int) -> str:
    """An assistant line calling a tool whose input nests `depth` arrays, padded by `pad` characters (a
    pad over `MAX_TEXT_CHARS` sends the line down the reader's long-line path)."""
    nested = "[" * depth + "]" * depth
    return (
        '{"type":"assistant","sessionId":"s","uuid":"a","timestamp":"2025-09-03T10:00:00Z",'
        '"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash",'
        f'"input":{{"x":{nested},"pad":"{"p" * pad}"}}}}]}}}}'
    )


@pytest.fixture
def projects(cairn_home: Path) -> Path:
    """The isolated Claude Code projects directory, with one transcript opening on `DEEP` and one good one."""
    root = Path(os.environ["CAIRN_CLAUDE_PROJECTS_DIR"])
    prompts_after(root / "-work-bad" / "bad.jsonl", DEEP, "the bad file's own prompt", "and its second")
    prompts_after(root / "-work-good" / "good.jsonl", "", "a good session's prompt")
    return root


def test_discovery_passes_over_a_line_too_deep_to_parse(tmp_path: Path) -> None:
    alone = tmp_path / "alone.jsonl"
    alone.write_text(DEEP + "\n")
    assert not_a_transcript(alone) == "none of its first 5 lines is JSON"
    followed = tmp_path / "followed.jsonl"
    prompts_after(followed, DEEP, "a prompt")
    assert not_a_transcript(followed) is None


def test_sync_captures_the_rest_of_a_file_with_a_deep_line_and_every_other_file(projects: Path) -> None:
    proc = cairn("sync", str(projects), "--no-index", "--no-vectors", "--json", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    files = {Path(f["path"]).name: f for f in json.loads(proc.stdout)["sync"]["files"]}
    assert (files["bad.jsonl"]["malformed"], files["bad.jsonl"]["messages_added"]) == (1, 2)
    assert (files["good.jsonl"]["malformed"], files["good.jsonl"]["messages_added"]) == (0, 1)
    assert all(f["error"] is None for f in files.values())


def test_backfill_indexes_around_a_deep_line(projects: Path) -> None:
    done = cairn_json("backfill", "--model", "offline")
    assert done["sessions_total"] == done["sessions_done"] == 2 and done["runs_failed"] == 0
    assert sum(s["messages"] for s in done["sessions"]) == 3


def test_a_long_line_nested_deeper_than_the_hot_path_takes_is_malformed(tmp_path: Path) -> None:
    """A line over `MAX_TEXT_CHARS` is parsed by `json.loads`, which takes ~1000 levels; normalising its
    tool input then ran out of stack. Its nesting is now held to what the hot path takes."""
    path = tmp_path / "s.jsonl"
    path.write_text(_tool_line(500, MAX_TEXT_CHARS + 1000) + "\n" + Transcript(tmp_path).user("after").text())
    result = read_from(path)
    assert result.malformed == 1 and "nested deeper than" in result.malformed_lines[0][1]
    assert [m.text for m in normalise(result.entries)] == ["after"]


@pytest.mark.parametrize("depth", [MAX_NESTING - 6, MAX_NESTING - 5, MAX_NESTING - 4])
def test_the_long_line_path_takes_the_nesting_the_hot_path_takes(tmp_path: Path, depth: int) -> None:
    """Around the limit, a short line and a long one of the same nesting are both read or both refused
    (the line's object, `message`, `content`, the block and `input` are 5 levels above the arrays)."""
    results = []
    for pad in (0, MAX_TEXT_CHARS + 1000):
        path = tmp_path / f"{depth}-{pad}.jsonl"
        path.write_text(_tool_line(depth, pad) + "\n")
        results.append(read_from(path).malformed)
    assert results == ([0, 0] if depth + 5 <= MAX_NESTING else [1, 1])


def test_an_unterminated_deep_last_line_is_left_unread(tmp_path: Path) -> None:
    """A finished file's last line without its newline is taken when it is one JSON object; a deep one
    raised a RecursionError out of that check."""
    path = tmp_path / "s.jsonl"
    path.write_text(Transcript(tmp_path).user("before").text() + DEEP)
    result = read_from(path, settle_seconds=0)
    assert [m.text for m in normalise(result.entries)] == ["before"]
    assert result.partial_bytes == len(DEEP)
