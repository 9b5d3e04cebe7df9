"""Stateless continuation tokens: everything the next page needs, in an opaque base64url string.

A token carries the request (query and filters), a snapshot of the store (the highest row id of each
table at the first page, so rows written while the caller pages are not counted and the total stays
stable) and the ids already returned (so no result repeats, even when usage counts reorder the rest).
Nothing is kept on the server: any process can continue any token, the daemon or not.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any

from cairn.search.errors import BadContinuationError

# A token grows with the ids already returned; past this many pages are not worth it (refine instead).
MAX_SEEN = 1000


def encode_token(kind: str, payload: dict[str, Any]) -> str:
    """An opaque token for `payload`, tagged with the request `kind` it continues."""
    raw = json.dumps({"type": kind, **payload}, separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_token(kind: str, token: str) -> dict[str, Any]:
    """The payload of a token issued for `kind`; `BadContinuationError` for anything else."""
    try:
        padded = token.strip() + "=" * (-len(token.strip()) % 4)
        data = json.loads(zlib.decompress(base64.urlsafe_b64decode(padded.encode("ascii"))))
    except (ValueError, binascii.Error, zlib.error, UnicodeError) as exc:
        raise BadContinuationError(
            "the continuation token is damaged or was not issued by cairn; repeat the search without it"
        ) from exc
    if not isinstance(data, dict) or data.get("type") != kind:
        raise BadContinuationError(
            f"that continuation token belongs to another kind of request, not {kind}; "
            "repeat the search without it"
        )
    data.pop("type")
    return data
