"""Issue 14, item 7: one 20 MB JSON line was stored whole (a 20,971,511-character message) and its sync
peaked at 2.85 GB. Strings longer than `MAX_TEXT_CHARS` are now cut where the line is parsed — head
and end around a marker that says how much was cut, counted — so one line costs what a normal message
costs, and normal lines take the same path as before."""

from __future__ import annotations

import random
import sqlite3
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cairn.transcripts import normalise, read_from, redact
from cairn.transcripts import reader as reader_module
from cairn.transcripts.entries import UserEntry, parse_entry
from cairn.transcripts.reader import MAX_TEXT_CHARS, TEXT_TAIL_CHARS, cut_text
from tests.helpers.builders import Transcript
from tests.helpers.hostile_disks import CAIRN, cairn_env
from tests.helpers.paths import real_transcripts

from .plain import plain_lines

MB = 1024 * 1024
RSS_LIMIT_MB = 600


def _words(n_chars: int, seed: int = 1) -> str:
    """`n_chars` of space-separated random words: text with somewhere to cut, like a pasted log."""
    rnd = random.Random(seed)
    vocabulary = ["".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(2, 9))) for _ in range(3000)]
    out: list[str] = []
    size = 0
    while size < n_chars:
        word = rnd.choice(vocabulary)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n_chars]


def test_a_long_string_is_cut_to_its_head_and_end_and_counted(tmp_path: Path) -> None:
    body = "HEAD-MARK " + _words(3 * MB) + " TAIL-MARK"
    path = Transcript(tmp_path).user("before").user(body).say("after").write(tmp_path / "s.jsonl")

    result = read_from(path)
    assert result.malformed == result.oversized == 0
    before, long, after = result.entries
    assert before.chars_cut == after.chars_cut == 0
    assert isinstance(long.entry, UserEntry) and isinstance(long.entry.message.content, str)
    kept = long.entry.message.content
    assert len(kept) <= MAX_TEXT_CHARS
    assert kept.startswith("HEAD-MARK ") and kept.endswith(" TAIL-MARK")
    assert long.chars_cut == len(body) - len(kept) > 0

    messages = normalise(result.entries)
    assert (messages[0].text, messages[-1].text) == ("before", "after")
    cut = messages[1]
    assert cut.chars_cut == long.chars_cut
    assert len(cut.text) <= MAX_TEXT_CHARS and "chars not stored]" in cut.text


def test_the_marker_says_how_many_characters_were_left_out() -> None:
    text = _words(MAX_TEXT_CHARS * 3)
    kept = cut_text(text)
    head, marker, tail = kept.split("\n")
    left_out = int(marker.removeprefix("…[").split(" ")[0])
    assert len(head) + left_out + len(tail) == len(text)
    assert text.startswith(head) and text.endswith(tail)
    assert TEXT_TAIL_CHARS - 1024 <= len(tail) <= TEXT_TAIL_CHARS
    assert len(kept) <= MAX_TEXT_CHARS


def test_a_cut_never_splits_a_secret_so_redaction_still_sees_it_whole(tmp_path: Path) -> None:
    """A token across where the head is cut, or across where the kept end begins, never leaves half of
    itself: the string is redacted whole before it is cut. One inside the kept end shows redacted."""
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    filler = _words(MAX_TEXT_CHARS * 2)
    head_cut = MAX_TEXT_CHARS - TEXT_TAIL_CHARS - 48
    tail_start = len(filler) - TEXT_TAIL_CHARS
    pieces = [filler[: head_cut - 10], secret, filler[head_cut - 10 : tail_start - 10], secret]
    body = " ".join([*pieces, filler[tail_start - 10 : -100], secret, filler[-100:]])
    path = Transcript(tmp_path).user(body).write(tmp_path / "s.jsonl")

    (message,) = normalise(read_from(path).entries)
    for part in ("ghp_", secret[4:12], secret[-8:]):  # no head or tail of a token, anywhere
        assert part not in message.text
    assert message.text.endswith(filler[-100:]) and "[REDACTED:github_token]" in message.text[-200:]


#: Secrets whose rule needs what comes before the value: (the context, the value from the whitespace
#: where the kept end will begin).
STRADDLING = {
    "private key": (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join("MIIEowIBAAKCAQEA" + f"{i:04d}" + "q8Zk3Lm9" * 6 for i in range(59)),
        "\nMIIEowIBAAKCAQEA0059" + "q8Zk3Lm9" * 6 + "\n-----END RSA PRIVATE KEY-----",
    ),
    "bearer": ("Authorization: Bearer", " " + "eyZ0aGlzIGlzIGEgdG9rZW4gdGhhdCBpcyBsb25n" * 2),
    "mysql": ("mysql -u root", " -pSup3rS3cretDbPass"),
    "password": ("password =", " hunter2Hunter2x9"),
}


