"""Shared by the tests of the links inside one batch (test_offline_inbatch.py, test_offline_links.py):
a one-session batch, its reading as a session view, and an idea placed in its message's turn."""

from __future__ import annotations

from cairn.agent.offline import Known
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import SessionView, read_session
from cairn.agent.schema import DEFAULT_IMPORTANCE, BatchMessage, IndexBatch, SessionUpdate

SESSION = "s-1"
FILE = "/home/dev/.claude/projects/acme/s-1.jsonl"


def batch(*messages: tuple[str, str]) -> IndexBatch:
    """A one-session batch of (role, content) messages at lines 1, 2, …"""
    return IndexBatch(
        updates=[
            SessionUpdate(
                session=SESSION,
                file_path=FILE,
                messages=[BatchMessage(line=1 + i, role=r, content=t) for i, (r, t) in enumerate(messages)],
            )
        ]
    )


def fresh() -> Known:
    """What the tools say about a session they have never seen: no span, nothing open, nothing stored."""
    return Known(spans={SESSION: None}, open_questions={SESSION: []}, open_todos={SESSION: []})


def view_of(*messages: tuple[str, str]) -> SessionView:
    return read_session(batch(*messages).updates[0])


def idea(view: SessionView, line: int, intent: str, content: str, origin: str = "prose") -> Candidate:
    """The idea found at `line`, placed in its message's turn as extraction places it."""
    message = view.by_line(line)
    assert message is not None
    importance = DEFAULT_IMPORTANCE[intent]  # type: ignore[index]
    return Candidate(
        SESSION,
        FILE,
        line,
        intent,
        content,
        0.8,
        importance,
        message.turn,
        extract(content),
        origin=origin,  # type: ignore[arg-type]
    )
