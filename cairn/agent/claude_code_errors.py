"""What a failed Claude Code run says: one line naming what happened and what to do, as an exception.

Every failure is a pydantic-ai `ModelAPIError` subclass, so the indexer records it as a failed run
that is not the batch's fault (systemic): the pass stops, the batch's cursors stay, and the next pass
tries it again. `resume_at` (aware UTC, or None) says when trying again makes sense; the daemon pauses
until then. The CLI's own wording ("Not logged in · Please run /login", "API Error: ...") is not shown
as it is: it speaks of slash commands in a chat cairn does not have.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
)

from cairn.agent.claude_code_cli import LOGIN_HINT
from cairn.errors import Failure

RETRY_LATER = "the batch stays and is indexed on a later run"


class _ClaudeCodeFailure(Failure):
    """What every Claude Code failure carries besides pydantic-ai's fields: when to try again."""

    resume_at: datetime | None = None

    def __getstate__(self) -> dict[str, Any]:
        # pydantic-ai pickles its errors by a fixed list of fields; `resume_at` must survive too.
        return {**super().__getstate__(), "resume_at": self.resume_at}  # type: ignore[misc]


class ClaudeCodeError(_ClaudeCodeFailure, ModelAPIError):
    """Claude Code could not run (its CLI missing) or failed in a way with no better category."""


class ClaudeCodeNotLoggedIn(_ClaudeCodeFailure, ModelAuthenticationError):
    """The CLI has no login (nor an API key): nothing can index until the user logs in."""


class ClaudeCodeRateLimited(_ClaudeCodeFailure, ModelRateLimitError):
    """The plan's limit (or the API's) is reached; `resume_at` is when it resets, if the CLI said."""


class ClaudeCodeExited(_ClaudeCodeFailure, ModelConnectionError):
    """The CLI process ended (killed, crashed) before the run finished."""


class ClaudeCodeMalformedReply(_ClaudeCodeFailure, ModelServerError):
    """The API answered something the CLI could not read."""


class ClaudeCodeRejected(_ClaudeCodeFailure, ModelRequestRejectedError):
    """The API refused this batch's request (400, 404, 422): the batch's fault, not a reason to pause."""


class ClaudeCodeTooLong(_ClaudeCodeFailure, ModelContextWindowExceededError):
    """The batch's request is longer than the model's context: the batch's fault, not a reason to pause."""


class ClaudeCodeAPIError(_ClaudeCodeFailure, ModelServerError):
    """Another API failure the CLI gave up on (after its own retries)."""


def cli_not_found(model: str, detail: str) -> ClaudeCodeError:
    return ClaudeCodeError(
        model,
        f"Claude Code CLI not found: {detail}; install Claude Code (or cairn's claude-code extra, which "
        "bundles it) or set CAIRN_CLAUDE_CODE_CLI to its path",
    )


def not_started(model: str, cli: Path, detail: str) -> ClaudeCodeError:
    return ClaudeCodeError(
        model,
        f"Claude Code could not start ({' '.join(detail.split())[:200]}); check that `{cli} --version` runs, "
        "or set CAIRN_CLAUDE_CODE_CLI to a Claude Code that does",
    )


def not_logged_in(model: str) -> ClaudeCodeNotLoggedIn:
    return ClaudeCodeNotLoggedIn(model, f"Claude Code is not logged in: {LOGIN_HINT}")


def login_expired(model: str, reason: str) -> ClaudeCodeNotLoggedIn:
    """The user's login, which cairn lends the CLI, has expired (`cairn.agent.claude_code_login`)."""
    return ClaudeCodeNotLoggedIn(model, reason)


def rate_limited(model: str, resets_at: int | None) -> ClaudeCodeRateLimited:
    """`resets_at` is the Unix time the CLI reported for the limit's reset, if any.

    Without one (an API key's 429 carries none; a plan login's does) `resume_at` stays None and the
    daemon's own backoff (`pause_backoff_seconds`, doubling) decides when to try again.
    """
    if resets_at is None:
        return ClaudeCodeRateLimited(
            model,
            "Claude Code is rate limited (it did not say until when); indexing pauses and tries again later",
        )
    resume = datetime.fromtimestamp(resets_at, UTC)
    error = ClaudeCodeRateLimited(
        model, f"Claude Code is rate limited until {resume:%H:%M} UTC; indexing resumes then"
    )
    error.resume_at = resume
    return error


def exited(model: str, exit_code: int | None, said: str = "") -> ClaudeCodeExited:
    """`said` is the CLI's last line on stderr, if any."""
    if exit_code is None:
        how = "its output ended"
    elif exit_code < 0:
        try:
            how = f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            how = f"killed by signal {-exit_code}"
    else:
        how = f"exit status {exit_code}"
    if said:
        how += ": " + " ".join(said.split())[:200]
    return ClaudeCodeExited(model, f"Claude Code exited ({how}) before the run finished; {RETRY_LATER}")


def malformed(model: str) -> ClaudeCodeMalformedReply:
    return ClaudeCodeMalformedReply(model, f"Claude Code got a malformed reply from the API; {RETRY_LATER}")


def api_failed(model: str, status: int | None, detail: str) -> ClaudeCodeAPIError:
    said = " ".join(detail.split())[:200] or "no detail"
    code = f"HTTP {status}" if status is not None else "no status"
    return ClaudeCodeAPIError(model, f"Claude Code's API request failed ({code}: {said}); {RETRY_LATER}")


def rejected(model: str, status: int, detail: str) -> ClaudeCodeRejected:
    said = " ".join(detail.split())[:200] or "no detail"
    return ClaudeCodeRejected(model, f"Claude Code's API request was refused (HTTP {status}: {said})")


def too_long(model: str, detail: str) -> ClaudeCodeTooLong:
    said = " ".join(detail.split())[:200] or "prompt is too long"
    return ClaudeCodeTooLong(model, f"the batch is too long for the model ({said})")
