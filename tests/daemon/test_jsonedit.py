"""`jsonedit`: one top-level member set or deleted, every other byte of the text as it was."""

from __future__ import annotations

import json

import pytest

from cairn.daemon.jsonedit import Style, delete_member, new_document, set_member

VALUE = {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "x", "timeout": 10}]}]}

TEXTS = [
    '{"model":"opus","env":{"A":"b"}}',
    '{"model": "opus", "list": [1, 2]}\n',
    '{\n    "model": "opus",\n    "n": 1e3\n}',
    '{\n\t"name": "b\\u00e4r"\n}\n',
    '{\r\n  "a": [1, 2],\r\n  "b": {}\r\n}\r\n',
    '{\n  "first": 1,\n  "hand": [1, 2, 3],\n  "last": "ü"\n}\n',
    "{}",
    "{}\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_member_added_then_deleted_gives_back_the_exact_text(text: str) -> None:
    added = set_member(text, "hooks", VALUE)
    assert json.loads(added) == {**json.loads(text), "hooks": VALUE}
    assert delete_member(added, "hooks") == text


@pytest.mark.parametrize("text", TEXTS[:6])
def test_the_added_member_is_written_in_the_files_style(text: str) -> None:
    added = set_member(text, "hooks", VALUE)
    style = Style.detect(text)
    start = added.index('"hooks"')
    expected = json.dumps("hooks") + style.key_separator + style.dumps(VALUE, 1)
    assert added[start : start + len(expected)] == expected
    assert ("\r\n" in added) == ("\r\n" in text) and added.endswith("\n") == text.endswith("\n")


def test_styles_are_read_from_the_bytes() -> None:
    assert Style.detect('{"a":1,"b":2}') == Style(None, ",", ":")
    assert Style.detect('{"a": 1, "b": 2}') == Style(None, ", ", ": ")
    assert Style.detect('{\n    "a": 1\n}').indent == "    "
    assert Style.detect('{\n\t"a": "\\u00e4"\n}') == Style("\t", ensure_ascii=True)
    assert Style.detect('{\r\n  "a": "ä"\r\n}').newline == "\r\n"
    assert Style.detect("{}") == Style()


def test_replacing_a_member_leaves_the_bytes_around_it() -> None:
    text = '{\n  "n": 1e3,\n  "hooks": {"old": true},\n  "hand": [1,2,  3]\n}'
    replaced = set_member(text, "hooks", {"new": [1]})
    assert (
        replaced == '{\n  "n": 1e3,\n  "hooks": {\n    "new": [\n      1\n    ]\n  },\n  "hand": [1,2,  3]\n}'
    )
    assert delete_member(replaced, "hooks") == '{\n  "n": 1e3,\n  "hand": [1,2,  3]\n}'
    assert delete_member('{"hooks": 1, "a": 2}', "hooks") == '{"a": 2}'
    assert delete_member('{"a": 2}', "hooks") == '{"a": 2}'


def test_a_repeated_key_edits_the_one_readers_keep() -> None:
    assert set_member('{"k": 1, "k": 2}', "k", 3) == '{"k": 1, "k": 3}'


def test_a_new_file_gets_claude_codes_style() -> None:
    assert set_member(None, "a", [1]) == '{\n  "a": [\n    1\n  ]\n}\n' == new_document({"a": [1]})
    assert set_member("  \n", "a", "ü") == '{\n  "a": "ü"\n}\n'
