"""Where URL credentials and JSON web tokens are in a text, found in one forward pass.

Each was one regex, and each regex could rescan the rest of the text from every place it started:
``_URL_CREDENTIALS``' lookahead ``(?=[^\\s@]*@)`` ran to the next space from every ``://x:`` (40 K
characters of ``"://:"`` took 1.65 s, ``"https://a:" * 20000`` 16.3 s), and the JWT
header's ``[A-Za-z0-9_-]{8,}`` ran to the end of the token-like run from every ``-eyJ`` in it. Here
every search starts where the previous search of its kind stopped, or past it (`_Next`), so each
character is looked at a bounded number of times whatever the text holds: linear by construction.

The scanners find exactly the matches ``re.finditer`` found with the old patterns (kept in the
docstrings below; ``tests/transcripts/test_redact_linear.py`` compares the two on random text), and
leave what to do with a match to `cairn.transcripts.redact`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["UrlCredential", "jwt_spans", "url_credentials"]


class _Next:
    """Where `pattern` next matches at or after a position, for positions that (nearly) only grow.

    A match at a position depends only on the text there, not on where a search started, so a search
    from `pos` that found its first match at `q` also answers every later position up to `q`: each
    stretch of text is searched once, however many positions ask about it.
    """

    __slots__ = ("_found", "_from", "_pattern", "_text", "_to")

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self._pattern = pattern
        self._text = text
        self._from, self._to = 1, 0  # the positions the last search answers: none yet
        self._found: re.Match[str] | None = None

    def at(self, pos: int) -> re.Match[str] | None:
        if not self._from <= pos <= self._to:
            self._found = self._pattern.search(self._text, pos)
            self._from = pos
            self._to = self._found.start() if self._found is not None else len(self._text)
        return self._found


#: A URL password found: (start of the `://`, start of the password, its end at the `@`, slashed form).
UrlCredential = tuple[int, int, int, bool]

# The old pattern, whose matches `url_credentials` finds:
#   (://[^\s:/@'"\[\]]*:)
#   (?:(?P<plain>[^\s/?'"\[\]]+)(?=@)
#     |(?=[^\s@]*@)(?P<slashed>[^\s?"\[\]]+?)(?=@[A-Za-z0-9.\-]+(?:[:/?#\s'"]|$)))
# Its plain form alone is linear: it stops at the next `/`, so the runs it scans from different starts
# do not overlap (group 1 ends where the password starts).
_PLAIN = re.compile(r"://([^\s:/@'\"\[\]]*+:)[^\s/?'\"\[\]]+(?=@)")
# A start for the slashed form: `://` with its user name and colon (group 1 as above), unless the text
# reaches a character that ends the slashed form within the next `_LOOK` characters without an `@`
# (then neither form can match). Bounded, so that dense starts cost at most that many steps each; a
# start it cannot judge is judged by `url_credentials`.
_LOOK = 64
_START = re.compile(
    rf"://(?=([^\s:/@'\"\[\]]*+:))(?![^\s:/@'\"\[\]]*+:[^\s?\"\[\]@]{{0,{_LOOK}}}+(?:[\s?\"\[\]]|\Z))"
)
_SLASHED_STOP = re.compile(r"[\s?\"\[\]]")
# An `@` followed by a host name and the end of the authority: where the slashed form ends.
_HOST_AT = re.compile(r"@(?=[A-Za-z0-9.\-]+(?:[:/?#\s'\"]|$))")


def url_credentials(text: str) -> Iterator[UrlCredential]:
    """Every match of the old pattern, left to right, as ``re.finditer`` found them.

    A start's plain form is the password up to the *last* ``@`` before the next ``/`` (or space,
    quote, bracket, ``?``): `_PLAIN` finds the next start where it matches. A start before that one
    may still match in the slashed form, which runs to the *first* ``@`` followed by a host name before
    the next space, ``?``, ``"`` or bracket. When a start's slashed form finds no such ``@``, no later
    start before that same stop can find one either, so no start before it is tried again: a run of
    ``://:`` or ``https://a:`` is passed over by a few searches.
    """
    plain_at = _Next(_PLAIN, text).at
    start_at = _Next(_START, text).at
    stop_at = _Next(_SLASHED_STOP, text).at
    host_at = _Next(_HOST_AT, text).at
    size = len(text)
    pos = 0
    tried = 0  # no start before this has a slashed match
    while True:
        plain = plain_at(pos)
        limit = plain.start() if plain is not None else size
        slashed: UrlCredential | None = None
        look = max(pos, tried)
        # The first start before `limit` whose slashed form matches (`find` first: most often none).
        while look < limit and text.find("://", look, limit) >= 0:
            start = start_at(look)
            if start is None or (at := start.start()) >= limit:
                break
            secret = start.end(1)
            stop = stop_at(secret)
            stop_pos = stop.start() if stop is not None else size
            host = host_at(secret + 1)
            if host is not None and host.start() < stop_pos:
                slashed = at, secret, host.start(), True
                break
            tried = _tried_until(text, at, stop_pos)
            look = max(at + 1, tried)
        if slashed is not None:
            yield slashed
            pos = slashed[2]
        elif plain is not None:
            yield plain.start(), plain.end(1), plain.end(), False
            pos = plain.end()
        else:
            return


def _tried_until(text: str, at: int, stop: int) -> int:
    """Where starts after the one at `at` may again match in the slashed form: at `stop`, the end of
    the slashed form from `at` — unless a later start's user name runs past `stop` (a `?` is allowed in
    a user name but ends the slashed form), which only the last start before `stop` can do."""
    if stop < len(text) and text[stop] == "?":
        last = text.rfind("://", at + 1, stop)
        if last > at:
            return last
    return stop


# The old pattern, whose matches `jwt_spans` finds:
#   eyJ(?<!\weyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*
# A JWT is header.payload.signature; each part is a run of base64url characters, which hold no dot. So
# each dot followed by a payload-shaped run and another dot is a candidate; its header is the run
# before that dot, from the first `eyJ` in it not preceded by a word character (with 8 characters
# after the `eyJ`); every run is scanned a bounded number of times.
_JWT_DOT = re.compile(r"\.(?=(eyJ[A-Za-z0-9_\-]{8,}+)\.)")
_JWT_RUN_BEFORE = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{11,}+\Z")  # searched up to the dot
_JWT_HEAD = re.compile(r"(?<!\w)eyJ")
_JWT_SIGNATURE = re.compile(r"[A-Za-z0-9_\-]*+")


def jwt_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every match of the old JWT pattern, left to right."""
    searched = 0  # no header run starts before this
    for dot in _JWT_DOT.finditer(text):
        at = dot.start()
        if at < searched:
            continue
        run = _JWT_RUN_BEFORE.search(text, searched, at)
        searched = at + 1
        if run is None:
            continue
        head = _JWT_HEAD.search(text, run.start(), at - 8)
        if head is None:
            continue
        end = _JWT_SIGNATURE.match(text, dot.end(1) + 1).end()  # type: ignore[union-attr]
        yield head.start(), end
        searched = end
