"""Issue 42, snippets as text: every result reads as a person reads the session — plain text with the
matched words given as offsets, cut at word boundaries, tool calls and results shown as such, and no
markdown escape, literal `\\n` or tool JSON on any face.

Before, snippets carried the matched words in `**bold**` with the text's own `*` escaped (`\\*\\*much
more musical\\*\\*`), tool calls as their stored rendering (`[tool_use Bash] command="cd web\\nnpm …"`),
a TodoWrite as JSON, and were cut every 24 `\\w` tokens, mid-word and even in a short message."""

from __future__ import annotations

from pathlib import Path

from cairn.config import Settings
from cairn.evals.shown import has_escape, has_raw_json
from cairn.search.models import SearchPage, SearchResult
from cairn.store.store import Store
from tests.helpers.snippets import LONG, SHORT, found, synced


def by_origin(page: SearchPage) -> dict[str, SearchResult]:
    return {str(r.origin): r for r in page.results}


QUERIES = (
    "webpack tokenizer",
    "webpack build",
    "tokenizer alias",
    "tiktoken",
    "WEB-7 broken",
    "flaky orders",
)


async def test_no_snippet_or_preview_holds_markdown_escapes_or_tool_json(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)
    seen = 0
    for query in QUERIES:
        for mode in ("keyword", "hybrid"):
            for result in (await found(store, query, mode, "all")).results:
                seen += 1
                for text in (result.snippet, result.preview):
                    assert not has_escape(text), (query, text)
                    assert not has_raw_json(text), (query, text)
                    assert "**" not in text and "[tool_" not in text, (query, text)
    assert seen >= 20


async def test_tool_calls_and_results_read_as_calls_and_their_output(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)

    calls = {r.snippet for r in (await found(store, "webpack build")).results if r.origin == "tool_call"}
    assert calls == {
        "$ cd web npm run build — Build with webpack",
        "TodoWrite: fix the webpack tokenizer alias (done) · add a webpack build test (pending)",
        "Read webpack.config.js",  # a path in the project, relative to it
    }
    failing = by_origin(await found(store, "tiktoken"))["tool_result"]
    assert failing.snippet == (
        "$ cd web npm run build → exit 1: ERROR in ./src/tokenizer.ts Module not found: webpack cannot "
        "resolve 'tiktoken/lite'"
    )
    assert failing.preview == failing.snippet and failing.failed
    todo = [r for r in (await found(store, "tokenizer alias")).results if r.call == "TodoWrite"]
    assert [r.snippet for r in todo] == [
        "TodoWrite: fix the webpack tokenizer alias (done) · add a webpack build test (pending)"
    ]
    issue = by_origin(await found(store, "WEB-7 broken"))["tool_result"]
    assert (
        issue.snippet
        == "tracker.get_issue WEB-7 → id: WEB-7, title: webpack tokenizer import broken, labels: build"
    )
    [config] = [r for r in (await found(store, "module exports")).results if r.call and "Read" in r.call]
    assert config.snippet == "Read webpack.config.js → module.exports = { resolve: {} }"


async def test_prose_loses_its_markers_and_keeps_its_words(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)
    results = by_origin(await found(store, "webpack tokenizer"))
    assert (
        results["prompt"].snippet == "the webpack build fails on the tokenizer import *again*, can you look?"
    )
    assert results["prompt"].preview == results["prompt"].snippet
    replies = [r.snippet for r in (await found(store, "alias package")).results if r.origin == "reply"]
    assert "The webpack config has no alias for the tokenizer package; adding one fixes the build." in replies


async def test_highlights_point_at_the_matched_words(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)
    for query in QUERIES:
        words = [word.lower() for word in query.replace("-", " ").split()]
        for result in (await found(store, query)).results:
            marked = [result.snippet[a:b].lower() for a, b in result.highlights]
            assert marked, (query, result.snippet)
            assert all(any(m.startswith(w[:4]) for w in words) for m in marked), (query, marked)
            # Every occurrence of a query word in the snippet is marked.
            for word in words:
                shown = result.snippet.lower().count(word)
                assert sum(m.startswith(word) for m in marked) >= min(shown, 1), (word, result.snippet)


async def test_a_short_message_is_shown_whole(store: Store, settings: Settings, tmp_path: Path) -> None:
    await synced(store, settings, tmp_path)
    [result] = [r for r in (await found(store, "passed")).results if r.content == SHORT]
    assert result.snippet == SHORT
    assert [SHORT[a:b] for a, b in result.highlights] == ["passed"]


async def test_a_long_message_is_cut_at_word_boundaries_around_the_match(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)
    [result] = [r for r in (await found(store, "zanzibar")).results if r.content == LONG]
    snippet = result.snippet
    assert snippet.startswith("…") and snippet.endswith("…") and len(snippet) < 250
    words = snippet.strip("…").split()
    assert set(words) <= set(LONG.split()), "no word is cut"
    assert "zanzibar" in words and words.index("zanzibar") < len(words) // 2
    assert [snippet[a:b] for a, b in result.highlights] == ["zanzibar"]
