"""A failure the agent retried and left failing is a problem the session ended on.

A failed tool call is a step of the work: the next turn reads the error and deals with it, so it is
never an open item by itself. One failure that comes back on every retry and never passes is another
thing: `npm run build` → "Build error occurred [TypeError: generate is not a function]", run four
times, then the sub-agent checked the dev server instead and reported success. A teammate taking over
needs that line. So when the same failure repeats `MIN_FAILURES` times in a batch and no later run of
the same call succeeds, its problem names the command and the failure — "`npm run build` fails: Build
error occurred [TypeError: generate is not a function]" — and has the state `given_up` (`origin` here,
`Idea.state` in the result), which keeps it open wherever it happened (`cairn.store.open_ideas`). No
statement of the batch settles it, only a later fix.
"""

from __future__ import annotations

from dataclasses import replace

from cairn.agent.offline.candidate import TOOL_FAILURE_LEAD, Candidate
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import shorten
from cairn.agent.offline.tool_calls import ToolCall, answered_calls, passing_rerun

MIN_FAILURES = 3


def _failing(call: ToolCall | None, content: str) -> str:
    """What fails, as the idea opens: "`npm run build` fails", else its problem's own lead ("Read call
    failed")."""
    if call is not None and call.command is not None:
        return f"{call.name} fails"
    lead = TOOL_FAILURE_LEAD.match(content)
    return lead[0].rstrip(": ") if lead else content.split(": ", 1)[0]


def given_up(view: SessionView, candidates: list[Candidate], cause: dict[int, str]) -> list[Candidate]:
    """`candidates` with each tool failure that repeats and never passes marked so (see the module).

    `cause` holds the failing line of each failed tool result, by its line (`failures.failure_cause`).
    """
    failed = {id(c) for c in candidates if c.origin == "tool_error" and cause.get(c.line)}
    if not failed:
        return candidates
    results = [m for m in view.messages if m.role == "tool"]
    calls = answered_calls(view)
    out: list[Candidate] = []
    for candidate in candidates:
        if id(candidate) in failed:
            detail = cause[candidate.line]
            call = calls.get(candidate.line)
            later = [m for m in results if m.line >= candidate.line]
            failures = sum(1 for m in later if m.failed and cause.get(m.line) == detail)
            passed = passing_rerun(view, calls, candidate.line) is not None
            if failures >= MIN_FAILURES and not passed:
                content = shorten(f"{_failing(call, candidate.content)}: {detail}", 230)
                candidate = replace(candidate, content=content, origin="given_up")
        out.append(candidate)
    return out
