"""Passage splitting: bounds, natural boundaries, char ranges, odd inputs."""

from __future__ import annotations

from itertools import pairwise

import pytest

from cairn.transcripts.passages import HEAD_TOKENS, TARGET_TOKENS, Passage, estimate_tokens, split


def check(text: str, passages: list[Passage], target: int = TARGET_TOKENS, head: int = HEAD_TOKENS) -> None:
    """Ranges are exact, ordered and disjoint; nothing but whitespace is lost; each passage is bounded
    (the first by the head its message's vector reads, the others by the target)."""
    assert [p.seq for p in passages] == list(range(len(passages)))
    for passage in passages:
        assert text[passage.start : passage.end] == passage.text == passage.text.strip() != ""
        bound = max(head, target) if passage.seq == 0 else target
        assert estimate_tokens(passage.text) <= bound * 1.05
    for before, after in pairwise(passages):
        assert before.end <= after.start
        assert text[before.end : after.start].strip() == ""
    assert "".join(text.split()) == "".join("".join(p.text.split()) for p in passages)


def sentence(i: int) -> str:
    return f"Sentence number {i} says the cache key was wrong in module m{i}."


def test_a_text_its_vector_reads_whole_has_no_passages() -> None:
    assert split("") == []
    assert split("   \n\n  ") == []
    assert split("A short answer about the SQLite busy timeout.") == []
    head = " ".join(sentence(i) for i in range(18))
    assert TARGET_TOKENS < estimate_tokens(head) <= HEAD_TOKENS
    assert split(head) == []
    longer = head + " " + " ".join(sentence(i) for i in range(18, 28))
    first, *rest = split(longer)
    assert rest and estimate_tokens(first.text) > TARGET_TOKENS  # the first passage is the whole head


def test_the_first_passage_is_the_head_the_message_vector_reads() -> None:
    text = "\n".join(sentence(i) for i in range(40))
    passages = split(text)
    check(text, passages)
    assert estimate_tokens(passages[0].text) > TARGET_TOKENS
    assert all(estimate_tokens(p.text) <= TARGET_TOKENS * 1.05 for p in passages[1:])
    same = split(text, head_tokens=TARGET_TOKENS)  # no larger head: every passage by the target
    check(text, same, head=TARGET_TOKENS)
    assert same[0].end < passages[0].end and same[1].start < passages[1].start


def test_paragraphs_are_kept_whole_when_they_fit() -> None:
    paragraphs = [" ".join(sentence(10 * p + i) for i in range(4)) for p in range(6)]
    text = "\n\n".join(paragraphs)
    passages = split(text)
    check(text, passages)
    assert len(passages) > 1
    # Every paragraph lies whole in exactly one passage, and every passage starts at a paragraph.
    assert all(sum(paragraph in passage.text for passage in passages) == 1 for paragraph in paragraphs)
    starts = {text.index(paragraph) for paragraph in paragraphs}
    assert all(passage.start in starts for passage in passages)


def test_lines_then_sentences_then_words_split_what_is_too_long() -> None:
    lines = "\n".join(f"line {i}: " + " ".join(sentence(i * 10 + j) for j in range(2)) for i in range(30))
    by_lines = split(lines)
    check(lines, by_lines)
    assert all(p.start == 0 or lines[p.start - 1] == "\n" for p in by_lines)

    prose = " ".join(sentence(i) for i in range(60))  # one line
    by_sentences = split(prose)
    check(prose, by_sentences)
    assert len(by_sentences) > 1 and all(p.text.endswith(".") for p in by_sentences)

    words = " ".join(f"word{i}" for i in range(2000))  # no sentence ends
    by_words = split(words)
    check(words, by_words)
    assert all(
        p.text.split()[0].startswith("word") and p.text.split()[-1].startswith("word") for p in by_words
    )
    assert " ".join(p.text for p in by_words) == words


def test_a_single_huge_line_without_spaces_is_cut_hard() -> None:
    text = "deadbeef" * 2000  # 16,000 characters, no boundary at all
    passages = split(text)
    check(text, passages)
    assert len(passages) > 10
    assert "".join(p.text for p in passages) == text


def test_a_long_tool_output_is_bounded_and_a_term_deep_inside_lands_in_one_passage() -> None:
    rows = [f"drwxr-xr-x  2 dev dev 4096 Jan 1 12:{i % 60:02d} directory_{i}" for i in range(3000)]
    rows[2345] = "-rw-r--r--  1 dev dev 77 Jan 1 12:00 zanzibar_settings.toml"
    text = "\n".join(rows)
    passages = split(text)
    check(text, passages)
    holding = [p for p in passages if "zanzibar_settings.toml" in p.text]
    assert len(holding) == 1


def test_unicode_is_cut_on_character_boundaries_and_counted() -> None:
    japanese = "キャッシュのキーが間違っていました。" * 200
    passages = split(japanese)
    check(japanese, passages)
    assert len(passages) > 1
    # A CJK character is about one word piece, so passages hold far fewer of them than ASCII letters.
    assert max(len(p.text) for p in passages) < 4 * TARGET_TOKENS
    mixed = "\n".join(f"café {i} — naïve résumé, emoji 🎉 line" for i in range(400))
    check(mixed, split(mixed))


def test_the_target_is_a_parameter() -> None:
    text = "\n\n".join(" ".join(sentence(10 * p + i) for i in range(4)) for p in range(6))
    small, large = split(text, 60, head_tokens=60), split(text, 250)
    check(text, small, 60, head=60)
    check(text, large, 250)
    assert len(small) > len(large)
    with pytest.raises(ValueError):
        split(text, 0)


def test_estimate_tracks_the_tokenizer(embedding_function: object) -> None:
    tokenizer = embedding_function._ensure_loaded().tokenizer  # type: ignore[attr-defined]
    samples = [
        "We decided to keep SQLite as the source of truth and rebuild Chroma from it whenever needed.",
        "error: 082c2c4495629bd585a0a11807b4e0ede9a99753: invalid sha1 pointer in cache-tree",
        'def migrate(conn):\n    await conn.execute("PRAGMA user_version = 9")\n    return 9',
    ]
    for text in samples:
        real = len(tokenizer.encode(text).ids) - 2
        assert 0.6 < real / estimate_tokens(text) < 1.6, text
