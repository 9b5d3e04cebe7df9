"""`jsonedit`: one top-level member set or deleted, every other byte of the text as it was."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    # The member was on one line, so it stays on one line.
    assert replaced == '{\n  "n": 1e3,\n  "hooks": {"new": [1]},\n  "hand": [1,2,  3]\n}'
    assert delete_member(replaced, "hooks") == '{\n  "n": 1e3,\n  "hand": [1,2,  3]\n}'
    emptied = set_member('{\n  "hooks": {},\n  "a": 1\n}', "hooks", {"new": [1]})
    assert emptied == '{\n  "hooks": {\n    "new": [\n      1\n    ]\n  },\n  "a": 1\n}'
    assert delete_member('{"hooks": 1, "a": 2}', "hooks") == '{"a": 2}'
    assert delete_member('{"a": 2}', "hooks") == '{"a": 2}'


def test_a_repeated_key_edits_the_one_readers_keep() -> None:
    assert set_member('{"k": 1, "k": 2}', "k", 3) == '{"k": 1, "k": 3}'


def test_a_new_file_gets_claude_codes_style() -> None:
    assert set_member(None, "a", [1]) == '{\n  "a": [\n    1\n  ]\n}\n' == new_document({"a": [1]})
    assert set_member("  \n", "a", "ü") == '{\n  "a": "ü"\n}\n'


# A user's own hooks, laid out by hand (odd spacing, one-line groups, a number written 1e1), and the
# group cairn adds beside them.
USERS_HOOKS = (
    '{\n  "hooks": {\n    "Stop": [ {"hooks":[{"type":"command","command":"say done",  "timeout":1e1}]} ],\n'
    '    "PreToolUse":[\n        {"matcher": "Bash",\n'
    '         "hooks": [ {"type": "command", "command": "lint"} ]}\n'
    '    ]\n  },\n  "model": "opus"\n}\n'
)
CAIRNS = {"hooks": [{"type": "command", "command": "/h/.cairn/bin/cairn-hook", "timeout": 10}]}
STOP_GROUP = '{"hooks":[{"type":"command","command":"say done",  "timeout":1e1}]}'
PRE_TOOL_USE = (
    '[\n        {"matcher": "Bash",\n         "hooks": [ {"type": "command", "command": "lint"} ]}\n    ]'
)


def test_entries_beside_the_changed_ones_keep_their_bytes() -> None:
    hooks = json.loads(USERS_HOOKS)["hooks"]
    with_cairn = {**hooks, "Stop": [*hooks["Stop"], CAIRNS], "SessionEnd": [CAIRNS]}
    added = set_member(USERS_HOOKS, "hooks", with_cairn)
    assert json.loads(added)["hooks"] == with_cairn
    assert STOP_GROUP in added and f'"PreToolUse":{PRE_TOOL_USE}' in added
    assert added.endswith(',\n  "model": "opus"\n}\n')
    assert set_member(added, "hooks", hooks) == USERS_HOOKS


def test_an_entry_taken_out_of_a_users_group_leaves_the_rest_of_it() -> None:
    text = '{"hooks": {"Stop": [{"matcher": "*",  "hooks": [{"command": "mine"},\n  {"command": "cairn"}]}]}}'
    edited = set_member(text, "hooks", {"Stop": [{"matcher": "*", "hooks": [{"command": "mine"}]}]})
    assert edited == '{"hooks": {"Stop": [{"matcher": "*",  "hooks": [{"command": "mine"}]}]}}'


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab ü", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=2), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, JSON_VALUES, st.sampled_from([None, "  ", "\t"]))
def test_any_value_is_spliced_in_exactly_and_undone_exactly(
    old: object, new: object, indent: str | None
) -> None:
    text = json.dumps({"a": 1, "hooks": old, "z": [1]}, indent=indent)
    spliced = set_member(text, "hooks", new)
    assert json.loads(spliced) == {"a": 1, "hooks": new, "z": [1]}
    assert spliced.startswith(text[: text.index('"hooks"')]) and spliced.endswith(
        text[text.index('"z"') - 1 :]
    )
    if (
        isinstance(old, dict)
        and isinstance(new, dict)
        and list(new)[: len(old)] == list(old)
        and all(new[key] == value for key, value in old.items())
    ):
        # Members only added to an object: taking them out again gives back the very text. (A member
        # whose value changed is written back in cairn's own encoding: `"\u00fc"` may return as `"ü"`.)
        assert set_member(spliced, "hooks", old) == text
