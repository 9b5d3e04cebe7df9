"""Reading the store's JSON-array columns (keywords, grep patterns, reads, tool calls and results) back as
lists of strings or objects.

The columns are checked with `json_valid` on write, but a row edited by hand (or an older writer) may
still hold something other than an array of strings: it reads as what can be used of it, never as a
crash in the middle of a listing or a search.
"""

from __future__ import annotations

import json
from typing import Any


def json_strings(value: Any) -> list[str]:
    """The strings of a stored JSON array; other items, other JSON, or unreadable text give nothing."""
    try:
        items = json.loads(value) if isinstance(value, str | bytes) else value
    except ValueError:
        return []
    return [item for item in items if isinstance(item, str)] if isinstance(items, list) else []


def json_objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a stored JSON array (a message's tool calls or results); the rest gives nothing."""
    try:
        items = json.loads(value) if isinstance(value, str | bytes) else value
    except ValueError:
        return []
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
