"""What one indexing run has sent, counted by the model layer request by request, and where it must stop.

pydantic-ai enforces `UsageLimits` between its own requests, from the usage each response reports. A
model adapter that sends several API requests inside one pydantic-ai request (the `claude-code`
model: the CLI answers a call of a tool it does not have by itself, and asks the model again) is
outside that check, and so is a request whose reply never reaches pydantic-ai because the turn failed
(its usage would be lost with the exception). So the indexer opens a `RunMeter` around each run
(`metering`), and such an adapter adds every API request to it as its tokens stream in (`current`)
and asks it before letting another request go (`RunMeter.before_request`), which raises
`SpendLimitReached` once the run has spent its cap: the per-run token limit or what is left of today's
budget, whichever is lower, or the run's request limit. A reply already under way is read to its end:
its input is paid for, and it may be the answer. The indexer records the larger of the meter's and
pydantic-ai's counts, so the ledger holds every request that was sent, failed runs included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from pydantic_ai import RunUsage
from pydantic_ai.exceptions import UsageLimitExceeded

from cairn.errors import Failure


class SpendLimitReached(Failure, UsageLimitExceeded):
    """A run was stopped by the model layer mid-run: it reached its token cap or its request cap."""


@dataclass
class RunMeter:
    """The API requests one run has sent and their tokens, against the run's caps.

    `token_cap` is the lower of the run's token limit and what is left of today's budget (None: no
    cap); `budget_left` says which of the two it is, for the message. `request_cap` bounds the API
    requests, however many pydantic-ai requests they were sent for.
    """

    token_cap: int | None = None
    request_cap: int | None = None
    budget_left: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, *, input_tokens: int = 0, output_tokens: int = 0, requests: int = 0) -> None:
        """Count what a request sent (its input, at its start) or received (its output)."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.requests += requests

    def before_request(self) -> None:
        """Raise `SpendLimitReached` when another request would pass a cap; a metering adapter asks
        before every API request it lets through, so a run ends within one request of its cap."""
        if self.token_cap is not None and self.total_tokens >= self.token_cap:
            which = (
                "what was left of today's indexing budget"
                if self.budget_left is not None and self.budget_left <= self.token_cap
                else "the run's token limit"
            )
            raise SpendLimitReached(
                f"stopped after {self.requests} request(s) and {self.total_tokens:,} tokens: "
                f"{which} ({self.token_cap:,} tokens) is spent"
            )
        if self.request_cap is not None and self.requests >= self.request_cap:
            raise SpendLimitReached(
                f"stopped after {self.requests} requests: the run's limit of {self.request_cap} is reached"
            )

    def merged(self, usage: RunUsage) -> tuple[int, int, int]:
        """(input, output, requests) to record: for each, the larger of the meter's and pydantic-ai's.

        The meter counts requests whose reply pydantic-ai never saw; pydantic-ai counts requests of
        models that do not meter (the API models), for which the meter stays at zero.
        """
        return (
            max(self.input_tokens, usage.input_tokens),
            max(self.output_tokens, usage.output_tokens),
            max(self.requests, usage.requests),
        )


_METER: ContextVar[RunMeter | None] = ContextVar("cairn_run_meter", default=None)


def current() -> RunMeter | None:
    """The meter of the run in progress in this context, if the indexer opened one."""
    return _METER.get()


@contextlib.contextmanager
def metering(meter: RunMeter) -> Iterator[RunMeter]:
    """Make `meter` the current run's for the duration of the block."""
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        with contextlib.suppress(ValueError):  # left in another context than it was entered in
            _METER.reset(token)
