"""Stateless continuation tokens: everything the next page needs, in an opaque, signed base64url string.

A token carries the request (query and filters), a snapshot of the store (the highest row id of each
table at the first page, so rows written while the caller pages are not counted and the total stays
stable) and the ids already returned (so no result repeats, even when usage counts reorder the rest).
Nothing is kept on the server: any process on the same `CAIRN_HOME` can continue any token, the
daemon or not.

Tokens come back from outside — a shell, an MCP client, a model that may have read a hostile
transcript — so one is never trusted as it arrives. Decoding checks, in this order and each before
the next step spends anything on it:

1. its length (`MAX_TOKEN_CHARS`) and alphabet;
2. its HMAC-SHA256, keyed by `token.key` in `CAIRN_HOME` (32 random bytes, 0600): a token cairn did
   not issue — a guessed one, an edited "seen" list, one from another store — stops here, before
   zlib or JSON see a byte of it;
3. its decompressed size, bounded *while* decompressing (`MAX_PAYLOAD_BYTES`), so even a token signed
   with a leaked key cannot inflate 200 KB into 200 MB;
4. its JSON (no NaN/Infinity; nesting too deep for the parser is refused, not a `RecursionError`);
5. its schema: each kind's fields with their types, integers within SQLite's signed 64-bit range,
   ids in their known forms, at most `MAX_SEEN` of them.

Every failure is the same one-line `BadContinuationError` (a `ValueError`, so the socket answers it as
a refusal and the MCP server as a tool error); what exactly was wrong is not the caller's business.

When `token.key` is missing and cannot be created (a read-only `CAIRN_HOME`), tokens are signed with a
key held in memory for this process and `CAIRN_HOME`: the MCP server and the daemon, which live long,
page normally; a token printed by one `cairn search` cannot be continued by the next command. That is
the safe failure — accepting unsigned tokens instead would bring back every attack above.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import threading
import zlib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError

from cairn.search.errors import BadContinuationError, SearchError

log = logging.getLogger(__name__)

# A token grows with the ids already returned; past this many pages are not worth it (refine instead).
MAX_SEEN = 1000
#: The key file in CAIRN_HOME. Deleting it only invalidates the tokens issued so far.
KEY_FILE = "token.key"
KEY_BYTES = 32
#: Longest token accepted, checked before anything else. A full token (1,000 seen ids, a 10,000-character
#: query of incompressible text) stays under half of it; 64 K also fits in one command-line argument.
MAX_TOKEN_CHARS = 64 * 1024
#: Most JSON a token may decompress to; decompression stops one byte past it.
MAX_PAYLOAD_BYTES = 512 * 1024
#: Format byte leading every token; a token from an older cairn (unsigned) fails its check.
_VERSION = b"\x01"
_MAC_BYTES = hashlib.sha256().digest_size
_ALPHABET = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_INT64_MAX = 2**63 - 1

DAMAGED = "the continuation token is damaged or was not issued by cairn; repeat the search without it"


# Key


_process_keys: dict[Path, bytes] = {}
_process_keys_lock = threading.Lock()


def token_key(home: Path) -> bytes:
    """The key that signs this store's tokens: `home/token.key`, created on first use.

    Created 0600 under a temporary name and hard-linked into place, so two processes racing to create
    it agree on one key: the link of the loser fails with EEXIST and it reads the winner's. What to do
    is decided from *why* the key could not be read: a missing file is created, never replaced (a
    replace would overwrite the key another process has just linked and handed out); a key file of the
    wrong size, not a regular file, or readable by others is replaced, since a key others can read is no
    secret. When the file can be neither read nor created, a key for this process only (see the module
    docstring).
    """
    home = Path(home)
    path = home / KEY_FILE
    try:
        for _ in range(_CREATE_ATTEMPTS):
            found, key = _read_key(path)
            if key is not None:
                return key
            created = _create_key(path, replace=found)
            if created is not None:
                return created
        raise OSError(f"{path} keeps appearing and vanishing; cannot settle on one key")
    except OSError as exc:
        with _process_keys_lock:
            if home not in _process_keys:
                log.warning(
                    "cannot keep a continuation-token key in %s (%s); tokens from this process are "
                    "signed with a key only it knows",
                    home,
                    exc.strerror or exc,
                )
                _process_keys[home] = secrets.token_bytes(KEY_BYTES)
            return _process_keys[home]


#: Rounds of read-then-create before giving up: each lost race re-reads the winner's key, so a second
#: round is only needed when the winner's file was deleted between its link and our read.
_CREATE_ATTEMPTS = 3


def _read_key(path: Path) -> tuple[bool, bytes | None]:
    """(whether something is at `path`, the key in it); the key is None when there is none or it cannot
    be trusted (and, the first being true, should be replaced)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return False, None
    except OSError as exc:
        if path.is_symlink():  # O_NOFOLLOW refused a symlink: never read a key through one
            return True, None
        raise exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            return True, None
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    return True, data if len(data) == KEY_BYTES else None


