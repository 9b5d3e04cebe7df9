"""Cut a file's text into search-sized chunks of whole lines, where the code or prose itself breaks.

`search_content` returns whole chunks to a model, so a chunk must be big enough to answer from
(about 900 tokens) and should start where a reader would: at a definition or after a blank
line, not in the middle of a function. Each chunk repeats the tail of the previous one (about 15 %)
so a passage cut by a boundary is still whole in one of the two. Lines are never split, except a
single line longer than the whole budget (minified code, data blobs), which is cut into pieces.

Files up to the size cap are chunked on every change, so tokens are counted once per line and every
decision after that is arithmetic on those counts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import accumulate

from cairn.tokens import encoding

#: A break is looked for in the last third of a window; earlier would make chunks too small.
_BREAK_FROM = 2 / 3

# Modifiers that may precede a definition keyword (`export default async function`, `pub(crate) fn`).
_MODIFIERS = (
    r"(?:(?:export|default|pub(?:\([a-z]+\))?|public|private|protected|internal|static|abstract|final|"
    r"async|unsafe|extern|declare|override|sealed|open|data|inline)\s+)*"
)
# One pattern, so each line costs one match: a definition keyword (after modifiers), a decorator or
# attribute, or a Markdown heading.
_STARTS_DEFINITION = re.compile(
    r"@[\w.]|#{1,6}\s|"
    + _MODIFIERS
    + r"(?:def|class|function\*?|fn|func|impl|interface|type|struct|enum|trait|module|mod|namespace|object|"
    r"record|macro_rules!|(?:const|let|var|val)\s+[\w$]+\s*[:=])\b"
)
#: Lines that introduce the definition below them: decorators, attributes and comments.
_PREAMBLE = ("@", "#", "//", "/*", "*", "--")


@dataclass(frozen=True)
class Chunk:
    """A run of whole lines (1-based, inclusive) of a file, and its estimated token count."""

    index: int
    start_line: int
    end_line: int
    content: str
    tokens: int


@dataclass(frozen=True)
class _Unit:
    """A line, or a piece of one too long for a chunk, with its token count."""

    line: int
    text: str
    tokens: int


def chunk_text(text: str, *, max_tokens: int = 900, overlap: float = 0.15) -> list[Chunk]:
    """`text` as chunks of about `max_tokens` tokens, each repeating ~`overlap` of the previous one's.

    Text with nothing but whitespace has no chunks: there is nothing in it to find.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0 <= overlap < 1:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    if not text.strip():
        return []
    units = _units(text, max_tokens)
    tokens = [unit.tokens for unit in units]
    # before[i] = tokens in units[:i]; a window's size is a subtraction.
    before = [0, *accumulate(tokens)]
    scores = _break_scores(units)
    chunks: list[Chunk] = []
    start = 0
    while start < len(units):
        end = _window_end(before, start, max_tokens)
        if end < len(units):
            end = _best_break(before, scores, start, end, max_tokens)
        piece = units[start:end]
        chunks.append(
            Chunk(
                index=len(chunks),
                start_line=piece[0].line,
                end_line=piece[-1].line,
                content="".join(unit.text for unit in piece),
                tokens=before[end] - before[start],
            )
        )
        if end >= len(units):
            break
        start = _overlap_start(before, start, end, overlap)
    return chunks


def _units(text: str, max_tokens: int) -> list[_Unit]:
    lines = _split_lines(text)
    # A plain loop: tiktoken's `encode_ordinary_batch` submits one thread-pool task per line, which
    # costs ten times the encoding itself for a file of short lines (benchmarks/chunking.py).
    encode = encoding().encode_ordinary
    counts = [len(encode(line)) for line in lines]
    units: list[_Unit] = []
    for number, (line, count) in enumerate(zip(lines, counts, strict=True), start=1):
        if count <= max_tokens:
            units.append(_Unit(number, line, count))
        else:
            units.extend(_split_line(number, line, count, max_tokens))
    return units


def _split_lines(text: str) -> list[str]:
    """Lines as editors number them: ended by `\n` only (`str.splitlines` also breaks at form feeds,
    `\x1c`-`\x1e` and U+2028, which would shift every line number after one)."""
    lines = text.split("\n")
    ended = [line + "\n" for line in lines[:-1]]
    return [*ended, lines[-1]] if lines[-1] else ended


