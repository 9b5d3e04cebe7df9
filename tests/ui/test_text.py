"""Issue 32: how the viewer shows transcript text — the `md` filter's safety, folding, labels cut to fit —
and the timeline's and graph's geometry, checked without a browser (`test_rendering.py` checks the same
in Chromium)."""

from __future__ import annotations

import math
from html.parser import HTMLParser
from typing import Any

import pytest
from markupsafe import Markup

from cairn.ui.text import fit_text, fold, link_allowed, markdown, markdown_inline, message_parts, text_width
from cairn.ui.viewer import _environment
from cairn.ui.views import graph, projects
from tests.ui.heron import FLAG, HOSTILE_MARKDOWN, LONG_TEXT, LONG_TOOL_OUTPUT

#: Every element the renderer may emit: nothing that loads, runs or embeds anything.
ALLOWED_TAGS = {
    "p", "br", "em", "strong", "code", "pre", "a", "span", "ul", "ol", "li", "blockquote", "hr",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "s",
}  # fmt: skip


class _Elements(HTMLParser):
    """The tags and attributes of an HTML fragment, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.tags


def test_the_hostile_payload_renders_to_inert_elements_only() -> None:
    html = str(markdown(HOSTILE_MARKDOWN))
    elements = _elements(html)
    assert {tag for tag, _ in elements} <= ALLOWED_TAGS, html
    for tag, attrs in elements:
        assert not [name for name in attrs if name.startswith("on") or name in ("style", "src")], (tag, attrs)
        if tag == "a":
            assert link_allowed(str(attrs["href"])), attrs
            assert attrs["rel"] == "noopener noreferrer"
    hrefs = {attrs["href"] for tag, attrs in elements if tag == "a"}
    assert hrefs == {"https://example.com/heron?a=1&b=2", "/projects"}
    # The script, shown as text (escaped), never as markup.
    assert f"&lt;script&gt;window.{FLAG} = 1; alert(1)&lt;/script&gt;" in html
    assert "<code>inline &lt;b&gt;code&lt;/b&gt;</code>" in html and "<strong>bold</strong>" in html


def test_a_preview_renders_inline_markdown_only_and_as_safely() -> None:
    """Previews (briefs, the feed) get inline Markdown — no paragraph, no block — by the same renderer."""
    html = str(markdown_inline(HOSTILE_MARKDOWN.replace("\n", " ")))
    elements = _elements(html)
    assert {tag for tag, _ in elements} <= ALLOWED_TAGS - {"p", "pre", "ul", "ol", "li", "table"}, html
    for tag, attrs in elements:
        assert not [name for name in attrs if name.startswith("on") or name in ("style", "src")], (tag, attrs)
        if tag == "a":
            assert link_allowed(str(attrs["href"])) and attrs["rel"] == "noopener noreferrer", attrs
    assert "&lt;script&gt;" in html and "<script" not in html
    assert str(markdown_inline("Use `uv sync` and **not** pip")) == (
        "Use <code>uv sync</code> and <strong>not</strong> pip"
    )
    assert str(markdown_inline("[x](javascript:alert(1))")) == "[x](javascript:alert(1))"


@pytest.mark.parametrize(
    "source",
    [
        "[x](javascript:alert(1))",
        "[x](JAVASCRIPT:alert(1))",
        "[x](&#106;avascript&#58;alert(1))",
        "[x](<java script:alert(1)>)",
        "[x](vbscript:msgbox)",
        "[x](data:text/html,<script>alert(1)</script>)",
        "[x](data:image/png;base64,AAAA)",
        "[x](file:///etc/passwd)",
        "<javascript:alert(1)>",
        "[x][r]\n\n[r]: javascript:alert(1)",
    ],
)
def test_a_link_to_anything_but_http_https_mailto_or_relative_is_no_link(source: str) -> None:
    html = str(markdown(source))
    assert "<a" not in html, html
    assert "x" in html or "javascript" in html  # its text stays


@pytest.mark.parametrize(
    ("source", "href"),
    [
        ("[x](https://example.com/a)", "https://example.com/a"),
        ("[x](http://example.com)", "http://example.com"),
        ("[x](mailto:someone@example.com)", "mailto:someone@example.com"),
        ("[x](/item/3)", "/item/3"),
        ("[x](#notes)", "#notes"),
        ("[x](docs/a.md?x=1:2)", "docs/a.md?x=1:2"),
        ("<https://example.com/auto>", "https://example.com/auto"),
    ],
)
def test_web_mail_and_relative_links_stay_links_with_rel(source: str, href: str) -> None:
    elements = _elements(str(markdown(source)))
    assert [(tag, attrs["href"], attrs["rel"]) for tag, attrs in elements if tag == "a"] == [
        ("a", href, "noopener noreferrer")
    ]


def test_an_image_is_its_alt_text_and_fetches_nothing() -> None:
    html = str(markdown('![a <b>tracker</b>](http://127.0.0.1:9/x.png "t") and ![](https://e.example/y.gif)'))
    assert "<img" not in html and "127.0.0.1" not in html and "e.example" not in html
    assert '<span class="image-alt" title="image not loaded">a &lt;b&gt;tracker&lt;/b&gt;</span>' in html
    assert '<span class="image-alt" title="image not loaded">image</span>' in html


def test_code_keeps_its_html_as_text_and_a_fence_info_cannot_break_out() -> None:
    fence = '```js"><script>alert(1)</script>\n<img src=x onerror=alert(1)>\n```'
    html = str(markdown(fence + "\n\n`<svg onload=x>`"))
    assert [tag for tag, _ in _elements(html)] == ["pre", "code", "p", "code"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<code>&lt;svg onload=x&gt;</code>" in html


def test_line_breaks_are_kept_and_markdown_is_rendered() -> None:
    html = str(markdown("first line\nsecond line\n\n- a `b`\n- **c**\n\n| h |\n|---|\n| d |"))
    assert "first line<br />\nsecond line" in html
    assert "<li>a <code>b</code></li>" in html and "<strong>c</strong>" in html and "<td>d</td>" in html


def test_the_md_filter_marks_safe_only_the_renderers_output() -> None:
    env = _environment()
    text = "<script>alert(1)</script> `x`"
    rendered = "<p>&lt;script&gt;alert(1)&lt;/script&gt; <code>x</code></p>\n"
    assert env.from_string("{{ t|md }}").render(t=text) == rendered
    assert env.from_string("{{ t }}").render(t=text) == "&lt;script&gt;alert(1)&lt;/script&gt; `x`"
    assert isinstance(markdown(text), Markup)
    assert markdown(None) == Markup("")
    # Markup passed in is rendered as text too: nothing skips the renderer's escaping.
    assert "<b>" not in str(markdown(Markup("<b>bold</b>")))


def test_tool_output_and_long_messages_fold_short_ones_do_not() -> None:
    tool = f"[tool_result Bash] {LONG_TOOL_OUTPUT}"
    folded = fold(tool, "tool_result")
    assert folded is not None and folded.first == "[tool_result Bash] heron-notes/000.md  0 bytes  ok"
    assert folded.more == 39
    assert fold('[tool_use Bash] command="ls"\n[tool_use Read] file_path="a"', "text") is not None
    assert fold("[tool_result Glob] No files found", "tool_result") is None  # one short line: nothing to hide
    assert fold(LONG_TEXT, "text") == fold(LONG_TEXT)
    long_text = fold(LONG_TEXT, "text")
    assert long_text is not None and long_text.first == "The heron checklist, point by point:"
    assert long_text.more == 31
    assert fold("two\nlines", "text") is None and fold("", "text") is None
    wide = fold("x" * 500 + "\nmore", "tool_result")
    assert wide is not None and len(wide.first) == 120 and wide.first.endswith("…")


def test_a_message_is_cut_into_prose_and_tool_calls() -> None:
    text = 'Let me look.\n[tool_use Bash] command="ls"\n[tool_use Read] file_path="a"\nThen **this**.'
    parts = [(p.tool, p.text) for p in message_parts(text, "text")]
    assert parts == [
        (False, "Let me look."),
        (True, '[tool_use Bash] command="ls"\n[tool_use Read] file_path="a"'),
        (False, "Then **this**."),
    ]
    assert [p.tool for p in message_parts("[tool_result Bash] # not a heading\n* x", "tool_result")] == [True]


@pytest.mark.parametrize("room", [30, 60, 90, 150, 400])
def test_fit_text_never_overflows_and_says_when_it_cut(room: float) -> None:
    for text in ("Rendering the heron notes safely in the viewer", "supercalifragilistic", "W" * 9):
        fitted = fit_text(text, room, 10)
        assert text_width(fitted, 10) <= room
        if fitted != text:
            assert fitted == "" or fitted.endswith("…")
            head = fitted.removesuffix("…")
            assert text.startswith(head)
            # Cut inside a word only when no whole word before it fills half the room.
            if " " in head and text[len(head)] not in " ":
                assert text_width(head[: head.rfind(" ")], 10) < room / 2


def test_fit_text_prefers_a_word_boundary() -> None:
    assert fit_text("Rendering the heron notes safely", 120, 10) == "Rendering the…"
    assert fit_text("short", 120, 10) == "short"
    assert fit_text("a   b\n c", 120, 10) == "a b c"
    assert fit_text("anything", 5, 10) == ""


def _session(n: int, *, branch: str | None, spans: list[tuple[int, int | None, int, str]], ideas: int) -> Any:
    return {
        "id": f"{n:08x}-0000-4000-8000-{n:012x}",
        "started_at": f"2025-10-{1 + n % 28:02d}T10:00:00Z",
        "message_count": 1000 + n,
        "git_branch": branch,
        "last_line": 400,
        "spans": [
            {"id": f"s{n}{i}", "start_line": a, "end_line": b, "depth": d, "name": name}
            for i, (a, b, d, name) in enumerate(spans)
        ],
        "ideas": [
            {"id": str(i), "intent": "todo", "line": line, "preview": "", "superseded": False}
            for i, line in enumerate(range(0, 401, 400 // (ideas - 1)))
        ],
    }


def test_timeline_labels_stay_in_their_column_and_dots_and_bars_right_of_it() -> None:
    branch = "feature/a-branch-name-much-too-long-for-the-label-column-of-the-timeline"
    name = "Rendering transcript Markdown safely in the viewer's pages, with a long topic name"
    sessions = [
        _session(
            n,
            branch=branch if n % 2 else None,
            spans=[(0, 100, 0, name), (0, 0, 1, name), (200, 202, 1, "tiny"), (399, None, 2, name)],
            ideas=12,
        )
        for n in range(40)
    ]
    drawn = projects.lanes(sessions)
    room = projects.LABEL_WIDTH - projects.LABEL_X - projects.LABEL_GAP
    bottom = -1.0
    for lane in drawn["sessions"]:
        assert lane["y"] > bottom  # lanes never overlap, however many
        bottom = lane["y"] + lane["height"]
        assert text_width(lane["sub_label"], 10) <= room
        assert text_width(lane["when_label"], 10) <= room
        assert text_width(lane["id_label"], 12, monospace=True, bold=True) <= room
        if lane["git_branch"]:
            assert lane["sub_label"].startswith(f"{lane['message_count']} msgs · feature/")
            assert lane["sub_label"].endswith("…")
        for mark in lane["marks"]:
            assert mark["x"] - projects.MARK_RADIUS >= projects.LABEL_WIDTH
            assert mark["x"] + projects.MARK_RADIUS <= projects.LANE_WIDTH
        for bar in lane["span_bars"]:
            assert bar["x"] >= projects.LABEL_WIDTH and bar["x"] + bar["w"] <= projects.LANE_WIDTH
            assert bar["w"] >= projects.SPAN_MIN_WIDTH  # the one-line and the open-ended spans too
            if bar["label"]:
                assert text_width(bar["label"], projects.SPAN_LABEL_SIZE) <= bar["w"] - 6
                assert bar["label"] == bar["name"] or bar["label"].endswith("…")
        first = lane["span_bars"][0]["label"]  # cut after a whole word, with an ellipsis
        assert first.endswith("…") and name.startswith(first[:-1]) and name[len(first) - 1] == " "
        assert drawn["height"] >= bottom


def _graph(count: int) -> dict[str, Any]:
    long = "A very long idea about Markdown rendering, label clipping and SVG viewBoxes in the viewer"
    nodes = [{"id": "1", "kind": "idea", "hop": 0, "intent": "decision", "label": long, "superseded": False}]
    for n in range(2, count + 2):
        hop = 1 if n < 10 else 2
        kind = "idea" if n % 3 else "entity"
        nodes.append({"id": str(n) if kind == "idea" else f"e{n}", "kind": kind, "hop": hop, "intent": "file",
                      "label": ("W" * 30) if n % 5 == 0 else long, "superseded": False})  # fmt: skip
    edges = [{"source": "1", "target": node["id"], "type": "mentions"} for node in nodes[1:10]]
    return {"center": "1", "nodes": nodes, "edges": edges}


@pytest.mark.parametrize("count", [1, 2, 5, 29])
def test_every_graph_label_lies_inside_the_viewbox(count: int) -> None:
    drawing = graph.layout(_graph(count))
    view = drawing["view"]
    centre = graph.SIZE / 2
    for node in drawing["nodes"]:
        bold = node["hop"] == 0
        width = text_width(node["text"], graph.CENTRE_SIZE if bold else graph.LABEL_SIZE, bold=bold)
        left = node["lx"] - {"start": 0, "end": width, "middle": width / 2}[node["anchor"]]
        assert view["x"] <= left and left + width <= view["x"] + view["w"], node
        assert view["y"] <= node["ly"] - 12 and node["ly"] + 4 <= view["y"] + view["h"], node
        if node["hop"] and node["x"] < centre - 1 and node["anchor"] != "middle":
            assert node["anchor"] == "end" and node["lx"] < node["x"]  # left half: reads leftwards
        if node["hop"] and node["x"] > centre + 1 and node["anchor"] != "middle":
            assert node["anchor"] == "start" and node["lx"] > node["x"]
    assert math.isfinite(view["w"]) and view["w"] > 0


def _span(start: int, end: int | None, depth: int = 0) -> dict[str, Any]:
    return {"id": f"s{start}-{depth}", "start_line": start, "end_line": end, "depth": depth, "name": "topic"}


def test_an_open_span_runs_to_the_next_span_at_its_depth_or_the_session_end() -> None:
    spans = [
        _span(10, None, 0),  # a parent still open around its sub-topics
        _span(12, 40, 1),
        _span(41, None, 1),  # the sub-topic the session moved to, never closed
        _span(60, 90, 1),
        _span(95, None, 0),  # the topic the session was on when it was last indexed
        _span(95, 95, 1),
    ]
    ends = [projects.drawn_end(span, spans, 300) for span in spans]
    # The parent runs past its children to the next topic at its depth; the open child to the next
    # sibling; the last open topic to the session's last line; a closed span to its own end line.
    assert ends == [94, 40, 59, 90, 300, 95]
    assert projects.drawn_end(_span(50, None), [_span(50, None)], 10) == 50  # never before its start
    assert projects.drawn_end(_span(7, 3), [], 10) == 7


def test_an_open_span_is_drawn_to_its_end_not_as_a_sliver() -> None:
    session = _session(1, branch=None, spans=[(0, 99, 0, "first"), (100, None, 0, "second")], ideas=5)
    drawn = projects.lanes([session])["sessions"][0]
    first, second = drawn["span_bars"]
    assert (first["open"], second["open"], second["drawn_end"]) == (False, True, 400)
    lane_right = projects.LANE_WIDTH - projects.MARK_RADIUS - 4
    assert second["x"] + second["w"] == pytest.approx(lane_right)  # to the session's last line
    assert second["w"] > 3 * first["w"] - 3  # three times as many lines as the closed one before it
    last_mark = max(mark["x"] for mark in drawn["marks"])
    assert second["x"] + second["w"] >= last_mark  # the topic covers the ideas said during it


def test_the_graph_in_words_reads_each_edge_from_both_ends() -> None:
    drawn = {
        "center": "1",
        "nodes": [
            {"id": "2", "kind": "idea", "hop": 1, "intent": "decision", "label": "new", "superseded": False},
            {"id": "e9", "kind": "entity", "hop": 1, "intent": "file", "label": "a.py", "superseded": False},
            {"id": "1", "kind": "idea", "hop": 0, "intent": "decision", "label": "old", "superseded": True},
            {"id": "3", "kind": "idea", "hop": 2, "intent": "question", "label": "why", "superseded": False},
        ],
        "edges": [
            {"source": "2", "target": "1", "type": "supersedes"},
            {"source": "1", "target": "e9", "type": "mentions"},
            {"source": "2", "target": "3", "type": "answers"},
            {"source": "2", "target": "gone", "type": "builds_on"},  # its far end was cut: not listed
        ],
    }
    listed = graph.listing(drawn)
    assert [n["id"] for n in listed] == ["1", "2", "e9", "3"]  # the centre, then ideas before entities
    words = {n["id"]: [(link["words"], link["other"]["id"]) for link in n["links"]] for n in listed}
    assert words == {
        "1": [("superseded by", "2"), ("mentions", "e9")],
        "2": [("supersedes", "1"), ("answers", "3")],
        "e9": [("mentioned by", "1")],
        "3": [("answered by", "2")],
    }
