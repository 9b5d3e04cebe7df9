"""A keyword candidate's match tier, read from the marks FTS5's `highlight()` put around its matches.

FTS5 knows where a query matched while it ranks, so the candidate query asks it to mark every matched
phrase instance (`highlight()` runs in C, only for the rows returned). What is left for Python is the
marked words and the short gaps between them, never every word of a long text:

- **phrase**: a marked run as long (in FTS tokens) as the query's phrase — FTS5 marks a phrase
  instance as one run, while separate term matches are marked one by one;
- **terms**: each marked word belongs to the key term it starts with (after the light stemming the
  snippet uses); a word the porter stemmer matched that this stemming misses goes to the term it
  shares the longest prefix with;
- **near**: word positions come from counting FTS tokens in the gaps between marks; a gap longer
  than `FAR_GAP_CHARS` holds more than `NEAR_DISTANCE` words in any text worth the name;
- **some terms**: the weighted share of the key terms that occur together within the best window of
  `window` words (the `search_term_window` setting), when one is set. A long file read or JSON tool
  result holds most of a question's words somewhere by chance; an answer holds them in a sentence or
  two. Counting them anywhere let such texts outrank the answer (coding-qa-dev: a `Read` of a source
  file above the message that explained it).
"""

from __future__ import annotations

import re
from itertools import takewhile

from cairn.search.query import NEAR_DISTANCE, FtsQuery

OPEN, CLOSE = "\x02", "\x03"
PHRASE, NEAR, ALL_TERMS = 1.0, 0.85, 0.7
FAR_GAP_CHARS = 40 * NEAR_DISTANCE

# What FTS5's unicode61 tokenizer counts as a token: runs of letters and digits (`_` separates).
_FTS_TOKEN = re.compile(r"[^\W_]+")
SUFFIXES = ("ing", "ed", "es", "s")


def stem(word: str) -> str:
    """A word's comparison form: lowercased, a plural or -ed/-ing ending dropped (as porter would)."""
    lowered = word.lower()
    for suffix in SUFFIXES:
        if lowered.endswith(suffix) and len(lowered) - len(suffix) >= 3:
            return lowered[: -len(suffix)]
    return lowered


class Tiers:
    """The tier strength of marked texts for one query."""

    def __init__(self, query: FtsQuery, weights: list[float] | None = None, window: int = 0) -> None:
        self.terms = [stem(term) for term in query.terms]
        self.weights = weights if weights and len(weights) == len(self.terms) else [1.0] * len(self.terms)
        self._total = sum(self.weights) or 1.0
        self.single = len(query.terms) == 1 and query.phrase is None
        self.phrase_tokens = len(_FTS_TOKEN.findall(query.phrase)) if query.phrase is not None else 0
        self.window = window
        self._terms_of: dict[str, int] = {}

    def _term(self, word: str) -> int:
        """The key term a marked word belongs to (cached: the same words come back in every text)."""
        found = self._terms_of.get(word)
        if found is None:
            stemmed = stem(word)
            found = next(
                (
                    index
                    for index, term in enumerate(self.terms)
                    if stemmed == term or (len(term) >= 3 and stemmed.startswith(term))
                ),
                None,
            )
            if found is None:
                shared = [_shared_prefix(stemmed, term) for term in self.terms]
                found = shared.index(max(shared))
            self._terms_of[word] = found
        return found

    def strength(self, marked: str) -> float:
        """phrase 1.0, all terms near 0.85, all terms 0.7, else 0.7 x the weighted share of terms matched."""
        pieces = marked.split(OPEN)
        if len(pieces) == 1:
            return 0.0
        runs: list[str] = []
        gaps: list[str] = []
        for piece in pieces[1:]:
            run, _, gap = piece.partition(CLOSE)
            runs.append(run)
            gaps.append(gap)
        if self.single:
            term = self.terms[0]
            return PHRASE if any(stem(run) == term for run in runs) else ALL_TERMS
        if self.phrase_tokens > 1 and any(self._is_phrase(run) for run in runs):
            return PHRASE
        terms = [self._term(run) for run in runs]
        covered = set(terms)
        if len(covered) < len(self.terms):
            if self.window:
                return ALL_TERMS * self._window_share(terms, gaps)
            return ALL_TERMS * sum(self.weights[t] for t in covered) / self._total
        positions: list[tuple[int, int]] = []
        position = 0
        for term, gap in zip(terms, gaps, strict=True):
            positions.append((position, term))
            position += 1
            position += len(_FTS_TOKEN.findall(gap)) if len(gap) <= FAR_GAP_CHARS else NEAR_DISTANCE + 1
        return NEAR if near(positions, len(self.terms)) else ALL_TERMS

    def _is_phrase(self, run: str) -> bool:
        """Whether a marked run holds as many FTS tokens as the phrase. n tokens take at least
        2n - 1 characters, so most runs (one marked word) are told apart without tokenising them."""
        return len(run) >= 2 * self.phrase_tokens - 1 and len(_FTS_TOKEN.findall(run)) >= self.phrase_tokens

    def _window_share(self, terms: list[int], gaps: list[str]) -> float:
        """The largest weighted share of key terms that some `window`-word stretch holds. Gaps are
        counted in FTS tokens; one longer than 8 characters a word is past the window whatever it holds."""
        longest = 8 * self.window
        best, left, position = 0.0, 0, 0
        positions: list[int] = []
        counts: dict[int, int] = {}
        share = 0.0
        for term, gap in zip(terms, gaps, strict=True):
            positions.append(position)
            changed = term not in counts
            counts[term] = counts.get(term, 0) + 1
            while position - positions[left] > self.window:
                dropped = terms[left]
                counts[dropped] -= 1
                if not counts[dropped]:
                    del counts[dropped]
                    changed = True
                left += 1
            # Summed afresh (in the window's order, so the float is the same) only when its terms change.
            if changed:
                share = sum(self.weights[t] for t in counts)
            best = max(best, share)
            position += 1 + (len(_FTS_TOKEN.findall(gap)) if len(gap) <= longest else self.window)
        return best / self._total


def _shared_prefix(a: str, b: str) -> int:
    return sum(1 for _ in takewhile(lambda pair: pair[0] == pair[1], zip(a, b, strict=False)))


def near(positions: list[tuple[int, int]], n_terms: int) -> bool:
    """Whether one window holds every term with at most NEAR_DISTANCE other tokens between them."""
    counts: dict[int, int] = {}
    left = 0
    for position, term in positions:
        counts[term] = counts.get(term, 0) + 1
        while len(counts) == n_terms:  # shrink the window from the left while it holds every term
            first, first_term = positions[left]
            if position - first - (n_terms - 1) <= NEAR_DISTANCE:
                return True
            counts[first_term] -= 1
            if not counts[first_term]:
                del counts[first_term]
            left += 1
    return False
