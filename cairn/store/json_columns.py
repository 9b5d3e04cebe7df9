"""Reading the store's JSON-array columns (keywords, grep patterns, reads) back as lists of strings.

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