@pytest.mark.parametrize("name", sorted(STRADDLING))
def test_a_secret_straddling_the_kept_end_is_redacted_whole(tmp_path: Path, name: str) -> None:
    """Issue 30: the reader cut a long string before redaction ran, so a secret across where the kept
    end begins lost the context its rule needs (a private key's BEGIN line, `Bearer`, `mysql … -p`,
    `password =`) and was stored: in messages, passages and their full-text index, searchable."""
    context, value = STRADDLING[name]
    after = _words(TEXT_TAIL_CHARS - len(value) - 1, seed=2)  # the kept end begins where the value does
    body = f"{_words(MAX_TEXT_CHARS + 20_000)} {context}{value} {after}"
    kept_value = value.split()[0]
    assert kept_value in redact(cut_text(body)), "cut first, the value is kept without its context"
    path = Transcript(tmp_path).user(body).write(tmp_path / "s.jsonl")
    (message,) = normalise(read_from(path).entries)
    assert message.chars_cut > 0
    assert kept_value not in message.text, "the value kept without its context"


def test_long_tool_output_is_cut_in_every_string_of_the_line(tmp_path: Path) -> None:
    """Claude Code writes a tool's output twice on its line (the result block and `toolUseResult`)."""
    output = _words(2 * MB)
    transcript = Transcript(tmp_path)
    transcript.tool("Bash", {"command": "cat big.log"}, output, structured={"stdout": output, "stderr": ""})
    path = transcript.write(tmp_path / "s.jsonl")

    result = read_from(path)
    _call, res = result.entries
    assert res.chars_cut > 2 * (2 * MB - MAX_TEXT_CHARS)
    assert isinstance(res.entry, UserEntry)
    assert len(res.entry.tool_use_result["stdout"]) <= MAX_TEXT_CHARS
    (_, message) = normalise(result.entries)
    assert message.full_text is not None and len(message.full_text) <= MAX_TEXT_CHARS + 100
    assert output[-200:] in message.text  # the shown clip ends with the output's real end


def test_a_long_line_that_is_bad_json_is_counted_malformed_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = Transcript(tmp_path).user("after").text()
    nested = "[" * 200_000 + "]" * 200_000  # deeper than json.loads can go
    path.write_text('{"type": "user", "message": ' + "x" * MB + "\n" + nested + "\n" + good)
    result = read_from(path)
    assert result.malformed == 2 and [r.line for r in result.entries] == [3]
    assert all("invalid JSON" in reason for _, reason in result.malformed_lines)


def test_lines_over_max_line_bytes_are_skipped_and_counted(tmp_path: Path) -> None:
    path = Transcript(tmp_path).user("x" * (2 * MB)).user("after").write(tmp_path / "s.jsonl")
    result = read_from(path, max_line_bytes=MB)
    assert result.oversized == 1 and [r.line for r in result.entries] == [2]


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_normal_lines_take_the_fast_path_unchanged(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path is untouched for every line of real transcripts: none takes the long-line path,
    and every entry equals what `parse_entry` makes of its line."""

    def refuse(*args: object) -> None:
        raise AssertionError("a normal line took the long-line path")

    monkeypatch.setattr(reader_module.EntryStream, "_parse_long", refuse)
    result = read_from(path)
    expected = [parse_entry(raw) for _, raw in _raw_lines(path)]
    assert [read.entry for read in result.entries] == expected
    assert all(read.chars_cut == 0 for read in result.entries)
    assert len(result.entries) == len(plain_lines(path))


def _raw_lines(path: Path) -> list[tuple[int, bytes]]:
    return [(n, raw) for n, raw in enumerate(path.read_bytes().split(b"\n"), 1) if raw.strip()]


# Runs `cairn` in a child and reports that child's peak RSS: RUSAGE_CHILDREN of this wrapper process
# covers only it, not every process the test run started before.
_PEAK_RSS = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(proc.stdout + proc.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.returncode)
"""


@pytest.mark.process
def test_a_20_mb_line_is_captured_cut_within_600_mb(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    body = _words(20 * MB + 1024)
    path = (
        Transcript(tmp_path / "work")
        .user("before the huge line")
        .user(body)
        .say("after the huge line: zebracorn")
        .write(projects / "-work" / "session.jsonl")
    )
    assert path.stat().st_size > 20 * MB
    home = tmp_path / "home"

    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(_PEAK_RSS),
            *CAIRN,
            "sync",
            "--no-index",
            "--no-vectors",
            str(projects),
        ],
        capture_output=True,
        text=True,
        env=cairn_env(home),
        timeout=600,
    )
    peak_kb, code = map(int, proc.stdout.split())
    assert code == 0, proc.stderr
    assert "1 long message stored cut" in proc.stderr
    assert peak_kb / 1024 < RSS_LIMIT_MB, f"peak RSS {peak_kb / 1024:.0f} MB"

    with sqlite3.connect(home / "cairn.db") as db:
        texts = [row[0] for row in db.execute("SELECT text FROM messages ORDER BY line")]
        passages = db.execute("SELECT coalesce(sum(length(text)), 0) FROM message_passages").fetchone()[0]
    assert texts[0] == "before the huge line" and texts[-1] == "after the huge line: zebracorn"
    assert len(texts[1]) <= MAX_TEXT_CHARS and "chars not stored]" in texts[1]
    assert passages <= MAX_TEXT_CHARS  # passages are cut from the stored text, not from the 20 MB
    assert (home / "cairn.db").stat().st_size < 8 * MB
    print(f"20 MB line: peak RSS {peak_kb / 1024:.0f} MB, message stored as {len(texts[1])} chars")
