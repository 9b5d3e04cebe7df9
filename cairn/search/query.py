"""Free text to FTS5: the three-tier query (exact phrase > NEAR > any term) that no input can break.

Only words (`\\w+`) of the user's text ever reach FTS5, each inside double quotes, so operators,
quotes, column filters and control characters in the text are either dropped or plain words: `NEAR(`,
`AND`, `-x`, `*` and `"` cannot make a syntax error. The tiers:

- **phrase**: every word of the query, in order (stopwords included: "use the cache" is a phrase);
- **near**: every key term within `NEAR_DISTANCE` tokens of each other, in any order;
- **any**: any key term, with prefix matching (`"auth"*` finds "authentication") for terms of at least
  `MIN_PREFIX` characters — shorter prefixes would match half the vocabulary.

Key terms leave out stopwords unless the query has nothing else, so "how do we handle retries" looks
for `handle` and `retries`, not for every row containing "we". The tokenizer splits contractions
("git's", "didn't"), so their fragments (`s`, `t`, `didn`, ...) are stopwords too: `s` as a key term
matched every row with an "it's" in it and counted as a term it shared with the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TERMS = 16
MAX_PHRASE_WORDS = 24
NEAR_DISTANCE = 10
MIN_PREFIX = 4
MAX_WORD_CHARS = 64

_WORD = re.compile(r"\w+")

_STOPWORD_TEXT = """
    a about after again all also am an and any are as at be been before being both but by can could did
    do does doing each for from had has have having how i if in into is it its just me more most my no
    nor not of on once only or other our ours out over same should so some such than that the their them
    then there these they this those through to too us very was we were what when where which while who
    whom why will with would you your
    s t d ll m re ve didn doesn isn wasn aren weren hasn haven
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
STOPWORDS = _STOPWORDS


def words(text: str) -> list[str]:
    """The query's words, lowercased and cut to `MAX_WORD_CHARS`, in order (repeats kept: they matter
    to the phrase)."""
    return [word[:MAX_WORD_CHARS].lower() for word in _WORD.findall(text)]


def _quote(word: str) -> str:
    return f'"{word}"'


def _prefix(word: str) -> str:
    return f'"{word}"*' if len(word) >= MIN_PREFIX else _quote(word)


@dataclass(frozen=True)
class FtsQuery:
    """The MATCH expressions of one query. `terms` are its key terms; `phrase` and `near` are None
    for a one-term query (the term itself is the phrase)."""

    terms: tuple[str, ...]
    phrase: str | None
    near: str | None
    any: str

    @property
    def combined(self) -> str:
        """All three tiers OR-ed: what candidates are drawn with. bm25 counts the phrase and NEAR
        groups on top of the single terms, so rows matching a higher tier already rank higher."""
        parts = [f"({part})" for part in (self.phrase, self.near) if part] + [f"({self.any})"]
        return " OR ".join(parts)

    def term_match(self, term: str) -> str:
        """The MATCH expression for one key term (prefix-matched like the `any` tier)."""
        return _prefix(term)


def build(text: str) -> FtsQuery | None:
    """The FTS5 query of free text, or None when it has no word to look for."""
    all_words = words(text)
    if not all_words:
        return None
    distinct = list(dict.fromkeys(all_words))
    terms = [word for word in distinct if word not in _STOPWORDS] or distinct
    terms = terms[:MAX_TERMS]
    phrase_words = all_words[:MAX_PHRASE_WORDS]
    if len(phrase_words) > 1:
        phrase: str | None = _quote(" ".join(phrase_words))
    else:
        phrase = None
    near = f"NEAR({' '.join(_quote(t) for t in terms)}, {NEAR_DISTANCE})" if len(terms) > 1 else None
    any_terms = " OR ".join(_prefix(term) for term in terms)
    return FtsQuery(terms=tuple(terms), phrase=phrase, near=near, any=any_terms)
