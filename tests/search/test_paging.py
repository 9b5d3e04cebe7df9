"""Continuation tokens (issue 14, item 4): signed, size-bounded, schema-checked, one error for all that fails.

The attacks are real ones: tokens a caller without the key can build (unsigned, or signed with a made-up
key), through the library and a real `cairn` process. Those signed with the real key test the checks
behind the signature, which a leaked key or a bug in cairn itself would otherwise reach.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.config import Settings
from cairn.search import ops, paging
from cairn.search.errors import BadContinuationError, SearchError
from cairn.search.paging import (
    _VERSION,
    DAMAGED,
    KEY_FILE,
    MAX_PAYLOAD_BYTES,
    MAX_SEEN,
    MAX_TOKEN_CHARS,
    _mac,
    decode_token,
    encode_token,
    token_key,
)
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers.cli import cairn
from tests.search.token_attacks import REFUSAL, attacks, b64, inflating
from tests.tools.memory import Memory, seed_closed

PAYLOAD: dict[str, Any] = {
    "request": {"query": "chroma"},
    "snapshot": {"idea": 3, "message": 9},
    "seen": ["1"],
}


def signed(home: Path, raw: bytes, *, compressed: bytes | None = None) -> str:
    """A token signed with `home`'s real key around any payload: what only a leaked key could make."""
    body = compressed if compressed is not None else zlib.compress(raw, 9)
    return b64(_VERSION + _mac(token_key(home), body) + body)


# The key


def test_a_token_round_trips_and_its_key_is_private(tmp_path: Path) -> None:
    token = encode_token("search", PAYLOAD, tmp_path)
    assert decode_token("search", token, tmp_path) == PAYLOAD
    key_file = tmp_path / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(key_file.read_bytes()) == 32
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE], "no temporary file is left behind"
    assert encode_token("search", PAYLOAD, tmp_path) == token, "the key is kept, not made anew"
    other = tmp_path / "other-home"
    other.mkdir()
    with pytest.raises(BadContinuationError, match="damaged"):
        decode_token("search", token, other)


def test_a_key_file_that_cannot_be_trusted_is_replaced(tmp_path: Path) -> None:
    key_file = tmp_path / KEY_FILE
    key_file.write_bytes(b"k" * 32)
    key_file.chmod(0o644)  # readable by every user: no secret
    key = token_key(tmp_path)
    assert key != b"k" * 32 and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key_file.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"s" * 32)
    elsewhere.chmod(0o600)
    key_file.symlink_to(elsewhere)  # a key is never read or written through a symlink
    key = token_key(tmp_path)
    assert key != b"s" * 32 and not key_file.is_symlink() and elsewhere.read_bytes() == b"s" * 32
    key_file.write_bytes(b"short")
    key_file.chmod(0o600)
    assert len(token_key(tmp_path)) == 32


@pytest.mark.process
def test_processes_racing_to_create_the_key_agree_on_one(tmp_path: Path) -> None:
    script = "import sys; from pathlib import Path; from cairn.search.paging import token_key; "
    script += "print(token_key(Path(sys.argv[1])).hex())"
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {proc.communicate(timeout=60)[0].strip() for proc in procs}
    assert len(keys) == 1 and keys == {(tmp_path / KEY_FILE).read_bytes().hex()}


