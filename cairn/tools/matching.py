"""Text and vector matching the tools share: safe FTS5 queries, name keys, semantic hits, rank fusion."""

from __future__ import annotations

import asyncio
import logging
import re
import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cairn.tools.deps import ToolDeps

if TYPE_CHECKING:
    from cairn.store.vectors import VectorHit

log = logging.getLogger(__name__)

MAX_FTS_TERMS = 16
# Below this cosine similarity a semantic neighbour of a sentence is noise for MiniLM-sized models
# (unrelated sentences score about 0 to 0.15 there, paraphrases 0.5 and up).
MIN_SIMILARITY = 0.3
_WORD = re.compile(r"\w+")


# Words too common to say what a text is about. With OR-ed terms they would match nearly every row,
# and rank fusion counts a full-text rank regardless of how weak the match behind it is.
_STOPWORD_TEXT = """
    a an and are as at be but by can do for from has have how i if in into is it its of on or our should
    so that the their then there these this to was we were what when where which who why will with would
    you your
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def fts_match(text: str) -> str | None:
    """An FTS5 MATCH expression for free text that no input can turn into a syntax error.

    Every word becomes a quoted string (words never contain `"`, so nothing needs escaping) and the
    words are OR-ed: bm25 ranks rows holding more and rarer words first. Operators (`AND`, `NEAR/`,
    `*`, `^`, column filters) in the text are thereby plain words. Stopwords are left out unless
    the text has nothing else. None when the text has no word at all.
    """
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    words = [word for word in words if word not in _STOPWORDS] or words
    return " OR ".join(f'"{word}"' for word in words[:MAX_FTS_TERMS]) or None


# What a name key leaves out: case and the separators people vary in names of the same thing
# (`pydantic-ai`, `pydantic_ai`, `Pydantic AI`, `node.js`). `+` and `#` stay: `C++` and `C#` are not `C`.
_SEPARATORS = " \t\n-_./\\:'\"`(),@"
_KEY_TABLE = str.maketrans(string.ascii_uppercase, string.ascii_lowercase, _SEPARATORS)


def name_key(name: str) -> str:
    """A name's comparison key: ASCII-lowercased, separators removed (what `name_key_sql` computes)."""
    return name.translate(_KEY_TABLE)


def name_key_sql(column: str) -> str:
    """SQL computing `name_key` of `column` (SQLite's `lower` folds ASCII only, as `name_key` does)."""
    expression = f"lower({column})"
    for char in _SEPARATORS:
        expression = f"replace({expression}, char({ord(char)}), '')"
    return expression


def where(**conditions: Any) -> dict[str, Any] | None:
    """A Chroma metadata filter requiring every condition that is not None."""
    clauses = [{key: value} for key, value in conditions.items() if value is not None]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


async def semantic(
    deps: ToolDeps, kind: str, text: str, n: int, filters: dict[str, Any] | None = None
) -> list[VectorHit]:
    """The `n` closest vectors of `kind` to `text`, or none without vectors or when Chroma fails.

    A failing vector index degrades a tool to full-text matching rather than ending the agent's run;
    the failure is logged, since SQLite (the truth) still answers.
    """
    index = deps.vectors
    if index is None or not text.strip():
        return []
    try:
        return await asyncio.to_thread(index.query, kind, text, n, filters)
    except Exception:
        log.warning("semantic search over %s failed; using full-text matches only", kind, exc_info=True)
        return []


def fuse(rankings: Iterable[Sequence[int]], k: int = 60) -> list[int]:
    """Reciprocal rank fusion: ids ordered by the sum of 1/(k + rank) over the rankings they appear in.

    Rank fusion needs no comparable scores, which bm25 and cosine similarity are not; ties keep the
    order of first appearance.
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


def similar_ids(hits: Sequence[VectorHit], minimum: float) -> dict[int, float]:
    """Integer ids of the hits at least `minimum` similar, with their similarity rounded for the model."""
    found: dict[int, float] = {}
    for hit in hits:
        if hit.score >= minimum and hit.id.isdigit():
            found.setdefault(int(hit.id), round(hit.score, 2))
    return found