def _create_key(path: Path, *, replace: bool) -> bytes | None:
    """A new key written to `path`: replacing what is there when `replace`, else only if nothing is (None
    when another process linked its key first: the caller reads that one)."""
    key = secrets.token_bytes(KEY_BYTES)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(temp, path)
            return key
        try:
            os.link(temp, path)
        except FileExistsError:  # another process created it first: its key is the key
            return None
        except OSError:  # a file system without hard links: last writer wins, which is still one key
            os.replace(temp, path)
        return key
    finally:
        temp.unlink(missing_ok=True)


# Schemas


RowId = Annotated[StrictInt, Field(ge=0, le=_INT64_MAX)]
_SnapshotKey = Annotated[StrictStr, Field(pattern=r"^[a-z_]{1,32}$")]
Snapshot = Annotated[dict[_SnapshotKey, RowId], Field(max_length=16)]
ItemId = Annotated[StrictStr, Field(pattern=r"^[a-z]?[0-9]{1,19}$")]


class _Token(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _SearchToken(_Token):
    """`cairn.search.hybrid`'s token; `request` is validated there, as a `SearchRequest`."""

    type: Literal["search"]
    request: dict[StrictStr, Any]
    snapshot: Snapshot
    seen: Annotated[list[ItemId], Field(max_length=MAX_SEEN)]


class _ContentToken(_Token):
    """`cairn.search.content`'s token."""

    type: Literal["search_content"]
    concepts: list[StrictStr]
    terms: list[StrictStr]
    min_score: Annotated[StrictFloat | StrictInt, Field(ge=0, le=1)]
    project: StrictStr | None
    session: StrictStr | None
    snapshot: Snapshot
    offset: RowId
    total: RowId


#: The payload each kind of token must have. A kind without one only gets checks 1-4.
SCHEMAS: dict[str, type[_Token]] = {"search": _SearchToken, "search_content": _ContentToken}


# Tokens


def encode_token(kind: str, payload: dict[str, Any], home: Path) -> str:
    """An opaque token for `payload`, tagged with the request `kind` it continues, signed for `home`.

    `SearchError` if it would be too large to be accepted back (only absurd filters can do that).
    """
    raw = json.dumps({"type": kind, **payload}, separators=(",", ":"), default=str).encode()
    body = zlib.compress(raw, 9)
    token = _b64(_VERSION + _mac(token_key(home), body) + body)
    if len(raw) > MAX_PAYLOAD_BYTES or len(token) > MAX_TOKEN_CHARS:
        raise SearchError("this search is too large to page through; narrow its filters or raise its limit")
    return token


def decode_token(kind: str, token: str, home: Path) -> dict[str, Any]:
    """The payload of a token `home`'s cairn issued for `kind`; `BadContinuationError` for anything else."""
    body = _verified_body(token, home)
    data = _inflate_json(body)
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise BadContinuationError(DAMAGED)
    if data["type"] != kind:
        raise BadContinuationError(
            f"that continuation token belongs to another kind of request, not {kind}; "
            "repeat the search without it"
        )
    schema = SCHEMAS.get(kind)
    if schema is not None:
        try:
            schema.model_validate(data)
        except ValidationError as exc:
            raise BadContinuationError(DAMAGED) from exc
    data.pop("type")
    return data


def _verified_body(token: Any, home: Path) -> bytes:
    """The compressed payload of a token whose signature checks out; nothing unsigned gets further."""
    if not isinstance(token, str):
        raise BadContinuationError(DAMAGED)
    text = token.strip()
    if not text or len(text) > MAX_TOKEN_CHARS or not _ALPHABET.fullmatch(text):
        raise BadContinuationError(DAMAGED)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text.rstrip("=")) % 4))
    except (ValueError, binascii.Error) as exc:
        raise BadContinuationError(DAMAGED) from exc
    version, mac, body = raw[:1], raw[1 : 1 + _MAC_BYTES], raw[1 + _MAC_BYTES :]
    if version != _VERSION or not body or not hmac.compare_digest(mac, _mac(token_key(home), body)):
        raise BadContinuationError(DAMAGED)
    return body


def _inflate_json(body: bytes) -> Any:
    """The JSON inside `body`, decompressing at most `MAX_PAYLOAD_BYTES` (+1 to notice more)."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(body, MAX_PAYLOAD_BYTES + 1)
    except zlib.error as exc:
        raise BadContinuationError(DAMAGED) from exc
    if len(raw) > MAX_PAYLOAD_BYTES or inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
        raise BadContinuationError(DAMAGED)
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise BadContinuationError(DAMAGED) from exc


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, _VERSION + body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
