"""Chunking: budgets, overlap, where chunks break, long lines, and text that is not ASCII."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from cairn.files import chunking
from cairn.files.chunking import Chunk, chunk_text
from cairn.tokens import count_tokens


def _function(name: str, body_lines: int) -> str:
    body = "".join(f"    value_{i} = compute_{name}({i}, 'argument number {i}')\n" for i in range(body_lines))
    return f"def {name}(argument):\n{body}    return value_0\n"


def _module(functions: int, body_lines: int = 12) -> str:
    return "\n\n".join(_function(f"function_{n}", body_lines) for n in range(functions))


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def test_empty_and_blank_text_have_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text("\n\n   \n\t\n") == []


def test_a_small_file_is_one_chunk_with_its_exact_text() -> None:
    text = "first line\nsecond line\n"
    assert chunk_text(text) == [
        Chunk(index=0, start_line=1, end_line=2, content=text, tokens=count_tokens(text))
    ]


def test_chunks_stay_within_budget_and_cover_every_line_in_order() -> None:
    text = _module(40)
    chunks = chunk_text(text, max_tokens=300, overlap=0.15)
    assert len(chunks) > 5
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.tokens <= 300 for c in chunks)
    lines = _lines(text)
    for chunk in chunks:
        assert chunk.content == "".join(lines[chunk.start_line - 1 : chunk.end_line])
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == len(lines)
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line + 1, "no line may fall between two chunks"
        assert after.start_line > before.start_line, "every chunk must move forward"


def test_chunks_are_near_the_budget_not_tiny() -> None:
    chunks = chunk_text(_module(60), max_tokens=400)
    assert all(c.tokens >= 400 * 0.6 for c in chunks[:-1])


def test_next_chunk_repeats_about_the_overlap_share_in_whole_lines() -> None:
    text = "\n".join(f"line {i} of plain prose with several words in it" for i in range(600)) + "\n"
    chunks = chunk_text(text, max_tokens=200, overlap=0.15)
    lines = _lines(text)
    for before, after in itertools.pairwise(chunks):
        shared = "".join(lines[after.start_line - 1 : before.end_line])
        assert before.content.endswith(shared) and after.content.startswith(shared)
        assert 0.05 * before.tokens <= count_tokens(shared) <= 0.15 * before.tokens + 1


def test_zero_overlap_means_consecutive_chunks() -> None:
    chunks = chunk_text(_module(30), max_tokens=250, overlap=0.0)
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line + 1


def test_chunks_end_before_a_definition_rather_than_mid_function() -> None:
    chunks = chunk_text(_module(30, body_lines=10), max_tokens=500, overlap=0.0)
    for chunk in chunks[1:]:
        assert chunk.content.startswith(("def ", "\n")), chunk.content[:60]


def test_a_decorator_and_comment_stay_with_their_definition() -> None:
    block = (
        "# helper for {n}\n@cached\ndef helper_{n}():\n" + "    x = 'some body text for the helper'\n" * 12
    )
    text = "\n".join(block.format(n=n) for n in range(40))
    for chunk in chunk_text(text, max_tokens=300, overlap=0.0)[1:]:
        assert chunk.content.lstrip("\n").startswith("# helper for"), chunk.content[:60]


def test_a_comment_run_at_another_indentation_is_not_part_of_the_definition() -> None:
    body = "    x = 'some body text for the function'\n" * 12
    block = (
        "def f_{n}():\n"
        + body
        + "    # trailing note of f_{n}\n# about g_{n}\n@cached\ndef g_{n}():\n"
        + body
    )
    text = "\n".join(block.format(n=n) for n in range(30))
    for chunk in chunk_text(text, max_tokens=300, overlap=0.0)[1:]:
        assert chunk.content.lstrip("\n").startswith(("def f_", "# about g_")), chunk.content[:60]


@pytest.mark.parametrize("line", ["# x\n", "@dec\n", "    # x\n"])
def test_a_long_run_of_preamble_lines_is_one_run_without_a_boundary(line: str) -> None:
    """Each `# x` or `@dec` line is both a definition and the preamble of the next one: the whole file
    is one preamble run with its score on line 1, so chunks are cut at the limit, lines of equal size."""
    lines = 20_000
    text = line * lines
    per_chunk = 900 // count_tokens(line)
    expected = [
        (n, first + 1, min(first + per_chunk, lines)) for n, first in enumerate(range(0, lines, per_chunk))
    ]
    chunks = chunk_text(text, max_tokens=900, overlap=0.0)
    assert [(c.index, c.start_line, c.end_line) for c in chunks] == expected
    assert "".join(c.content for c in chunks) == text


@pytest.mark.parametrize("line", ["# x\n", "@dec\n", "    @dec\n"])
def test_finding_where_a_preamble_run_starts_looks_at_each_line_once(
    line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walking up over the run above every definition would look at each line of a run once per line
    below it in the run: quadratic, seconds for a few hundred KB of comments."""
    lines = 3_000
    looked = 0
    attached = chunking._attached

    def counting(text: str, *, indent: int) -> bool:
        nonlocal looked
        looked += 1
        assert looked <= lines, "a line above a definition is looked at more than once"
        return attached(text, indent=indent)

    monkeypatch.setattr(chunking, "_attached", counting)
    text = line * lines + "def f():\n    return 1\n"
    chunks = chunk_text(text, max_tokens=900, overlap=0.0)
    assert looked >= lines - 1
    assert "".join(c.content for c in chunks) == text


