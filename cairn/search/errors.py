"""Errors search reports to its caller: each message says what was wrong and what to do instead.

They are `ValueError`s so the daemon's socket answers them as refusals (`{"ok": false, ...}`) rather
than as crashes, and the MCP server turns them into tool errors the model can act on.
"""

from __future__ import annotations

from cairn.errors import Refusal


class SearchError(Refusal):
    """A request search cannot answer as asked."""


class ItemNotFoundError(SearchError):
    """No idea, topic span or message has the given id."""


class BadContinuationError(SearchError):
    """A continuation token that this cairn did not issue, or issued for another kind of request."""