def _split_line(number: int, line: str, count: int, max_tokens: int) -> list[_Unit]:
    """A line over budget, cut into pieces of at most `max_tokens` tokens each.

    Cutting by characters in proportion to the token count, then re-counting, avoids decoding token
    ids back to text (which can land inside a multi-byte character).
    """
    enc = encoding()
    pieces: list[_Unit] = []
    rest = line
    rest_tokens = count  # an estimate after the first cut; re-counted before it is trusted
    while rest:
        if rest_tokens <= max_tokens:
            rest_tokens = len(enc.encode_ordinary(rest))
            if rest_tokens <= max_tokens:
                pieces.append(_Unit(number, rest, rest_tokens))
                break
        size = max(1, math.floor(len(rest) * max_tokens / rest_tokens * 0.95))
        head_tokens = len(enc.encode_ordinary(rest[:size]))
        while head_tokens > max_tokens and size > 1:
            size = max(1, size * max_tokens // (head_tokens + 1))
            head_tokens = len(enc.encode_ordinary(rest[:size]))
        pieces.append(_Unit(number, rest[:size], head_tokens))
        rest = rest[size:]
        # Re-encoding the whole rest after every cut would be quadratic on a minified file.
        rest_tokens = max(1, rest_tokens - head_tokens)
    return pieces


def _window_end(before: list[int], start: int, max_tokens: int) -> int:
    """The largest `end` with units[start:end] within budget (at least one unit)."""
    end = start + 1
    limit = before[start] + max_tokens
    # Chunks are a few dozen lines; a linear scan beats bisect's setup for such short runs.
    while end < len(before) - 1 and before[end + 1] <= limit:
        end += 1
    return end


def _best_break(before: list[int], scores: list[int], start: int, end: int, max_tokens: int) -> int:
    """Where to end a window that could run to `end`: the best-scoring break in its last third.

    Ties go to the latest break, for fuller chunks; no break worth taking means cutting at the limit.
    """
    floor = before[start] + max_tokens * _BREAK_FROM
    best, best_score = end, 0
    cut = end
    while cut > start + 1 and before[cut] >= floor:
        if scores[cut] > best_score:
            best, best_score = cut, scores[cut]
        cut -= 1
    return best


def _overlap_start(before: list[int], start: int, end: int, overlap: float) -> int:
    """Where the next chunk starts: far enough back to repeat ~`overlap` of this one, always after `start`."""
    wanted = (before[end] - before[start]) * overlap
    next_start = end
    while next_start - 1 > start and before[end] - before[next_start - 1] <= wanted:
        next_start -= 1
    return next_start


def _break_scores(units: list[_Unit]) -> list[int]:
    """scores[i]: how good a place it is to end a chunk just before units[i] (0 = not a boundary).

    3: a top-level definition or heading starts there; 2: a blank line ends the previous chunk and
    top-level text follows; 1: any other blank line, or a nested definition. A definition's
    decorators and leading comments belong to it, so its score moves up to the first of them.
    """
    scores = [0] * (len(units) + 1)
    # run_start[i]: where the unbroken run of decorators and comments at units[i]'s indentation that
    # ends at units[i] begins (never before units[1]); set only for such lines. Found in this one
    # forward pass, so a definition finds its first decorator or comment without walking up to it: a
    # file of nothing but `# comment` or `@dec` lines (each both a definition and a preamble) would
    # otherwise cost a walk over every line above each line, quadratic in the file's length.
    run_start = [0] * len(units)
    for i in range(1, len(units)):
        unit = units[i]
        text = unit.text
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        preamble = stripped.startswith(_PREAMBLE)
        piece = unit.line == units[i - 1].line  # inside a long line's pieces
        defines = not piece and bool(stripped) and _starts_definition(stripped)
        joins = (preamble or defines) and i > 1 and _attached(units[i - 1].text, indent=indent)
        if preamble:
            run_start[i] = run_start[i - 1] if joins else i
        if piece:
            continue
        nested = indent != 0
        after_blank = not units[i - 1].text.strip()
        score = 3 if defines and not nested else 2 if after_blank and stripped and not nested else 0
        if not score and (after_blank or defines):
            score = 1
        if joins and defines:
            head = run_start[i - 1]
            scores[head] = max(scores[head], score)
            continue
        scores[i] = max(scores[i], score)
    return scores


def _attached(text: str, *, indent: int) -> bool:
    """Whether a line directly above a definition, or above one of its decorators or comments, is
    another of them (a decorator or comment at the same indentation)."""
    stripped = text.lstrip()
    return len(text) - len(stripped) == indent and stripped.startswith(_PREAMBLE)


def _starts_definition(stripped: str) -> bool:
    return _STARTS_DEFINITION.match(stripped) is not None
