"""The hash an idea is known by across stores and re-indexes (`ideas.content_hash`)."""

from __future__ import annotations

import hashlib


def idea_hash(content: str) -> str:
    """Hash of an idea's normalised content (lowercased, whitespace collapsed), for `ideas.content_hash`."""
    normalised = " ".join(content.lower().split())
    return hashlib.blake2b(normalised.encode(), digest_size=16).hexdigest()
