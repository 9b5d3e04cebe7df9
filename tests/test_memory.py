"""`cairn.Memory`, the library's way in, on a real store it opens itself for each call (the daemon's
route: `tests/daemon/test_memory_daemon.py`); and `cairn`'s public names, as httpx checks its own."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

import cairn
from cairn import AsyncMemory, Memory, Refusal
from cairn.config import Settings
from cairn.search.item_models import ItemDetail, OpenItems, Timeline
from cairn.search.models import SearchPage
from cairn.store.lock import StoreLock
from tests.helpers.homes import IndexedViewer
from tests.helpers.paths import DEMO, REPO_ROOT

PUBLIC = {"AsyncMemory", "CairnError", "Failure", "Memory", "Refusal", "__version__"}


def test_the_public_names_are_listed_and_each_is_there() -> None:
    assert set(cairn.__all__) == PUBLIC
    for name in cairn.__all__:
        assert getattr(cairn, name) is not None, name
    assert issubclass(cairn.Refusal, cairn.CairnError) and issubclass(cairn.Failure, cairn.CairnError)
    with pytest.raises(AttributeError, match="no attribute 'Memroy'"):
        cairn.Memroy  # noqa: B018


@pytest.fixture
def home(demo_home: Path, cairn_home: Path) -> Path:
    """A copy of the indexed demo store (the demo session: acme-api's database choices)."""
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    return cairn_home


def _held(home: Path) -> bool:
    return StoreLock(home / "store.lock").holder_pid() is not None


def test_memory_answers_from_a_store_it_opens_for_each_call(home: Path) -> None:
    with Memory.open(home) as memory:
        page = memory.search("database is locked", record_usage=False)
        assert isinstance(page, SearchPage) and page.results, "the demo session talks of a locked database"
        assert not _held(home), "the store is closed between calls, so a daemon can take it over"
        first = page.results[0]
        detail = memory.show(first.id)
        assert isinstance(detail, ItemDetail) and detail.id == first.id
        assert isinstance(memory.timeline(first.id, before=2, after=2), Timeline)
        assert isinstance(memory.open_items(), OpenItems)
        assert memory.stats()["messages"] > 0
        assert any(project["name"] == "acme-api" for project in memory.projects())
        ideas = memory.search("database", kind="ideas", limit=3, record_usage=False)
        assert ideas.results and len(ideas.results) <= 3
        assert all(result.kind == "idea" for result in ideas.results)
    assert not _held(home)


def test_a_request_that_cannot_be_done_is_a_refusal_that_says_why(home: Path) -> None:
    with Memory.open(home) as memory:
        with pytest.raises(Refusal, match="999999"):
            memory.show(999_999)
        with pytest.raises(Refusal):
            memory.search("anything", continuation="not-a-token")
        assert memory.search("database", record_usage=False).results, "a refusal leaves the memory usable"


async def test_a_lingering_memory_keeps_its_store_open_only_that_long(
    home: Path, embedding_function: EmbeddingFunction[Documents]
) -> None:
    """The viewer's memory keeps the store open `linger` seconds after a search, for the person who
    clicks on; then it lets go, so the daemon the hook starts can take the store."""
    settings = Settings.load(home)
    memory = AsyncMemory(settings, embedding_function=embedding_function, linger=60)
    await memory.search("database", record_usage=False)
    assert _held(home), "kept open after a search"
    await memory.call("stats")
    assert _held(home), "other calls use the open store"
    await memory.aclose()
    assert not _held(home), "closed with the memory"

    brief = AsyncMemory(settings, embedding_function=embedding_function, linger=0.2)
    await brief.show((await brief.search("database", record_usage=False)).results[0].id)
    deadline = time.monotonic() + 30
    while _held(home) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _held(home), "let go once the linger passed"
    await brief.aclose()


@pytest.mark.process
def test_the_example_program_prints_the_open_items_of_a_repository(
    viewer_index: IndexedViewer, cairn_home: Path
) -> None:
    """`examples/open_items.py`, the program docs/api.md shows, as a user runs it on the viewer sessions
    (project Demo, one of whose questions is still open)."""
    home = cairn_home
    shutil.copytree(viewer_index.home, home, symlinks=True)
    with Memory.open(home) as memory:
        project = next(p for p in memory.projects() if p["name"] == "Demo")
        expected = memory.open_items(project=project["path"])
    script = REPO_ROOT / "examples" / "open_items.py"
    env = {**os.environ, "CAIRN_HOME": str(home)}

    def run(path: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), path], capture_output=True, text=True, env=env, timeout=120
        )

    proc = run(project["path"])
    assert proc.returncode == 0, proc.stderr
    assert f"Open questions ({expected.question_count}):" in proc.stdout
    assert f"Open todos ({expected.todo_count}):" in proc.stdout
    for item in [*expected.questions, *expected.todos]:
        assert f"#{item.id}" in proc.stdout
    assert expected.questions or expected.todos, "the viewer sessions leave something open"

    elsewhere = run(str(home / "nowhere"))
    assert elsewhere.returncode == 0 and "no project matches" in elsewhere.stdout


async def test_a_job_runs_here_with_its_progress_when_no_daemon_runs(
    cairn_home: Path, embedding_function: EmbeddingFunction[Documents]
) -> None:
    """`run_job`, the route of `cairn index`/`backfill`: without a daemon the job runs on a store held
    for it, its progress events reach the caller as they happen, and what it stored is then found."""
    settings = Settings.load(cairn_home)
    events: list[dict[str, object]] = []
    async with AsyncMemory(settings, embedding_function=embedding_function) as memory:
        report = await memory.run_job("index", {"paths": [str(DEMO)], "model": "offline"}, events.append)
        assert report["messages_added"] > 0 and events, report
        assert not _held(cairn_home), "the job's store is closed when it ends"
        assert (await memory.search("database", record_usage=False)).results
        with pytest.raises(Refusal, match="not a long op"):
            await memory.run_job("search", {}, events.append)
