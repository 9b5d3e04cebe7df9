"""How an exact term is found in text: whole words or identifiers, case-sensitive only for code.

`search_content` draws candidates for a term from FTS (or a plain scan for symbols FTS does not index)
and then checks each one with the term's pattern, because stemming and tokenisation make FTS match
more than the term itself; this module decides what that exact check is.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from cairn.search import query as fts


@dataclass(frozen=True)
class ExactTerm:
    """A term as matched: the case rule, the verifying pattern and the FTS query that draws candidates."""

    text: str
    case_sensitive: bool
    pattern: re.Pattern[str]
    match: str | None  # FTS5 MATCH expression; None when the term has no word for FTS to index


_NATURAL = re.compile(r"[^\W\d_]+(?:[\s'-]+[^\W\d_]+)*")


def is_code_shaped(term: str) -> bool:
    """Whether `term` looks like code (camelCase, PascalCase, snake_case, dotted, digits, symbols).

    Code is matched case-sensitively because case carries meaning there (`useState` is not
    `usestate`); natural words and acronyms (`websocket`, `SQLite`, `JWT`) are not, since prose
    capitalises them at will.
    """
    if not _NATURAL.fullmatch(term):
        return True
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(term))


def compile_term(term: str) -> ExactTerm:
    """How one exact term is found: as a whole word or identifier, never inside a longer one.

    Natural words also match their plural (`websocket` finds `WebSockets`), as a reader would expect;
    spaces in a term match any run of whitespace.
    """
    case_sensitive = is_code_shaped(term)
    body = r"\s+".join(re.escape(part) for part in term.split())
    if not case_sensitive:
        body += "(?:e?s)?"
    left = r"(?<!\w)" if re.match(r"\w", term[0]) else ""
    right = r"(?!\w)" if re.match(r"\w", term[-1]) else ""
    pattern = re.compile(left + body + right, 0 if case_sensitive else re.IGNORECASE)
    built = fts.build(term)
    match = None if built is None else built.phrase or built.any
    return ExactTerm(term, case_sensitive, pattern, match)
