"""Plain-text machinery of the offline indexer: splitting messages into sentences and sentences into terms.

Everything here is deterministic and language-agnostic in the weak sense: it segments on punctuation
and line structure, so English works best. Text in scripts without spaces (e.g. Japanese) stays one
long segment and rarely matches any cue, which is the conservative outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CONTENT_CHARS = 300

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_TOOL_LINE = re.compile(r"^\[tool_(?:use|result)\b")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(.*)$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_TABLE = re.compile(r"^\s*\|")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|={3,})\s*$")
# A sentence ends at . ! ? (or their full-width forms) followed by space and something that starts one.
# Full-width sentence ends (U+3002, U+FF01, U+FF1F) split even without a following space. A question
# mark ends a sentence before a lowercase word too: people type "HS256 or RS256? only our API checks".
_SENTENCE_END = re.compile(
    r"(?<=[.!?\u3002\uff01\uff1f])\s+(?=[A-Z0-9`\"'(\[*_])|(?<=\?)\s+(?=[a-z])|(?<=[\u3002\uff01\uff1f])"
)
_ABBREVIATIONS = frozenset(
    {"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "fig.", "mr.", "dr.", "ms."}
)
_BOLD = re.compile(r"\*\*|__")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:'[a-z]{1,2})?|[0-9]+[A-Za-z]+[A-Za-z0-9]*")
_REDACTED = re.compile(r"\[REDACTED:[^\]]*\]")
_QUERY_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each either else even ever every few for from further get gets got had hadn't has hasn't have
    haven't having he her here hers herself him himself his how however i i'd i'll i'm i've if in into is
    isn't it it's its itself just let let's like make makes made may me might more most much must my
    myself need needs no nor not now of off ok okay on once one only or other ought our ours ourselves out
    over own per please quite rather really same shall she should shouldn't so some such sure than that
    that's the their theirs them themselves then there there's these they they'll they're this those
    though through thus to too under until up upon us use used uses using very via was wasn't we we'd
    we'll we're we've well were weren't what what's when where whether which while who whom whose why
    will with within without won't would wouldn't yes yet you you'd you'll you're you've your yours
    yourself yourselves able already always another anything around away back come done etc go going
    gone good great know look looks maybe new next okay perfect right see seem seems since something
    still take thing things think try want way first second last lot lots many able thank thanks hi
    hello hey please sorry now here just really actually basically simply instead successfully such
    """
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Segment:
    """One sentence (or bullet) of a message, cleaned; `index` orders segments within the message."""

    text: str
    index: int
    paragraph: int
    bullet: bool = False
    heading: str = ""


def strip_code(text: str) -> str:
    """`text` without fenced code blocks: code is evidence, not a statement worth remembering."""
    return _FENCE.sub(" ", text)


def prose_lines(text: str) -> list[str]:
    """The lines of a message that are prose: no tool call/result renderings, no code, no table rows."""
    return [
        line
        for line in strip_code(text).splitlines()
        if not _TOOL_LINE.match(line.strip()) and not _TABLE.match(line) and not _RULE.match(line)
    ]


def clean(text: str) -> str:
    """One line of prose: markdown emphasis removed, whitespace collapsed."""
    return _SPACES.sub(" ", _BOLD.sub("", text)).strip()


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph, not split after common abbreviations (e.g., i.e., vs.)."""
    pieces = [p for p in _SENTENCE_END.split(paragraph) if p and p.strip()]
    merged: list[str] = []
    for piece in pieces:
        last_word = merged[-1].rsplit(None, 1)[-1].lower() if merged else ""
        if merged and last_word in _ABBREVIATIONS:
            merged[-1] = f"{merged[-1]} {piece.strip()}"
        else:
            merged.append(piece.strip())
    return merged


def segments(text: str) -> list[Segment]:
    """The sentences and bullets of a message's prose, each tagged with the heading above it."""
    found: list[Segment] = []
    heading = ""
    paragraph = 0
    buffer: list[str] = []

    def flush() -> None:
        nonlocal paragraph
        if buffer:
            for sentence in split_sentences(clean(" ".join(buffer))):
                found.append(Segment(sentence, len(found), paragraph, heading=heading))
            buffer.clear()
            paragraph += 1

    for line in prose_lines(text):
        if not line.strip():
            flush()
            continue
        if match := _HEADING.match(line):
            flush()
            heading = clean(match.group(1)).rstrip(":")
            continue
        if _BULLET.match(line):
            flush()
            item = clean(_BULLET.sub("", line, count=1))
            for sentence in split_sentences(item):
                found.append(Segment(sentence, len(found), paragraph, bullet=True, heading=heading))
            paragraph += 1
            continue
        stripped = clean(line)
        if stripped.endswith(":") and len(stripped) <= 60 and not buffer:
            flush()
            heading = stripped.rstrip(":")
            continue
        buffer.append(line)
    flush()
    return found


def shorten(text: str, limit: int = MAX_CONTENT_CHARS) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (with an ellipsis).

    A trailing colon (a sentence that introduced a list) becomes a full stop.
    """
    flat = clean(text)
    if flat.endswith(":"):
        flat = flat[:-1].rstrip() + "."
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


def _stem(word: str) -> str:
    """A light suffix stripper, enough to meet "locked"/"locking"/"locks" at "lock"."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + keep
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def words(text: str) -> list[str]:
    """Word tokens, with identifiers split at underscores, dots and camel humps."""
    found: list[str] = []
    for token in _WORD.findall(text):
        found.extend(_CAMEL.findall(token) if any(c.isupper() for c in token[1:]) else [token])
    return found


def terms(text: str) -> list[str]:
    """Content terms of `text` in order of appearance, lower-cased, stemmed, without stopwords.

    Redaction markers ("[REDACTED:kind]") are not content and give no terms.
    """
    seen: dict[str, None] = {}
    for word in words(_REDACTED.sub(" ", text)):
        low = word.lower()
        if len(low) < 2 or low in STOPWORDS or low.isdigit():
            continue
        seen.setdefault(_stem(low), None)
    return list(seen)


def query_words(text: str, limit: int = 8) -> str:
    """Up to `limit` distinct content words of `text` as written, for a search query."""
    seen: dict[str, str] = {}
    for word in _QUERY_WORD.findall(text):
        low = word.lower()
        if len(low) >= 3 and low not in STOPWORDS and not low.isdigit():
            seen.setdefault(low, word)
    return " ".join(list(seen.values())[:limit])


def term_set(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap coefficient |a ∩ b| / min(|a|, |b|): 1.0 when the smaller set is inside the larger."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def coverage(part: frozenset[str], whole: frozenset[str]) -> float:
    """Share of `part`'s terms that also occur in `whole`."""
    return len(part & whole) / len(part) if part else 0.0
