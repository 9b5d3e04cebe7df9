"""The hostile continuation tokens of issue 14, built the way an attacker without the key would build them.

Each face (library, CLI, daemon socket, MCP server) must answer every one of them with the one-line
"damaged token" refusal. Before tokens were signed, the unsigned forms were exactly what cairn
accepted: base64url of zlib of JSON.
"""

from __future__ import annotations

import base64
import json
import secrets
import zlib
from typing import Any

from cairn.search.paging import _VERSION, DAMAGED

#: What every face says about every token below (its first words: the CLI prefixes `error:`).
REFUSAL = DAMAGED.split(";")[0]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def unsigned(raw: bytes) -> str:
    """A token in the old unsigned format: what cairn accepted before tokens were signed."""
    return b64(zlib.compress(raw, 9))


def wrongly_signed(raw: bytes) -> str:
    """A token in the current format, signed with a key the attacker made up."""
    import hashlib
    import hmac

    body = zlib.compress(raw, 9)
    mac = hmac.new(secrets.token_bytes(32), _VERSION + body, hashlib.sha256).digest()
    return b64(_VERSION + mac + body)


def inflating(size: int) -> bytes:
    """zlib data that decompresses to `size` bytes of JSON-ish filler, built without holding it whole."""
    packer = zlib.compressobj(9)
    chunk = b"[" + b"0," * (1 << 19)
    parts = [packer.compress(chunk) for _ in range(size // len(chunk))]
    return b"".join([*parts, packer.flush()])


def payload(genuine: str | None) -> dict[str, Any]:
    """The payload inside `genuine` (a token this cairn issued), read without the key, as anyone can."""
    if genuine is None:
        return {"type": "search", "request": {"query": "x"}, "snapshot": {"idea": 1}, "seen": []}
    return dict(json.loads(zlib.decompress(_raw(genuine)[1 + 32 :])))


def _raw(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def attacks(genuine: str | None = None, *, bomb_bytes: int = 200 * 1024 * 1024) -> dict[str, str]:
    """Hostile tokens by name. `genuine` (a real token) makes the forgeries edits of it.

    `bomb_bytes` sizes the decompression bomb; its token is about 1/1000 of it in base64 text, so the
    CLI (one argument is at most 128 KiB) needs a smaller one than the socket and MCP server.
    """
    nested = b"[" * 5000
    forged = payload(genuine)
    forged["seen"] = []  # "show me again what you already showed me", or any ids the caller likes
    forged_raw = json.dumps(forged).encode()
    huge = {**forged, "snapshot": {"idea": 10**30, "span": 10**30, "message": 10**30}, "seen": ["1" * 31]}
    huge_raw = json.dumps(huge).encode()
    # The genuine token's version and signature in front of the edited payload.
    kept_mac = b64(_raw(genuine)[:33] + zlib.compress(forged_raw, 9)) if genuine else unsigned(forged_raw)
    return {
        "forged_seen_keeping_mac": kept_mac,
        "nested_unsigned": unsigned(nested),
        "nested_signed_badly": wrongly_signed(nested),
        "huge_ids_unsigned": unsigned(huge_raw),
        "huge_ids_signed_badly": wrongly_signed(huge_raw),
        "bomb": b64(inflating(bomb_bytes)),
        "forged_seen_unsigned": unsigned(forged_raw),
        "forged_seen_signed_badly": wrongly_signed(forged_raw),
        "garbage": "not a token at all ☃",
        "empty_body": b64(_VERSION + bytes(32)),
    }


#: A search over `tests.tools.memory.seed`'s ideas that has a second page (so it returns a genuine token).
QUERY = {"query": "vectors blobs SQLite", "kind": "ideas", "include_superseded": True, "limit": 1}
