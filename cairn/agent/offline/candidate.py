"""`Candidate`: one idea the offline indexer found in a session, before ids, relations and links are
decided — the unit every offline step (extract, deferred, inbatch, relating, linking) passes on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from cairn.agent.offline.cues import CHANGE, SUPERSESSION
from cairn.agent.offline.entities import Entity
from cairn.agent.offline.text import term_set
from cairn.agent.schema import Intent

TOOL_FAILURE_LEAD = re.compile(r"^[\w.:-]+ call failed: ")

Origin = Literal[
    "prose", "tool_error", "todo_write", "answer", "declined", "deferred", "given_up", "tool_fix"
]
"""Where a candidate comes from: a sentence someone said (`prose`); a failed tool call the conversation
took up (`tool_error`), or one that failed on every retry and never passed (`given_up`); an open
TodoWrite item (`todo_write`); the reply to a person's question (`answer`); an offer the person turned
down (`declined`); work the person put off (`deferred`: a question whose reply defers it, a plan they
defer); a fix the tool calls show (`tool_fix`)."""


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
    origin: Origin = "prose"
    hypothesis: bool = False
    refutation: bool = False
    labelled: bool = False  # said under a label of its intent ("**Bug:** …", "Fix:")
    at: str | None = None  # when its message was said (ISO 8601), if known

    @property
    def terms(self) -> frozenset[str]:
        """Terms of what the idea says (attached file names are evidence, not content)."""
        return idea_terms(self.content)

    @property
    def plans(self) -> bool:
        """A decision, or a plan the person put off: either says what the work is to do, so either may
        replace an earlier decision — putting a change off does not bring back what it replaced."""
        return self.intent == "decision" or self.origin == "deferred"

    @property
    def changes_plan(self) -> bool:
        """A plan that says it replaces an earlier one ("instead of", "switch to", "changing the plan"):
        the one test of a change of mind, for links inside a batch, to stored decisions, and for what is
        never a repetition."""
        return self.plans and bool(SUPERSESSION.search(self.content) or CHANGE.search(self.content))
