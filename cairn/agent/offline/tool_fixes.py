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

from cairn.agent.offline.anchoring import change
from cairn.agent.offline.candidate import Candidate
from cairn.agent.offline.entities import extract
from cairn.agent.offline.reading import SessionView
from cairn.agent.offline.text import shorten
from cairn.agent.offline.tool_calls import answered_calls, passing_rerun
from cairn.agent.schema import DEFAULT_IMPORTANCE


def tool_fixes(view: SessionView, candidates: list[Candidate], cause: dict[int, str]) -> list[Candidate]:
    """The fixes the batch's tool calls show (see the module), as new solution candidates."""
    problems = [c for c in candidates if c.origin == "tool_error" and cause.get(c.line)]
    if not problems:
        return []
    calls = answered_calls(view)
    said = {c.line for c in candidates if c.intent == "solution"}
    found: list[Candidate] = []
    for problem in problems:
        call = calls.get(problem.line)
        # Only shell runs count (a failed Read or Edit is the agent's misstep), and no look (`ls
        # types/` failing says where a file is not).
        if call is None or call.command is None or call.looks:
            continue
        passed = passing_rerun(view, calls, problem.line)
        if passed is None:
            continue
        changes = [
            (m, did)
            for m in view.messages
            if m.role == "assistant" and problem.line < m.line < passed and (did := change(m)) is not None
        ]
        if not changes:
            continue
        message, did = changes[-1]
        if any(message.line <= line <= passed for line in said):
            continue  # the assistant said the fix there already
        failing = f"Fixed {call.name} failing with {cause[problem.line]}"
        content = shorten(f"{failing}: {did} (then it passed)", 280)
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
