"""A file's `document_keywords`: the handful of names that say what else is in the file.

`search_content` returns single chunks; the keywords travel with each one so the reader can tell
whether the rest of the file is worth opening. What a file *defines* says that best (its classes,
functions, exported constants, Markdown headings), so definitions weigh most; frequent identifiers
and words fill the rest, and the file's own stem counts when it is a real name (`LoginButton`, not
`index`). No model is involved: this runs on every indexed file and must be cheap and deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

# A definition's name, after the keyword that introduces it. Group 1 is the name.
_DEFINED = re.compile(
    r"^[ \t]*(?:(?:export|default|pub(?:\([a-z]+\))?|public|private|protected|internal|static|abstract|final|"
    r"async|declare|sealed|open|data)\s+)*"
    r"(?:def|class|function\*?|fn|func(?:\s*\([^)]*\))?|interface|type|struct|enum|trait|impl(?:<[^>]*>)?|"
    r"module|namespace|object|record|const|let|var|val)\s+([A-Za-z_$][\w$]*)",
    re.MULTILINE,
)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_$][\w$]{3,}")

#: Longest keyword kept: each one rides along with every search_content result from its file.
MAX_KEYWORD_CHARS = 64
#: What one definition adds to its name's count of occurrences.
_DEFINITION_WEIGHT = 10
#: Longest heading kept as a phrase; longer ones are sentences, not keywords.
_HEADING_MAX_WORDS = 6

_STEMS_WITHOUT_MEANING = frozenset(
    {"index", "main", "__init__", "__main__", "init", "mod", "lib", "utils", "util", "helpers", "common",
     "readme", "default", "app", "test", "tests", "setup", "conftest", "package", "makefile", "dockerfile"}
)  # fmt: skip

# English function words and the keywords of common languages: frequent everywhere, telling nothing.
_STOPWORD_TEXT = """
    the and for are but not you all any can had her was one our out has have him his how its may new now
    old see two way who did get let put say she too use that with this from they will would there their
    what about which when make like time just know take into year your some could them than then look only
    come over think also back after work first well even want because these give most been were does done
    should must shall here where while why yes each other such more very same both few many much own
    def class return import from self cls none true false null undefined function const var let async await
    elif else try except finally raise with pass yield lambda global nonlocal assert del print
    public private protected static void int str bool float string number boolean object type interface
    export default extends implements new this super package struct enum impl trait pub mut match
    func fmt err nil println fn mod crate use break continue switch case throw throws catch typeof instanceof
    args kwargs param params value values result results data item items list dict get set len range
    todo fixme note redacted http https www com org
    """
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def document_keywords(rel_path: str, text: str, limit: int = 7) -> list[str]:
    """Up to `limit` key phrases of the file at `rel_path` with content `text`, most telling first.

    Distinct case-insensitively (the first spelling seen wins) and deterministic: ties go to the
    phrase that appears first in the file.
    """
    if limit < 1:
        return []
    scores: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    defined: set[str] = set()

    def add(phrase: str, score: int, position: int, *, definition: bool = False) -> None:
        if len(phrase) > MAX_KEYWORD_CHARS:  # a minified blob or a data run is no key phrase
            return
        key = phrase.lower()
        if definition:
            defined.add(key)
        spelling.setdefault(key, phrase)
        first_seen[key] = min(first_seen.get(key, position), position)
        scores[key] += score

    for match in _DEFINED.finditer(text):
        name = match.group(1)
        if len(name) >= 3 and name.lower() not in _STOPWORDS and not name.startswith("_"):
            nested = match.group(0)[:1] in (" ", "\t")  # a method counts less than a module-level name
            add(
                name,
                _DEFINITION_WEIGHT // 2 if nested else _DEFINITION_WEIGHT,
                match.start(1),
                definition=True,
            )
    for match in _HEADING.finditer(text):
        heading = " ".join(match.group(1).split())
        if heading and len(heading.split()) <= _HEADING_MAX_WORDS:
            add(heading, _DEFINITION_WEIGHT, match.start(1), definition=True)
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word.lower() not in _STOPWORDS and not word.startswith("__"):
            add(word, 1, match.start())
    stem = _stem(rel_path)
    if stem:
        # The file's name is what people search by: it leads, whatever the counts say.
        top = max(scores.values(), default=0)
        add(stem, max(top - scores[stem.lower()], _DEFINITION_WEIGHT), -1, definition=True)
    # Everything the file defines outranks every word it merely uses; counts order each tier.
    ranked = sorted(scores, key=lambda key: (key not in defined, -scores[key], first_seen[key], key))
    return [spelling[key] for key in ranked[:limit]]


def _stem(rel_path: str) -> str | None:
    """The file name without extensions, when it names something (not `index.ts` or `__init__.py`)."""
    name = PurePosixPath(rel_path).name
    stem = name.split(".", 1)[0] if not name.startswith(".") else name.lstrip(".").split(".", 1)[0]
    if len(stem) < 3 or stem.lower() in _STEMS_WITHOUT_MEANING or stem.isdigit():
        return None
    return stem