def test_a_key_linked_by_another_process_after_our_read_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of two first uses, made deterministic: another process links its key between our read
    (which found nothing) and our create. Ours must lose to it, not replace it: the other process has
    already signed tokens with its key."""
    theirs = b"t" * 32
    real_read = paging._read_key
    reads: list[Path] = []

    def read_before_their_link(path: Path) -> tuple[bool, bytes | None]:
        reads.append(path)
        if len(reads) == 1:
            path.write_bytes(theirs)
            path.chmod(0o600)
            return False, None  # what our read saw, an instant before their link
        return real_read(path)

    monkeypatch.setattr(paging, "_read_key", read_before_their_link)
    assert token_key(tmp_path) == theirs
    assert (tmp_path / KEY_FILE).read_bytes() == theirs
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE], "no temporary file is left behind"


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    """A home even root cannot write to (immutable), as a read-only bind mount would be."""
    home = tmp_path / "ro-home"
    home.mkdir()
    if subprocess.run(["chattr", "+i", str(home)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield home
    finally:
        subprocess.run(["chattr", "-i", str(home)], check=True)


@pytest.mark.process
def test_a_read_only_home_signs_with_a_key_of_this_process(read_only_home: Path) -> None:
    token = encode_token("search", PAYLOAD, read_only_home)
    assert decode_token("search", token, read_only_home) == PAYLOAD
    assert not (read_only_home / KEY_FILE).exists()
    script = (
        "import sys; from pathlib import Path; from cairn.search.paging import decode_token\n"
        "try:\n    decode_token('search', sys.argv[1], Path(sys.argv[2]))\n"
        "except ValueError as exc:\n    print(exc)\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", script, token, str(read_only_home)], capture_output=True, text=True, timeout=60
    )
    assert "damaged" in other.stdout, "another process has another key: refused, never accepted unsigned"


# The attacks, through the library


@pytest.mark.parametrize("name", sorted(attacks(bomb_bytes=1 << 20)))
def test_every_attack_is_the_damaged_token_error(tmp_path: Path, name: str) -> None:
    token = attacks(bomb_bytes=200 * 1024 * 1024 if name == "bomb" else 1 << 20)[name]
    token_key(tmp_path)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(BadContinuationError) as raised:
            decode_token("search", token, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(raised.value) == DAMAGED
    assert time.perf_counter() - started < 1.0
    assert peak < 4 * len(token) + (1 << 20), f"decoding {name} took {peak} bytes"


def test_a_signed_bomb_is_stopped_while_decompressing(tmp_path: Path) -> None:
    # 40 MB compresses to ~40 KB: under the length check, so only the bound on inflating stops it.
    small = signed(tmp_path, b"", compressed=inflating(40 * 1024 * 1024))
    assert len(small) <= MAX_TOKEN_CHARS
    tracemalloc.start()
    try:
        with pytest.raises(BadContinuationError, match="damaged"):
            decode_token("search", small, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_PAYLOAD_BYTES, f"decompressing took {peak} bytes"


def _search(**changes: Any) -> bytes:
    return json.dumps({"type": "search", **PAYLOAD, **changes}).encode()


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 5000,
        b'{"type": "search", "request": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        _search(snapshot={"idea": 10**30}),
        _search(snapshot={"idea": -1}),
        _search(snapshot={"idea": True}),
        _search(snapshot={"idea": "7"}),
        _search(snapshot={"idea": 1.5}),
        _search(snapshot={"Idea; DROP": 1}),
        _search(seen=["1" * 31]),
        _search(seen=[["1"]]),
        _search(seen=[str(i) for i in range(MAX_SEEN + 1)]),
        _search(extra="field"),
        _search(request=[]),
        b'{"type": "search", "request": {}, "snapshot": {"idea": NaN}, "seen": []}',
        b'{"type": "search", "request": {}, "snapshot": {"idea": 1e400}, "seen": []}',
        b'{"type": "search_content", "concepts": [], "terms": ["x"], "min_score": Infinity, "project": null, '
        b'"session": null, "snapshot": {}, "offset": 0, "total": 1}',
        b"\xff\xfe not utf-8",
        b"[]",
        b'{"type": 7}',
    ],
    ids=lambda raw: raw[:40].decode(errors="replace"),
)
def test_a_signed_token_with_a_bad_payload_is_damaged(tmp_path: Path, raw: bytes) -> None:
    kind = "search_content" if b"search_content" in raw else "search"
    with pytest.raises(BadContinuationError) as raised:
        decode_token(kind, signed(tmp_path, raw), tmp_path)
    assert str(raised.value) == DAMAGED


def test_trailing_data_and_truncation_are_damaged(tmp_path: Path) -> None:
    body = zlib.compress(_search(), 9)
    for compressed in (body + b"extra", body[:-3]):
        with pytest.raises(BadContinuationError, match="damaged"):
            decode_token("search", signed(tmp_path, b"", compressed=compressed), tmp_path)


def test_a_token_of_another_kind_says_so(tmp_path: Path) -> None:
    token = encode_token("search", PAYLOAD, tmp_path)
    with pytest.raises(BadContinuationError, match="another kind of request"):
        decode_token("search_content", token, tmp_path)


def test_the_largest_real_token_is_accepted(tmp_path: Path) -> None:
    """1,000 seen ids of the longest form and a 10,000-character query of incompressible text."""
    rng = __import__("random").Random(14)
    query = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(10_000))
    payload = {
        "request": {"query": query, "project": "/work/" + "p" * 200},
        "snapshot": {"idea": 2**63 - 1, "span": 2**63 - 1, "message": 2**63 - 1},
        "seen": [f"m{2**63 - 1 - i}" for i in range(MAX_SEEN)],
    }
    token = encode_token("search", payload, tmp_path)
    assert len(token) <= MAX_TOKEN_CHARS * 0.75
    assert decode_token("search", token, tmp_path) == payload


def test_a_payload_too_large_to_come_back_is_refused_when_issued(tmp_path: Path) -> None:
    huge = {"request": {"project": os.urandom(MAX_TOKEN_CHARS).hex()}, "snapshot": {}, "seen": []}
    with pytest.raises(SearchError, match="too large to page through"):
        encode_token("search", huge, tmp_path)


# Through search itself


@pytest.fixture
async def memory(settings: Settings, embedding_function: EmbeddingFunction[Documents]) -> Memory:
    return await seed_closed(settings, embedding_function)


QUERY = {"query": "vectors blobs SQLite", "kind": "ideas", "include_superseded": True, "limit": 1}


async def test_search_pages_with_signed_tokens_and_refuses_forgeries(
    settings: Settings, embedding_function: EmbeddingFunction[Documents], memory: Memory
) -> None:
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        first = await ops.search(store, record_usage=False, **QUERY)
        genuine = first["next_token"]
        assert genuine
        second = await ops.search(store, record_usage=False, continuation=genuine, limit=1)
        assert second["results"] and second["results"][0]["id"] != first["results"][0]["id"]
        for name, token in attacks(genuine, bomb_bytes=1 << 20).items():
            with pytest.raises(BadContinuationError) as raised:
                await ops.search(store, record_usage=False, continuation=token)
            assert str(raised.value) == DAMAGED, name
            with pytest.raises(BadContinuationError, match="damaged"):
                await ops.search_content(store, record_usage=False, continuation_token=token)
    finally:
        await store.close()


# Through a real `cairn` process


def _one_line_refusal(proc: subprocess.CompletedProcess[str], name: str) -> None:
    assert proc.returncode == 2, (name, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == "", name
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and REFUSAL in lines[0], (name, proc.stderr)


def test_the_cli_refuses_every_attack_in_one_line(memory: Memory) -> None:
    page = json.loads(
        cairn(
            "search", QUERY["query"], "--kind", "ideas", "--include-superseded", "--limit", "1", "--json"
        ).stdout
    )
    genuine = page["next_token"]
    assert json.loads(cairn("search", "--page-token", genuine, "--limit", "1", "--json").stdout)["results"]
    # A 60 MB bomb is ~80 KB of text: one command-line argument holds at most 128 KiB.
    hostile = attacks(genuine, bomb_bytes=60 * 1024 * 1024)
    for name, token in hostile.items():
        _one_line_refusal(cairn("search", "--page-token", token, check=False, timeout=60), name)
    for name in ("nested_unsigned", "huge_ids_signed_badly", "bomb"):
        _one_line_refusal(cairn("content", "--page-token", hostile[name], check=False, timeout=60), name)
