"""How specifically a remembered idea answers a prompt: the rarity of the prompt's words it holds.

A search always has a best result, and a short everyday prompt ("commit this", "run the tests again")
matches some idea of any project well: its one or two words are everywhere in a coding project's
memory. The search score cannot tell that apart from a real match, because for the ranking both are
"every word of the query, found". What tells them apart is *which* words matched: a prompt that asks
about something the memory holds shares rare words with it (`getStagedFiles`, `PendingCheckpointID`,
"auto-GC"), and an everyday one shares only words every other message uses.

So an idea's *specificity* for a prompt is the sum, over the prompt's key terms (`cairn.search.query`)
that the idea or the message it was said in holds, of the term's inverse document frequency over the
stored messages, `ln((N + PRIOR) / (df + 1))`. A term found in more than `COMMON_SHARE` of them counts
nothing: it names no memory in particular (and its count stops there, which bounds the cost of the
lookup on a large store). `PRIOR` messages that hold none of the terms are assumed on top of the store:
in a young store of a few dozen messages a word seen twice is not yet known to be common, and without
the prior no idea of a first session could ever be specific enough. Recall injects an idea only when
its specificity reaches `recall_min_specificity`, a threshold `cairn eval recall` draws the curve for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from cairn.search.query import MIN_PREFIX, build
from cairn.store.db import Database

#: A term in more than this share of the stored messages names no memory in particular.
COMMON_SHARE = 0.1
#: Messages assumed on top of the store's, none holding the term (see the module docstring).
PRIOR = 200

_WORD = re.compile(r"\w+")
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    """A crude stem so "firing"/"fires" and "tests"/"test" meet; the index's own porter stemmer is not
    reachable from Python, and an exact stem matters less than not missing the plural."""
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    # "fire" meets "firing" and "fires" ("fir"), "cache" meets "caching".
    return word[:-1] if len(word) >= 4 and word.endswith("e") else word


def held_terms(terms: Sequence[str], text: str) -> list[str]:
    """The `terms` that `text` holds: as a word, or as the start of one for terms of at least
    `MIN_PREFIX` characters (the search's own prefix rule), compared by crude stems."""
    words = {w.lower() for w in _WORD.findall(text)}
    stems = {_stem(w) for w in words}
    held = []
    for term in terms:
        stem = _stem(term)
        if (
            term in words
            or stem in stems
            or (len(term) >= MIN_PREFIX and any(w.startswith(term) or w.startswith(stem) for w in words))
        ):
            held.append(term)
    return held


class TermRarity:
    """Inverse document frequencies of terms over the stored messages, looked up once per term."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._total: int | None = None
        self._idf: dict[str, float] = {}

    async def idf(self, terms: Iterable[str]) -> dict[str, float]:
        if self._total is None:
            # max(id), an index lookup, not count(*), a scan of the table on every prompt; forgotten
            # messages leave it a little high, which no idf notices.
            self._total = int(await self._db.scalar("SELECT max(id) FROM messages") or 0)
        total = self._total + PRIOR
        cap = int(total * COMMON_SHARE)
        for term in terms:
            if term in self._idf:
                continue
            match = f'"{term}"*' if len(term) >= MIN_PREFIX else f'"{term}"'
            found = await self._db.scalar(
                "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
                (match, cap + 1),
            )
            count = int(found or 0)
            self._idf[term] = 0.0 if count > cap else math.log(total / (count + 1))
        return {term: self._idf[term] for term in terms}


def prompt_terms(prompt: str) -> tuple[str, ...]:
    """The prompt's key terms, as the search looks for them."""
    query = build(prompt)
    return query.terms if query else ()


async def specificity(rarity: TermRarity, terms: Sequence[str], text: str) -> float:
    """The summed rarity of the `terms` that `text` holds (see the module docstring)."""
    held = held_terms(terms, text)
    if not held:
        return 0.0
    weights = await rarity.idf(held)
    return round(sum(weights.values()), 4)
