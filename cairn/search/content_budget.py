"""Fitting a page of `search_content` passages into a character budget, for callers with a context to keep.

A coding agent pays for every character a tool returns, and a page of ten whole transcript messages
can run to 25K characters. With a budget, each passage's text is cut to a share of it (so one long
passage cannot crowd out the rest), and passages are kept best first while the page's JSON stays
within it — always at least one, so a page is never empty while results remain. The passages left off
are not lost: the page simply ends earlier, and its continuation starts where it ended.
"""

from __future__ import annotations

from cairn.search.content_models import ChunkResult

#: A passage's text may take at most this share of the budget, so a page holds several.
PASSAGE_SHARE = 4
#: ...but never less than this many characters, or a passage says too little to judge.
MIN_PASSAGE_CHARS = 400
#: What ends a cut passage; `omitted_chars` says how much was left out.
CUT_MARK = " …"


def clip_passage(result: ChunkResult, max_chars: int) -> ChunkResult:
    """`result` with its text cut to `max_chars` (at a word boundary when one is near), counting the rest."""
    text = result.content
    if len(text) <= max_chars:
        return result
    cut = text.rfind(" ", max_chars - 80, max_chars)
    cut = cut if cut > 0 else max_chars
    return result.model_copy(update={"content": text[:cut] + CUT_MARK, "omitted_chars": len(text) - cut})


def fit_passages(results: list[ChunkResult], max_chars: int) -> list[ChunkResult]:
    """The leading passages of `results`, each clipped, whose JSON together stays within `max_chars`."""
    passage_chars = max(MIN_PASSAGE_CHARS, max_chars // PASSAGE_SHARE)
    kept: list[ChunkResult] = []
    used = 0
    for result in results:
        clipped = clip_passage(result, passage_chars)
        size = len(clipped.model_dump_json(exclude_none=True))
        if kept and used + size > max_chars:
            break
        kept.append(clipped)
        used += size
    return kept
