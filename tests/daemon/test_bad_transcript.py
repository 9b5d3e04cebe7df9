"""A transcript whose first line is `'[' * 2000 + ']' * 2000`, queued
by a hook, crashed the daemon in the cycle that claimed it; the item stayed `running`, the next start
requeued it without counting an attempt, and the daemon crashed again (5 starts, 5 crashes, recall
down). The line is now a counted skip: the daemon stays up, captures the rest of that file and the
file queued beside it, and settles both items.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cairn.agent.models import resolve_model
from cairn.config import Settings
from cairn.daemon import loop, queue
from cairn.daemon.loop import Daemon
from cairn.ingest import FileSync
from cairn.store.store import Store
from tests.daemon.helpers import Daemons, alive, enqueue, query, wait_for
from tests.helpers.builders import prompts_after

DEEP = "[" * 2000 + "]" * 2000


def _messages(home: Path, path: Path) -> list[str]:
    rows = query(
        home,
        "SELECT m.text FROM messages m JOIN transcript_files f ON f.id = m.file_id WHERE f.path = ? "
        "ORDER BY m.line",
        (str(path.resolve()),),
    )
    return [str(text) for (text,) in rows]


def test_a_deep_line_neither_stops_nor_crash_loops_the_daemon(
    daemons: Daemons, cairn_home: Path, tmp_path: Path
) -> None:
    projects = tmp_path / "claude-projects"
    bad, good = projects / "-work-bad" / "bad.jsonl", projects / "-work-good" / "good.jsonl"
    bad_session = prompts_after(bad, DEEP, "the bad file's own prompt", "and its second").session_id
    good_session = prompts_after(good, "", "a good session's prompt").session_id
    pid = daemons.start()
    enqueue(cairn_home, bad, bad_session)
    enqueue(cairn_home, good, good_session)

    def settled() -> bool:
        statuses = query(cairn_home, "SELECT status FROM work_queue")
        return len(statuses) >= 2 and all(status == "done" for (status,) in statuses)

    wait_for(lambda: settled() or not alive(pid), 60, "both queue items to be done")
    assert alive(pid), (cairn_home / "logs" / "daemon.log").read_text()
    assert settled()
    assert _messages(cairn_home, bad) == ["the bad file's own prompt", "and its second"]
    assert _messages(cairn_home, good) == ["a good session's prompt"]
    log = (cairn_home / "logs" / "daemon.log").read_text()
    assert "Traceback" not in log and "RecursionError" not in log


async def test_a_file_whose_capture_raises_is_retried_then_parked_not_raised(
    store: Store, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever else one file's capture raises (a bug not yet found) fails that file alone: its item is
    retried, then parked, and the daemon's cycle returns; the file beside it is captured."""
    projects = tmp_path / "claude-projects"
    bad, good = projects / "-work-bad" / "bad.jsonl", projects / "-work-good" / "good.jsonl"
    bad_session = prompts_after(bad, "", "a prompt this daemon cannot capture").session_id
    good_session = prompts_after(good, "", "a good session's prompt").session_id
    real_sync_file = loop.sync_file

    async def sync_file(store: Store, path: Path, settings: Settings) -> FileSync:
        if path.name == bad.name:
            raise RuntimeError("a fault of this file's own")
        return await real_sync_file(store, path, settings)

    monkeypatch.setattr(loop, "sync_file", sync_file)
    settings = settings.model_copy(update={"queue_max_attempts": 2})
    daemon = Daemon(settings, store, resolve_model(settings.model_copy(update={"model": "offline"})))
    await queue.enqueue(store.db, str(bad), bad_session)
    await queue.enqueue(store.db, str(good), good_session)
    far = datetime.now(UTC) + timedelta(days=1)  # past any backoff

    first = await daemon.cycle(await queue.claim(store.db, far))
    assert (first.retried, first.done, first.messages_added) == (1, 1, 1)
    second = await daemon.cycle(await queue.claim(store.db, far))
    assert second.retried == 1
    [parked] = await queue.parked(store.db)
    assert (parked.path, parked.attempts) == (str(bad), 2)
    assert parked.last_error == "RuntimeError: a fault of this file's own"
