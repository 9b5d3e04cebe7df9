"""A failure the agent retried and left failing is a problem the session ended on.

A failed tool call is a step of the work: the next turn reads the error and deals with it, so it is
never an open item by itself. One failure that comes back on every retry and never passes is another
thing: `npm run build` → "Build error occurred [TypeError: generate is not a function]", run four
times, then the sub-agent checked the dev server instead and reported success. A teammate taking over
needs that line. So when the same failure repeats `MIN_FAILURES` times in a batch and no later run of
the same call succeeds, its problem says so, with the command: "`npm run build` fails: Build error
occurred [TypeError: generate is not a function] (failed 4 times, never passed)". No statement of the
batch settles it, only a later fix (`cairn.search.open_items.still_open` reads the mark).
"""

from __future__ import annotations

import re
from dataclasses import replace

from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import shorten

GIVEN_UP = "given_up"
MIN_FAILURES = 3
_CALL = re.compile(r"^\[tool_use (?P<tool>[\w.:-]+)\] (?P<input>.*)$", re.M)
_COMMAND = re.compile(r'^Bash command="(?P<command>(?:[^"\\]|\\.)*)"')


def calls_of(view: SessionView) -> dict[int, str]:
    """The call each tool result answers, by the result's line: the last tool call of the nearest
    assistant message before it, as `tool input` (`_key`; one pass over the batch)."""
    calls: dict[int, str] = {}
    last: str | None = None
    for message in view.messages:
        if message.role == "assistant":
            found = list(_CALL.finditer(message.text))
            last = _key(found[-1]["tool"], found[-1]["input"]) if found else None
        elif message.role == "tool" and last is not None:
            calls[message.line] = last
    return calls


def _key(tool: str, given: str) -> str:
    """A call as compared with another: a shell command by its command alone (a new `description`
    or `timeout` runs the same thing), any other tool by all it was given."""
    call = f"{tool} {given}"
    command = _COMMAND.match(call)
    return f'Bash command="{command["command"]}"' if command else call


def call_name(call: str) -> str:
    """How a call reads in an idea: "`npm run build`" for a shell command, else "the Read call"."""
    command = _COMMAND.match(call)
    return f"`{shorten(command['command'], 80)}`" if command else f"the {call.split(' ', 1)[0]} call"


def _lead(content: str) -> str:
    """ "Read call failed" of "Read call failed: …"."""
    return content.split(": ", 1)[0]


def given_up(view: SessionView, candidates: list[Candidate], cause: dict[int, str]) -> list[Candidate]:
    """`candidates` with each tool failure that repeats and never passes marked so (see the module).

    `cause` holds the failing line of each failed tool result, by its line (`extract.failure_cause`).
    """
    failed = {id(c) for c in candidates if c.origin == "tool_error" and cause.get(c.line)}
    if not failed:
        return candidates
    results = [m for m in view.messages if m.role == "tool"]
    calls = calls_of(view)
    out: list[Candidate] = []
    for candidate in candidates:
        if id(candidate) in failed:
            detail = cause[candidate.line]
            call = calls.get(candidate.line)
            later = [m for m in results if m.line >= candidate.line]
            failures = sum(1 for m in later if m.tool_error and cause.get(m.line) == detail)
            passed = call is not None and any(not m.tool_error and calls.get(m.line) == call for m in later)
            if failures >= MIN_FAILURES and not passed:
                shell = call is not None and _COMMAND.match(call) is not None
                what = f"{call_name(call)} fails" if call and shell else _lead(candidate.content)
                content = shorten(f"{what}: {detail}", 230) + f" (failed {failures} times, never passed)"
                candidate = replace(candidate, content=content, origin=GIVEN_UP)
        out.append(candidate)
    return out
