"""A failure that a change made pass is a fix: the problem, the change and the run that passed.

Most fixes in a coding session are said by the tools, not in prose: `golangci-lint` fails with
"noctx: os/exec.Command must not be called", the agent edits the file, the same lint run passes. The
assistant may never write "the fix is…". So when a failed call the conversation took up (a problem of
the batch) is run again later in the batch (the same command, or one command of its chain:
`tool_calls.passing_rerun`) and passes, and something was changed in
between (an edit, or a command that changes things: `anchoring.change`), the last such change is
the fix, cited at its message: "Fixed `mise run lint` failing with noctx: os/exec.Command must not be
called: edited hooks.go (then it passed)". Only shell runs that do more than look count (`ls types/`
failing says where a file is not). A change already reported in prose right there is not said twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.agent.offline.anchoring import change
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import Message, SessionView
from cairn.agent.offline.text import shorten
from cairn.agent.offline.tool_calls import ToolCall, answered_calls, passing_rerun
from cairn.agent.schema import DEFAULT_IMPORTANCE


@dataclass(frozen=True)
class Pass:
    """How a failed check came to pass: the run that passed and the last change before it (None when
    nothing was changed in between: it passed on a plain rerun)."""

    call: ToolCall
    passed: int
    change: Message | None = None
    did: str | None = None

    @property
    def line(self) -> int:
        """Where the failure was settled: the change that made it pass, else the run that passed."""
        return self.passed if self.change is None else self.change.line


def made_pass(view: SessionView, calls: dict[int, ToolCall], failed: int) -> Pass | None:
    """How the check that failed at `failed` came to pass, or None when it is no check (a shell run
    that does more than look: `ls types/` failing says where a file is not) or never passed."""
    call = calls.get(failed)
    if call is None or call.command is None or call.looks:
        return None
    passed = passing_rerun(view, calls, failed)
    if passed is None:
        return None
    changes = [
        (m, did)
        for m in view.messages
        if m.role == "assistant" and failed < m.line < passed and (did := change(m)) is not None
    ]
    if not changes:
        return Pass(call, passed)
    message, did = changes[-1]
    return Pass(call, passed, message, did)


def tool_fixes(view: SessionView, candidates: list[Candidate], cause: dict[int, str]) -> list[Candidate]:
    """The fixes the batch's tool calls show (see the module), as new solution candidates."""
    problems = [c for c in candidates if c.origin == "tool_error" and cause.get(c.line)]
    if not problems:
        return []
    calls = answered_calls(view)
    said = {c.line for c in candidates if c.intent == "solution"}
    found: list[Candidate] = []
    for problem in problems:
        # Only shell runs count (a failed Read or Edit is the agent's misstep).
        fixed = made_pass(view, calls, problem.line)
        if fixed is None or fixed.change is None:
            continue
        message = fixed.change
        if any(message.line <= line <= fixed.passed for line in said):
            continue  # the assistant said the fix there already
        failing = f"Fixed {fixed.call.name} failing with {cause[problem.line]}"
        content = shorten(f"{failing}: {fixed.did} (then it passed)", 280)
        found.append(
            Candidate(
                view.session,
                view.source_file,
                message.line,
                "solution",
                content,
                0.7,
                DEFAULT_IMPORTANCE["solution"],
                message.turn,
                extract(content, view.known_files),
                origin="tool_fix",
                at=message.timestamp,
            )
        )
    return found
