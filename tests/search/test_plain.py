"""Each rule of `cairn.search.plain`: a stored message (or idea) read as a person reads it — calls as
calls, a TodoWrite as its items, tool output as itself, markdown without its markers, no escapes and no
JSON quoting, on one line."""

from __future__ import annotations

import pytest

from cairn.search.plain import call_head, readable, result_head, unjson, within


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        # A tool call is the call, its other inputs after a dash; literal `\n` in the input is a line break.
        (
            '[tool_use Bash] command="cd app\\nnpm test" description="Run the tests"',
            "$ cd app npm test — Run the tests",
        ),
        ('[tool_use Read] file_path="/src/app.py" limit=50 offset=55', "Read /src/app.py"),
        ('[tool_use Grep] pattern="TODO" path="src"', "Grep TODO — src"),
        (
            '[tool_use Edit] file_path="a.py" '
            'old_string="    def f():\\n        \\"\\"\\"Doc.\\"\\"\\"" new_string="x"',
            'Edit a.py — def f(): """Doc.""" · x',
        ),
        ('[tool_use mcp__linear__get_issue] id="ENT-241"', "linear.get_issue ENT-241"),
        # A TodoWrite is its items, never JSON; a list cut short keeps what is whole.
        (
            '[tool_use TodoWrite] todos=[{"id":"1","content":"fix the lock","status":"completed",'
            '"priority":"high"},{"content":"add a test","status":"pending","activeForm":"Adding a test"},'
            '{"id":"3","content":"ship it","status":"in_progress"},{"id":"4","content":"cut sho…',
            "TodoWrite: fix the lock (done) · add a test (pending) · ship it (in progress) · cut sho…",
        ),
        # Several calls in one message, after its prose.
        (
            'Let me read both.\n[tool_use Read] file_path="a.py"\n[tool_use Read] file_path="b.py"',
            "Let me read both. Read a.py · Read b.py",
        ),
        # A tool result is its output (its call is the head, `result_head`).
        (
            "[tool_result Bash error] Exit code 1\nnpm ERR! missing script",
            "Exit code 1 npm ERR! missing script",
        ),
        (
            "[tool_result Read]      1\t#!/usr/bin/env python\n     2\timport os",
            "#!/usr/bin/env python import os",
        ),
        ("[tool_result Read]    189→ logCtx := x\n   190→ return", "logCtx := x return"),
        ("[tool_result Bash] first…[1234 chars elided]…last", "first … last"),
        # JSON output as `key: value`: whole, behind a label, or cut from the middle of one line.
        (
            '[tool_result mcp__x__get] {"id":"7","title":"Run gc","labels":["a","b"]}',
            "id: 7, title: Run gc, labels: a, b",
        ),
        (
            '[tool_result WebSearch] Links: [{"title":"T1","url":"u1"},{"title":"T2","url":"u2"}]',
            "Links: title: T1, url: u1 · title: T2, url: u2",
        ),
        ('[tool_result mcp__x__get] {"a":"1","b":"2","c":"3","d":"cut sho', "a: 1, b: 2, c: 3, d: cut sho"),
        # A one-line output of escaped line breaks (a notebook cell) reads as lines.
        (
            "[tool_result NotebookEdit] Updated cell 1 with # Title\\n\\nThe \\*best\\* part\\n",
            "Updated cell 1 with # Title The *best* part",
        ),
        # A subagent's report is prose.
        ("[tool_result Task] ## Findings\n\n**Bug 1**: the lock", "Findings Bug 1: the lock"),
        # Prose loses its markdown markers and escapes, and keeps what only looks like them.
        ("Perfect! A **much more musical** version.", "Perfect! A much more musical version."),
        (
            "## What's *now* musical\n- __two words__ and \\*stars\\*",
            "What's now musical - two words and *stars*",
        ),
        ("```python\nx = a*b*c\n```\nCall `__init__` or **kwargs.", "x = a*b*c Call `__init__` or **kwargs."),
        ("> quoted\n\n---\n\nafter", "quoted after"),
        # In code a backslash is the text's: a Windows path in backticks, a format string in a fence.
        (
            'Fixed `cd "C:\\Users\\me\\.claude-worktrees"` and 1\\. item',
            'Fixed `cd "C:\\Users\\me\\.claude-worktrees"` and 1. item',
        ),
        ('```\nprintf "%s\\n" x\n```\nthen \\_done\\_', 'printf "%s\\n" x then _done_'),
    ],
)
def test_a_stored_text_reads_as_the_session_showed_it(stored: str, read: str) -> None:
    assert readable(stored) == read


def test_a_passage_from_the_middle_of_a_message_reads_by_what_it_is() -> None:
    assert readable('a.\\"\\n\\treturn x" new_string="y', "input") == 'a." return x" new_string="y'
    assert readable('s","priority":{"value":3,"name":"Medium"},"url":"https://x"}', "output") == (
        "s, priority: value: 3, name: Medium · url: https://x"
    )
    assert readable("**Bold** prose", "prose") == "Bold prose"


def test_a_result_starts_with_its_call() -> None:
    assert result_head("tool_result", "Bash", "npm run build", True, "Exit code 1 ERROR in x") == (
        "$ npm run build → exit 1:",
        "ERROR in x",
    )
    assert result_head("tool_result", "Bash", "npm run build", True, "ERROR") == (
        "$ npm run build → failed:",
        "ERROR",
    )
    assert result_head("tool_result", "Read", "src/app.py", False, "import os") == (
        "Read src/app.py →",
        "import os",
    )
    assert result_head("subagent", "Task", "find the bug", False, "Found it") == (
        "Task find the bug →",
        "Found it",
    )
    assert result_head("tool_call", "Bash", "ls", False, "$ ls") == ("$ ls", "$ ls")
    assert result_head("reply", None, None, False, "text") == ("", "text")
    assert result_head("tool_result", None, None, True, "output of an unknown call") == (
        "",
        "output of an unknown call",
    )


def test_a_call_head_is_short_and_relative_to_the_project() -> None:
    assert call_head("Bash", "git -C /home/me/app log " + "x " * 60).endswith("…")
    assert len(call_head("Bash", "git log " + "word " * 60)) <= 2 + 80
    assert within("git -C /home/me/app log", "/home/me/app") == "git -C . log"
    assert within("/home/me/app/src/app.py", "/home/me/app/") == "src/app.py"
    assert within("/home/me/app-two/x.py", "/home/me/app") == "/home/me/app-two/x.py"
    assert within("src/app.py", None) == "src/app.py"


def test_json_reads_as_key_value_pairs_whole_or_cut() -> None:
    assert unjson('{"a": {"b": [1, 2]}, "c": "d\\ne"}') == "a: b: 1, 2 · c: d e"
    assert unjson('[{"x":"1"},{"x":"2"') == "x: 1 · x: 2"


def test_a_list_input_ends_at_the_first_space_outside_its_strings() -> None:
    from cairn.transcripts.origin import fields_of

    rendered = 'todos=[{"content":"set x=1 now","status":"pending"}] path="a b"'
    assert fields_of(rendered) == {"todos": '[{"content":"set x=1 now","status":"pending"}]', "path": "a b"}
