"""`Candidate`: one idea the offline indexer found in a session, before ids, relations and links are
decided — the unit every offline step (extract, deferred, inbatch, relating, linking) passes on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cairn.agent.offline.entities import Entity
from cairn.agent.offline.text import term_set
from cairn.agent.schema import Intent

TOOL_FAILURE_LEAD = re.compile(r"^[\w.:-]+ call failed: ")


def idea_terms(content: str) -> frozenset[str]:
    """Terms of an idea's content, without the "Bash call failed:" lead every tool-error problem shares."""
    return term_set(TOOL_FAILURE_LEAD.sub("", content))


@dataclass
class Candidate:
    """A new idea before ids, relations and links are decided."""

    session: str
    source_file: str
    line: int
    intent: Intent
    content: str
    confidence: float
    importance: float
    turn: int
    entities: list[Entity] = field(default_factory=list)
    # prose, tool_error, todo_write, answer (the reply to a person's question), declined (a refused offer)
    origin: str = "prose"
    hypothesis: bool = False
    refutation: bool = False
    supersession: bool = False
    labelled: bool = False  # said under a label of its intent ("**Bug:** …", "Fix:")
    at: str | None = None  # when its message was said (ISO 8601), if known

    @property
    def terms(self) -> frozenset[str]:
        """Terms of what the idea says (attached file names are evidence, not content)."""
        return idea_terms(self.content)
