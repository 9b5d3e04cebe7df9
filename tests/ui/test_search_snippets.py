"""Issue 42 in the viewer: the search page labels each result with its kind (a failed tool result as
`tool result ✗`, never `msg:user`) and shows the snippet as escaped plain text with the matched words in
<mark> — the rest of the viewer keeps rendering Markdown."""

from __future__ import annotations

import re
from pathlib import Path

from cairn.config import Settings
from cairn.store.store import Store
from cairn.ui.viewer import _environment, marked
from cairn.ui.views.search import KINDS, MODES, SCORE_PARTS
from tests.helpers.snippets import found, synced

FORM = {"q": "webpack tokenizer", "mode": "hybrid", "kind": "all", "project": "", "session": "",
        "intents": [], "since": "", "until": "", "superseded": False, "min_score": "", "limit": "20",
        "page_token": ""}  # fmt: skip


async def test_the_search_page_labels_kinds_and_marks_matched_words(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)
    page = (await found(store, "webpack tokenizer")).model_dump(mode="json")
    html = (
        _environment()
        .get_template("search.html")
        .render(
            request=None,
            token="t",
            forgets=[],
            form=FORM,
            page=page,
            modes=MODES,
            kinds=KINDS,
            score_parts=SCORE_PARTS,
        )
    )

    tags = re.findall(r'<span class="tag ([^"]*)">([^<]*)</span>', html)
    assert ("intent-message failed", "tool result ✗") in tags
    assert {"prompt", "reply", "tool call"} <= {label for _, label in tags}
    assert "msg:" not in html
    snippets = re.findall(r'<div class="snippet">(.*?)</div>', html, re.S)
    assert len(snippets) == len(page["results"])
    assert all("<mark>" in s and "**" not in s and "\\*" not in s for s in snippets)
    assert "$ cd web npm run build → exit 1: ERROR in ./src/<mark>tokenizer</mark>.ts" in html
    assert {m.lower() for m in re.findall(r"<mark>(.*?)</mark>", html)} == {"webpack", "tokenizer"}


def test_a_snippet_is_escaped_text_with_marks_at_its_offsets() -> None:
    shown = marked("<b>x</b> & **not bold** webpack", [[24, 31]])
    assert str(shown) == "&lt;b&gt;x&lt;/b&gt; &amp; **not bold** <mark>webpack</mark>"
    assert str(marked("a < b", [[4, 9], [4, 5]])) == "a &lt; <mark>b</mark>"  # overlapping or past the end
