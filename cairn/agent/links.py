"""Links inside one result: what an idea reference resolves to, and which supersedes would loop.

A result names an idea by a stored id or by the `key` one of its own new ideas carries
(`cairn.agent.schema.IdeaRef`). New ideas have no id until the executor inserts them, so the check
resolves a key to the idea's place in the accepted list (`Target.new`) and the writer maps places
to ids after inserting every idea: ideas first, then the links that name them, in one transaction.

Decisions:

- **A key names one idea.** A key given to several ideas names none of them: each of those ideas
  is kept without it (and reported under `ideas.key`), and a reference to the key is rejected as
  ambiguous, since guessing which one was meant could answer the wrong question.
- **A key of a rejected idea** resolves nowhere, with the idea's own rejection as the reason —
  except a duplicate: an idea already stored resolves to the stored copy, an idea repeated in the
  result to the copy that was kept, because the link is as true of the copy as of the repeat.
- **Supersedes never loops.** A supersedes between two new ideas that would close a cycle (A
  supersedes B supersedes A) is rejected; which of them is current would be undecidable. Stored
  ideas cannot close a cycle with new ones: relations only start at new ideas.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    """An idea a reference resolved to: stored (`stored`, its id) or new (`new`, its index in the
    result's accepted ideas)."""

    stored: int | None = None
    new: int | None = None

    @classmethod
    def of_stored(cls, idea_id: int) -> Target:
        return cls(stored=idea_id)

    @classmethod
    def of_new(cls, index: int) -> Target:
        return cls(new=index)


@dataclass
class KeyTable:
    """What each key of a result resolves to, or why it resolves to nothing."""

    targets: dict[str, Target] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def resolve(self, key: str) -> tuple[Target | None, str]:
        """The key's target, or None and why (unknown, ambiguous, or its idea was rejected)."""
        if key in self.targets:
            return self.targets[key], ""
        return None, self.reasons.get(key, f"no idea of this result has key {key!r}")

    @classmethod
    def build(
        cls,
        lines: dict[str, list[int]],
        accepted: dict[int, Target],
        rejected: dict[int, str],
        keys: list[str | None],
    ) -> KeyTable:
        """Keys of the result's ideas (`keys`, by position in the result) resolved through what the
        check did with each idea: `accepted` (position -> target) or `rejected` (position -> reason).
        `lines` are the source lines each key was given at, for the ambiguity message."""
        table = cls()
        for position, key in enumerate(keys):
            if key is None:
                continue
            if len(lines[key]) > 1:
                where = ", ".join(str(line) for line in lines[key])
                table.reasons[key] = f"key {key!r} is given to several ideas of this result (lines {where})"
            elif position in accepted:
                table.targets[key] = accepted[position]
            else:
                why = rejected.get(position, "")
                table.reasons[key] = f"key {key!r} names an idea that was rejected: {why}"
        return table


class SupersedesGraph:
    """Supersedes edges between new ideas accepted so far; refuses an edge that closes a cycle."""

    def __init__(self) -> None:
        self._edges: dict[int, set[int]] = {}

    def _reaches(self, start: int, goal: int) -> bool:
        seen: set[int] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(self._edges.get(node, ()))
        return False

    def would_loop(self, starts: Iterable[int], target: int) -> bool:
        """Whether `start supersedes target` for any start closes a cycle (target already reaches it)."""
        return any(self._reaches(target, start) for start in starts)

    def add(self, starts: Iterable[int], target: int) -> None:
        for start in starts:
            self._edges.setdefault(start, set()).add(target)
