"""The two figures of what a person sees in a top 10 (`cairn.evals.shown`): results repeating a higher
one, and snippets holding backslash escapes or raw tool JSON."""

from __future__ import annotations

from cairn.evals.shown import Shown, has_escape, has_raw_json, shown, summed


def test_escapes_are_backslashes_before_string_escapes_or_punctuation() -> None:
    for text in ("cd x\\nnpm test", "\\*\\*much more musical\\*\\*", 'say \\"hi\\"', "a\\tb", "\\\\"):
        assert has_escape(text), text
    for text in ("C:\\Users\\chip", "a regex \\d+ in a file", "plain text, no escapes"):
        assert not has_escape(text), text


def test_raw_json_is_a_tool_rendering_or_a_json_object() -> None:
    for text in ('…"status":"completed","priority":"high"},{"id":"2"…', '[tool_use Bash] command="ls"'):
        assert has_raw_json(text), text
    assert has_raw_json("[tool_result Read] 1 import os")
    assert not has_raw_json("TodoWrite: fix the lock (done) · add a test (pending)")
    assert not has_raw_json("the {braces} and a: colon")


def test_a_result_repeats_when_its_snippet_or_content_is_a_higher_ones() -> None:
    ranking = [
        ("Todo: fix the lock", "todos=[fix the lock]"),
        ("todo:  FIX the lock", "other content"),  # the same snippet, whitespace and case aside
        ("another snippet", "todos=[fix the lock]"),  # the same content
        ("a \\n escape", 'x {"a":1}'),
    ]
    assert shown(ranking) == Shown(results=4, repeats=2, escapes=1, raw_json=0, unreadable=1)


def test_summed_counts_and_shares() -> None:
    figures = summed([Shown(10, 1, 2, 1, 3), Shown(10, 0, 0, 1, 1)])
    assert figures == {
        "results": 20,
        "repeats": 1,
        "repeats_share": 0.05,
        "unreadable": 4,
        "unreadable_share": 0.2,
        "escapes": 2,
        "escapes_share": 0.1,
        "raw_json": 2,
        "raw_json_share": 0.1,
    }
    assert summed([])["repeats_share"] == 0.0