def test_without_any_boundary_the_chunk_is_cut_at_the_limit() -> None:
    text = "".join(f"    statement_{i} = call({i})\n" for i in range(400))
    chunks = chunk_text(text, max_tokens=200, overlap=0.0)
    assert all(c.tokens <= 200 for c in chunks)
    assert all(c.tokens > 180 for c in chunks[:-1])


def test_markdown_breaks_at_headings() -> None:
    # Sections of ~80 % of the budget: each window's next heading falls in its last third.
    section = "## Section {n}\n\n" + "Some prose about the topic of this section, explained at length.\n" * 25
    text = "# Title\n\n" + "\n".join(section.format(n=n) for n in range(20))
    for chunk in chunk_text(text, max_tokens=400, overlap=0.0)[1:]:
        assert chunk.content.lstrip("\n").startswith("## Section"), chunk.content[:40]


def test_a_line_longer_than_the_budget_is_split_into_pieces() -> None:
    minified = "var a=function(){return 1};" * 3000
    text = f"// header\n{minified}\n// footer\n"
    chunks = chunk_text(text, max_tokens=500, overlap=0.0)
    assert len(chunks) > 10
    assert all(c.tokens <= 500 for c in chunks)
    assert "".join(c.content for c in chunks) == text
    assert sum(c.start_line == c.end_line == 2 for c in chunks) >= 10
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 3


def test_unicode_text_is_kept_whole() -> None:
    text = "".join(f"ligne {i}: naïve café — 日本語のテキスト — emoji 🚀 ✓\n" for i in range(300))
    chunks = chunk_text(text, max_tokens=200, overlap=0.0)
    assert "".join(c.content for c in chunks) == text
    long_line = "漢字かな交じり文🚀" * 2000
    pieces = chunk_text(long_line, max_tokens=100, overlap=0.0)
    assert "".join(c.content for c in pieces) == long_line
    assert all(c.tokens <= 100 for c in pieces)


def test_text_without_a_final_newline_and_crlf_lines() -> None:
    text = "one\r\ntwo\r\nthree"
    [chunk] = chunk_text(text)
    assert (chunk.start_line, chunk.end_line, chunk.content) == (1, 3, text)


def test_special_token_text_is_counted_as_text() -> None:
    [chunk] = chunk_text("a <|endoftext|> marker\n")
    assert chunk.tokens > 1


@pytest.mark.parametrize(("max_tokens", "overlap"), [(0, 0.1), (100, 1.0), (100, -0.1)])
def test_bad_parameters_are_refused(max_tokens: int, overlap: float) -> None:
    with pytest.raises(ValueError):
        chunk_text("text", max_tokens=max_tokens, overlap=overlap)


_LINES = st.one_of(
    st.just("\n"),
    st.just("def handler(request):\n"),
    st.just("    return compute(request, value)\n"),
    st.just("## Heading\n"),
    st.just("@decorator\n"),
    st.text(max_size=80).map(lambda s: s.replace("\r", "") + "\n"),
    st.text(min_size=200, max_size=2000),
    st.just("page\x0cbreak\u2028separator\x1eend\n"),
)


@hyp_settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(_LINES, max_size=80),
    max_tokens=st.integers(min_value=5, max_value=300),
    overlap=st.floats(min_value=0, max_value=0.5),
)
def test_any_text_chunks_within_budget_in_order_and_covering_everything(
    lines: list[str], max_tokens: int, overlap: float
) -> None:
    text = "".join(lines)
    chunks = chunk_text(text, max_tokens=max_tokens, overlap=overlap)
    if not text.strip():
        assert chunks == []
        return
    assert all(c.tokens <= max_tokens and c.start_line <= c.end_line for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    if overlap == 0:
        assert "".join(c.content for c in chunks) == text
    # Line numbers are what an editor shows, whatever other separators (form feed, U+2028) the text has.
    numbered = text.split("\n")
    for chunk in chunks:
        span = "\n".join(numbered[chunk.start_line - 1 : chunk.end_line])
        assert chunk.content.removesuffix("\n") in span
    for before, after in itertools.pairwise(chunks):
        assert (after.start_line, after.end_line) >= (before.start_line, before.end_line)
        assert after.start_line <= before.end_line + 1
