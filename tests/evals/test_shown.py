"""The two figures of what a person sees in a top 10 (`cairn.evals.shown`): results repeating a higher
one, and snippets holding backslash escapes or raw tool JSON that the text as written does not hold."""

from __future__ import annotations

from cairn.evals.shown import Shown, causes, has_escape, has_raw_json, shown, summed, written


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
        ("Todo: fix the lock", "todos=[fix the lock]", "reply"),
        ("todo:  FIX the lock", "other content", "reply"),  # the same snippet, whitespace and case aside
        ("another snippet", "todos=[fix the lock]", "reply"),  # the same content
        ("a \\n escape", 'x {"a":1}', "reply"),
    ]
    assert shown(ranking) == Shown(results=4, repeats=2, escapes=1, raw_json=0, unreadable=1)


def test_the_text_as_written_reads_rendered_tool_inputs_back() -> None:
    content = 'Let me look.\n[tool_use Grep] pattern="git\\\\.(Repository|Status)" path="/src/hooks.go"'
    assert written(content) == "Let me look. git\\.(Repository|Status) /src/hooks.go"
    assert written("[tool_result Read]   1→x = 1") == "1→x = 1"
    # A list value (a todo list) is not text anyone wrote: shown as JSON it stays unreadable.
    assert written('[tool_use TodoWrite] todos=[{"content": "a"}]') == ""


def test_escapes_cairn_added_or_left_are_unreadable() -> None:
    unreadable = [
        ("\\*\\*much more musical\\*\\*", "**much more musical**", "reply"),  # escaped by a snippet
        ("$ cd x\\nnpm test", '[tool_use Bash] command="cd x\\nnpm test"', "tool_call"),  # left encoded
    ]
    for snippet, content, origin in unreadable:
        assert causes(snippet, content, origin) == (True, False, False), snippet


def test_escapes_and_json_the_text_holds_are_shown_as_written() -> None:
    as_written = [
        (
            'Read x.go → fmt.Printf("%s\\n", name)',
            '[tool_result Read] 1→fmt.Printf("%s\\n", name)',
            "tool_result",
        ),
        (
            "…remove it. Grep git\\.(Repository|Status)…",
            'remove it.\n[tool_use Grep] pattern="git\\\\.(Repository|Status)"',
            "reply",
        ),
        ('set `"remote": "upstream"` in settings', 'Users set `"remote": "upstream"` in settings.', None),
        # A file the model wrote with its escapes doubled, shown decoded once.
        (
            'Read a.py → print(f"\\n🎉 done!") if __name__ == "__main__": main()',
            '[tool_result Read] print(f\\"\\\\n🎉 done!\\")\\n\\nif __name__ == \\"__main__\\":\\n main()',
            "tool_result",
        ),
    ]
    for snippet, content, origin in as_written:
        assert causes(snippet, content, origin) == (False, False, True), snippet
    assert shown(as_written) == Shown(results=4, as_written=4)


def test_a_quoted_phrase_before_a_colon_is_prose_not_json() -> None:
    for snippet in (
        '- "peaceful water": Pentatonic scale, piano timbre',
        'if __name__ == "__main__": main()',
    ):
        assert causes(snippet, "", "reply") == (False, False, False), snippet


def test_json_in_prose_outside_code_and_tool_markers_are_unreadable() -> None:
    assert causes('resolved by {"todos": [1]}', 'resolved by {"todos": [1]}', None) == (False, True, False)
    assert causes('ran {"command": "ls"}', '[tool_use Bash] command="ls"', "tool_call") == (
        False,
        True,
        False,
    )
    assert causes("[tool_use Bash] ls", "[tool_use Bash] ls", "reply") == (False, True, False)


def test_summed_counts_and_shares() -> None:
    figures = summed([Shown(10, 1, 2, 1, 3, 1), Shown(10, 0, 0, 1, 1)])
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
        "as_written": 1,
        "as_written_share": 0.05,
    }
    assert summed([])["repeats_share"] == 0.0
