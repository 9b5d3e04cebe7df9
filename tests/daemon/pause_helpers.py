"""A fake Messages API that refuses every request until a test heals it, for the daemon's pause tests."""

from __future__ import annotations

import threading
from typing import Any

from cairn.agent.schema import BATCH_OPEN, CONTEXT_ROLE, extract_batch
from tests.agent.fake_anthropic import FakeAnthropic, Reply, idea_per_update

ERRORS = {
    401: ("authentication_error", "invalid x-api-key"),
    429: ("rate_limit_error", "rate limited: try again later"),
}


class HealingAnthropic(FakeAnthropic):
    """Answers `failing` (an HTTP status) to everything until the test sets it to None; then one idea per
    session update, and remembers which (file, line) each answered batch held. `tool_prefix` names the
    result tool as a client expects it (the Claude Code CLI's `mcp__cairn__`); a subclass may fail in
    other ways than a status (`refusal`)."""

    def __init__(self, failing: int | str | None, tool_prefix: str = "") -> None:
        super().__init__(tool_prefix=tool_prefix)
        self.failing: int | str | None = failing
        self.refused = 0
        self.answered: list[tuple[str, int]] = []
        self._state = threading.Lock()

    def refusal(self, failing: int | str) -> Reply:
        """The reply to a request while failing: the API error of the status `failing`."""
        assert isinstance(failing, int)
        kind, message = ERRORS[failing]
        return Reply(failing, {"type": "error", "error": {"type": kind, "message": message}})

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._state:
            failing = self.failing
            if failing is not None:
                self.refused += 1
        if failing is not None:
            return self.refusal(failing)
        prompt = next(
            block["text"] for block in self.blocks(body, "text") if BATCH_OPEN in block.get("text", "")
        )
        batch = extract_batch(prompt)
        with self._state:
            self.answered += [
                (update.file_path, message.line)
                for update in batch.updates
                for message in update.messages
                if message.role != CONTEXT_ROLE
            ]
        ideas = idea_per_update(
            batch, lambda update: f"The daemon indexed {update.session} from line {update.messages[0].line}"
        )
        return Reply(200, self.tool_message("final_result", {"ideas": ideas}))
