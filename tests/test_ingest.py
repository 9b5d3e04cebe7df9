"""The capture loop: files synced piece by piece store exactly what one whole read stores."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from cairn.config import Settings
from cairn.ingest import sync_paths
from cairn.store.store import Store
from tests.helpers.paths import REAL_TRANSCRIPTS

MAIN = REAL_TRANSCRIPTS / "fasthooks" / "sample_main_transcript.jsonl"


async def _stored(settings: Settings, pieces: list[bytes], path: Path) -> list[tuple[int, int, str]]:
    """Write `pieces` to `path` one after another, syncing after each; return the stored messages."""
    path.write_bytes(b"")
    async with await Store.open(settings) as store:
        for piece in pieces:
            with path.open("ab") as fh:
                fh.write(piece)
            report = await sync_paths(store, [path], settings, vectors=False)
            assert not report.errors
        rows = await store.db.fetchall("SELECT line, end_line, text FROM messages ORDER BY line, id")
    return [(r["line"], r["end_line"], r["text"]) for r in rows]


async def test_tool_result_read_later_keeps_its_tool_name(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines(keepends=True)
    # Split right after the first tool_use line, so its result arrives in the next read.
    cut = next(i + 1 for i, raw in enumerate(lines) if any(b.get("type") == "tool_use" for b in _blocks(raw)))
    whole = await _stored(Settings.load(tmp_path / "a"), [b"".join(lines)], tmp_path / "a.jsonl")
    split = await _stored(
        Settings.load(tmp_path / "b"),
        [b"".join(lines[:cut]), b"".join(lines[cut:])],
        tmp_path / "b.jsonl",
    )
    assert split == whole
    first_result = next(text for _line, _role, text in split if text.startswith("[tool_result"))
    assert first_result.startswith("[tool_result Bash]")


async def test_resync_after_every_half_line_stores_each_line_once(tmp_path: Path) -> None:
    """A writer observed mid-line and between lines: nothing is lost, nothing stored twice.

    Reads between the lines of one assistant turn store its blocks as separate messages (the offset
    may only advance with what was stored), so the comparison is per line, not per message.
    """
    lines = MAIN.read_bytes().splitlines(keepends=True)
    pieces: list[bytes] = []
    for raw in lines:
        pieces += [raw[: len(raw) // 2], raw[len(raw) // 2 :]]
    stepwise = await _stored(Settings.load(tmp_path / "a"), pieces, tmp_path / "a.jsonl")
    whole = await _stored(Settings.load(tmp_path / "b"), [b"".join(lines)], tmp_path / "b.jsonl")
    for start, end, text in whole:
        inside = [t for s, e, t in stepwise if start <= s and e <= end]
        assert "\n".join(inside) == text, (start, end)
    assert sum(e - s + 1 for s, e, _t in stepwise) <= sum(e - s + 1 for s, e, _t in whole)


def _blocks(raw: bytes) -> list[dict[str, object]]:
    message = json.loads(raw).get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


async def test_a_replaced_transcript_is_indexed_again_from_its_first_line(
    settings: Settings, tmp_path: Path
) -> None:
    """Truncated or replaced under cairn: the new content is captured and indexed, the old is not redone."""
    from cairn.agent.batches import plan_batches
    from cairn.agent.indexer import index_pending

    demo = Path(__file__).resolve().parents[1] / "cairn" / "demo" / "demo-session.jsonl"
    path = tmp_path / "session.jsonl"
    path.write_bytes(demo.read_bytes())
    async with await Store.open(settings) as store:
        await sync_paths(store, [path], settings)
        first = await index_pending(store, settings, model="offline")
        assert first.ok == 1 and await plan_batches(store.db) == []
        old_ideas = await store.db.scalar("SELECT count(*) FROM ideas")

        replacement = tmp_path / "new.jsonl"  # a new inode at the same path, shorter content
        replacement.write_bytes(b"".join(MAIN.read_bytes().splitlines(keepends=True)[:20]))
        replacement.replace(path)
        report = await sync_paths(store, [path], settings)
        assert report.files[0].restarted and report.messages_added > 0

        [planned] = await plan_batches(store.db)
        assert planned.cursors[0].from_line == 0
        sent = [m.content for u in planned.batch.updates for m in u.messages]
        assert sent and not any("WAL" in text for text in sent), "old content is not planned again"
        second = await index_pending(store, settings, model="offline")
        assert second.ok == 1 and await plan_batches(store.db) == []
        assert await store.db.scalar("SELECT count(*) FROM ideas") >= old_ideas


async def test_a_finished_transcript_without_a_last_newline_is_captured_whole_and_once(
    tmp_path: Path,
) -> None:
    """Real sessions copied out of another tool end without a newline: the last entry is not lost,
    and when such a file grows, nothing is stored twice (the same rows as one read of the result)."""
    source = REAL_TRANSCRIPTS / "entireio-cli" / "5dd7775c-3161-4ad5-bf25-eb59a6ffa8e6.jsonl"
    data = source.read_bytes()
    assert not data.endswith(b"\n")
    last = json.loads(data.rsplit(b"\n", 1)[1])
    more = json.dumps(
        {
            "type": "user",
            "sessionId": last["sessionId"],
            "cwd": last.get("cwd"),
            "timestamp": "2026-02-01T10:00:00Z",
            "message": {"role": "user", "content": "one more question after the copy"},
        }
    ).encode()
    settings = Settings.load(tmp_path / "a")
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    os.utime(path, (time.time() - 60, time.time() - 60))
    async with await Store.open(settings) as store:
        await sync_paths(store, [path], settings, vectors=False)
        last_line = data.count(b"\n") + 1
        assert await store.db.scalar("SELECT max(end_line) FROM messages") == last_line
        with path.open("ab") as fh:
            fh.write(b"\n" + more + b"\n")
        report = await sync_paths(store, [path], settings, vectors=False)
        assert not report.errors and not report.files[0].restarted
        assert report.files[0].messages_added == 1
        rows = await store.db.fetchall("SELECT line, end_line, text FROM messages ORDER BY line, id")
    grown = [(r["line"], r["end_line"], r["text"]) for r in rows]
    assert grown[-1] == (last_line + 1, last_line + 1, "one more question after the copy")
    assert grown == await _stored(Settings.load(tmp_path / "b"), [path.read_bytes()], tmp_path / "b.jsonl")
