"""What SessionStart may list: the items a teammate's hand-off would carry, and nothing of the working noise.

The indexer keeps every question, problem, todo and fix it reads, which is right for search — someone
may ask weeks later what error a command gave. A hand-off to the next session is another thing: it
says what is still to do, what was chosen and what was found to work, and a wrong line there costs
more than a missing one, since the agent acts on it. So SessionStart applies rules of its own:

- **Open** is what the session left open (`cairn.search.open_items.still_open`, the rule the MCP
  `open_questions` tool follows too): raised after the session's last prompt from the person, or put
  off explicitly. Anything raised earlier was followed by more work; a person's question is answered
  by the reply that follows it ("Are you sure?" is no open item).
- A **failed tool call** is a step of the work, never an open item: the next turn deals with it.
- **Progress chatter** — "All tests pass now.", "Fixed — clean status, no errors.", "The server is
  running successfully." — is never a fix or a decision: it reports a state and names no change.
- A **topic name** is shown without the paths, file names, hosts and ids the offline indexer takes
  from the words it saw most; a name left with fewer than two words is not shown.
"""

from __future__ import annotations

import re

from cairn.search.query import STOPWORDS as _STOPWORDS
from cairn.search.terms import is_code_shaped

# A sentence that reports a state: tests pass, it works, it is fixed, no errors.
_STATE = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed)?|successful(?:ly)?|works?|working|running|fixed|complete|"
    r"done|clean|intact|no (?:\w+ )?errors?|resolved|green)\b",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:add(?:s|ed)?|remov(?:e|es|ed)|replac(?:e|es|ed)|chang(?:e|es|ed)|us(?:e|es|ed|ing)|switch(?:ed)?|"
    r"rewr(?:ite|ote)|mov(?:e|ed)|set|bump(?:ed)?|instead|because|caused?)\b",
    re.I,
)
_WORD = re.compile(r"[\w.\-/:@#]+")
CHATTER_WORDS = 16
CHATTER_CONTENT = 2
# What a state report is about, in any project: it names no change.
_GENERIC = frozenset(
    {
        *("all", "everything", "now", "still", "again", "including", "test", "tests", "suite", "unit"),
        *("integration", "build", "builds", "server", "compilation", "error", "errors", "warning"),
        *("warnings", "status", "output", "check", "checks", "fix", "lint", "type", "types"),
    }
)
# A path flattened into a name ("home-USER-projects-spotter-worktrees-spotter-gqc"), or an id.
FLATTENED_HYPHENS = 3
LONGEST_WORD = 24
_PATHISH = re.compile(r"[/\\@:]|\.\w|\w\.|_|\d{3,}|^[0-9a-f]{6,}$", re.I)


def is_chatter(content: str) -> bool:
    """Whether a fix or decision only reports a state: short, saying something passes, works or is
    done, with no code, no word of a change and at most `CHATTER_CONTENT` words beyond the state and
    what it is about (tests, the build, errors) — "Fixed the checkout test: open SQLite in WAL mode"
    says how, "All resume tests pass now." does not."""
    words = _WORD.findall(content)
    if len(words) > CHATTER_WORDS or "`" in content or any(is_code_shaped(w.strip(".,:;!?")) for w in words):
        return False
    if not _STATE.search(content) or _CHANGE.search(content):
        return False
    said = [w.lower().strip(".,:;!?-") for w in words]
    rest = [w for w in said if w and w not in _STOPWORDS and w not in _GENERIC and not _STATE.fullmatch(w)]
    return len(rest) <= CHATTER_CONTENT


def topic_name(name: str) -> str | None:
    """The topic's name without path-, file-, host- or id-shaped words; None when fewer than two
    words are left (a name of fragments says nothing)."""
    kept = [
        word
        for word in name.split()
        if not _PATHISH.search(word) and word.count("-") < FLATTENED_HYPHENS and len(word) <= LONGEST_WORD
    ]
    return " ".join(kept) if len(kept) >= 2 else None
