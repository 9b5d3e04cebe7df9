"""Evidence that a new idea and a stored one are about the same thing: shared specific entities and words.

An entity is evidence in proportion to how few things it can name. A file named by its directory
and name, or a code identifier (`useTodos`, `busy_timeout`), names one thing of one project: an
*anchor* of full weight. A bare file name ("page.tsx", "CLAUDE.md") may be any project's file of
that name: half weight. Technologies, projects and people are no anchors — "React" or "TypeScript"
is in every idea of a stack and relates nothing by itself — and a technology's names (every
spelling the gazetteer knows) do not count as shared words either, on whichever side it is named.

A stored idea's entities are the ones the tools linked it to (`get_entity_ideas`: files written in
its turn, which its text may not name) and the ones its own text names. Shared terms are counted
without the anchor's own name, so "CLAUDE.md" on both sides is one piece of evidence, not three.

Time: ideas are stored in indexing order, which is not always the order they were said in (a
backfill indexes sessions by file name). `said_before` tells the two apart where both times are
known, so a relation that has a direction (supersedes, answers, builds on) never points forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from cairn.agent.offline.candidate import TOOL_FAILURE_LEAD, Candidate, idea_terms
from cairn.agent.offline.entities import entity_key, extract, is_identifier
from cairn.agent.offline.gazetteer import spellings
from cairn.agent.offline.lookups import Known, KnownIdea
from cairn.agent.offline.text import overlap, term_set

Mention = tuple[str, str]
"""An entity as (name, type): the new idea's extracted ones and the stored idea's alike."""

FULL_ANCHOR = 1.0
"""The same file (directory and name) or the same code identifier on both sides."""
BARE_FILE_ANCHOR = 0.5
"""The same file name where at least one side names no directory: likely, not certain, the same file."""


@dataclass(frozen=True)
class Evidence:
    """What a new idea and a stored idea have in common."""

    anchor: float  # the strongest shared specific entity: 0, BARE_FILE_ANCHOR or FULL_ANCHOR
    shared: frozenset[str]  # terms in common, technology names and the anchor's own name left out
    common: int  # how many terms in common, technology names left out (anchor names counted)
    similarity: float  # overlap coefficient of the two ideas' terms, technology names left out


def _file_weight(mine: str, theirs: str) -> float:
    a, b = mine.strip().lower(), theirs.strip().lower()
    if a == b:
        return FULL_ANCHOR if "/" in a else BARE_FILE_ANCHOR
    if a.endswith("/" + b) or b.endswith("/" + a):
        return BARE_FILE_ANCHOR
    return 0.0  # the same name in two directories ("app/page.tsx", "about/page.tsx") is two files


def anchor_weight(mine: Mention, theirs: Mention) -> float:
    """How strongly two entity mentions name one specific thing (see the module docstring)."""
    (name, kind), (other, other_kind) = mine, theirs
    if kind == "file" and other_kind == "file":
        return _file_weight(name, other)
    if (
        kind == other_kind == "concept"
        and is_identifier(name)
        and is_identifier(other)
        and entity_key(name) == entity_key(other)
    ):
        return FULL_ANCHOR
    return 0.0


class StoredEntities:
    """The entities of the stored ideas the tools returned, computed once per result."""

    def __init__(self, known: Known) -> None:
        self._known = known
        self._cache: dict[int, list[Mention]] = {}

    def of(self, idea: KnownIdea) -> list[Mention]:
        if idea.id not in self._cache:
            linked = [
                (entity.name, entity.type)
                for entity_id, ideas in sorted(self._known.entity_ideas.items())
                if idea.id in ideas and (entity := self._known.entities.get(entity_id)) is not None
            ]
            named = extract(TOOL_FAILURE_LEAD.sub("", idea.content))
            self._cache[idea.id] = linked + [(e.name, e.type) for e in named]
        return self._cache[idea.id]


def _technology_terms(mentions: list[Mention]) -> frozenset[str]:
    return frozenset(
        term
        for name, kind in mentions
        if kind == "technology"
        for spelled in spellings(name)
        for term in term_set(spelled)
    )


def evidence(candidate: Candidate, idea: KnownIdea, entities: StoredEntities) -> Evidence:
    """What `candidate` (new) and `idea` (stored) share."""
    theirs_all = entities.of(idea)
    anchor, names = 0.0, frozenset[str]()
    for mine in candidate.entities:
        for theirs in theirs_all:
            weight = anchor_weight((mine.name, mine.type), theirs)
            if weight > 0:
                anchor = max(anchor, weight)
                names |= term_set(mine.name) | term_set(theirs[0])
    generic = _technology_terms([(e.name, e.type) for e in candidate.entities] + theirs_all)
    new, old = candidate.terms - generic, idea_terms(idea.content) - generic
    return Evidence(anchor, (new & old) - names, len(new & old), overlap(new, old))


def _instant(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def said_before(idea: KnownIdea, candidate: Candidate) -> bool:
    """Whether the stored idea was said no later than the new one; True when either time is unknown.

    Unknown counts as earlier because it was stored earlier, which is the usual order.
    """
    stored, new = _instant(idea.at), _instant(candidate.at)
    return stored is None or new is None or stored <= new
