"""A coding session says the same thing many times — the todo list rewritten unchanged, the same file read
again, a command run twice with the same output — and each copy matches a query as well as the others:
three copies of one TodoWrite snapshot filled a top 10 (issue 42). Copies of one text are one result,
which says how many times it was said and when last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.search.hybrid import search
from cairn.search.models import SearchPage, SearchRequest
from cairn.store.store import Store
from tests.helpers.builders import Transcript

TODOS = [
    {"id": "1", "content": "Move the tokenizer to tiktoken", "status": "in_progress"},
    {"id": "2", "content": "Add a regression test for the tokenizer", "status": "pending"},
]
WRITTEN = "Todos have been modified successfully."


def planning(cwd: Path, *, snapshots: int, done: bool = False, session_id: str | None = None) -> Transcript:
    """A session that writes the same todo list `snapshots` times, each after a prompt; with `done`, a
    last list whose items are finished (a different text)."""
    t = Transcript(cwd, session_id=session_id)
    for n in range(snapshots):
        t.user(f"keep going with step {n}")
        t.tool("TodoWrite", {"todos": TODOS}, WRITTEN)
        t.say(f"Step {n} is under way.")
    if done:
        t.user("wrap up")
        t.tool("TodoWrite", {"todos": [{**todo, "status": "completed"} for todo in TODOS]}, WRITTEN)
    return t


async def run(store: Store, settings: Settings, **request: Any) -> SearchPage:
    fields = {"query": "tokenizer tiktoken", "mode": "keyword", "kind": "messages", "min_score": 0, **request}
    return await search(store.db, None, settings, SearchRequest(**fields), record_usage=False)


async def one_at_a_time(store: Store, settings: Settings) -> list[SearchPage]:
    """Every page of `run`'s search, one result a page, through its continuation tokens."""
    pages = [await run(store, settings, limit=1)]
    while pages[-1].next_token is not None:
        pages.append(await run(store, settings, limit=1, continuation=pages[-1].next_token))
    return pages


async def stored_time(store: Store, line: int) -> str:
    return str(
        await store.db.scalar(
            "SELECT timestamp FROM messages WHERE line = ? AND origin = 'tool_call'", (line,)
        )
    )


async def test_three_identical_todo_snapshots_are_one_result_said_three_times(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    path = planning(tmp_path / "app", snapshots=3).write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    page = await run(store, settings)

    snapshots = [r for r in page.results if r.call == "TodoWrite"]
    assert len(snapshots) == 1
    [snapshot] = snapshots
    assert snapshot.repeats == 3
    # Lines 2, 6 and 10 hold the three calls: the last was said at line 10.
    assert snapshot.last_said_at == await stored_time(store, 10)
    assert page.total == len(page.results)


async def test_different_texts_are_not_folded(store: Store, settings: Settings, tmp_path: Path) -> None:
    path = planning(tmp_path / "app", snapshots=2, done=True).write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    page = await run(store, settings)

    snapshots = sorted((r.repeats, r.last_said_at is not None) for r in page.results if r.call == "TodoWrite")
    assert snapshots == [(1, False), (2, True)]


async def test_paging_through_folded_results_shows_each_text_once(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    t = planning(tmp_path / "app", snapshots=3, done=True)
    t.say("The tokenizer now uses tiktoken everywhere.")
    t.say("A regression test for the tokenizer guards the tiktoken import.")
    path = t.write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    whole = await run(store, settings, limit=100)
    pages = await one_at_a_time(store, settings)
    assert {page.total for page in pages} == {whole.total}
    paged = [(r.id, r.repeats) for page in pages for r in page.results]

    assert paged == [(r.id, r.repeats) for r in whole.results]
    assert len({r.content for r in whole.results}) == len(whole.results)


async def test_repeats_are_counted_within_the_searchs_filters(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    # The same list in two sessions: within one session it was said there only.
    here = planning(tmp_path / "app", snapshots=2, session_id="s-here").write(tmp_path / "a.jsonl")
    there = planning(tmp_path / "app", snapshots=1, session_id="s-there").write(tmp_path / "b.jsonl")
    for path in (here, there):
        assert (await sync_file(store, path, settings)).error is None

    everywhere = await run(store, settings)
    in_one = await run(store, settings, session="s-here")

    assert [r.repeats for r in everywhere.results if r.call == "TodoWrite"] == [3]
    assert [r.repeats for r in in_one.results if r.call == "TodoWrite"] == [2]


def numbered(lines: list[str], first: int) -> str:
    """A Read tool's output: the file's lines from `first` on, each after its line number."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines[first - 1 :], start=first))


SOURCE = [f"value_{n} = compute_{n}(inputs)" for n in range(1, 61)]
SOURCE[29] = "# The tokenizer is loaded from tiktoken once per process, never per call."


async def test_a_file_read_twice_reads_as_one_call_and_one_stretch_of_output(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    # Two reads of one file from different lines are different stored texts, but the stretch that
    # matches the query reads the same in both: a person would see it twice.
    t = Transcript(tmp_path / "app")
    t.user("where is the tokenizer loaded")
    t.tool("Read", {"file_path": str(tmp_path / "app" / "tokenizer.py")}, numbered(SOURCE, 1))
    t.user("read it again from line 12")
    t.tool("Read", {"file_path": str(tmp_path / "app" / "tokenizer.py"), "offset": 12}, numbered(SOURCE, 12))
    t.say("Another part entirely: the tokenizer cache is cleared by tiktoken's reset.")
    path = t.write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    page = await run(store, settings, limit=10)

    # The two outputs, and the two calls (both read `Read tokenizer.py`), are one result each.
    for origin in ("tool_result", "tool_call"):
        [one] = [r for r in page.results if r.origin == origin]
        assert one.repeats == 2 and one.last_said_at is not None
    assert any(r.origin == "reply" for r in page.results)
    snippets = [" ".join(r.snippet.split()) for r in page.results]
    assert len(set(snippets)) == len(snippets)

    # Paging one result at a time shows the same results: the folded read never comes back.
    paged = [(r.id, r.repeats) for one in await one_at_a_time(store, settings) for r in one.results]
    assert paged == [(r.id, r.repeats) for r in page.results]


PLAN = [
    "## Tokenizer plan",
    "1. Load the tokenizer from tiktoken once per process and keep it.",
    "2. Split the transcript into messages and drop the empty ones first.",
    "3. Read the model's context window from the settings file at start.",
    "4. Count tokens in batches of one hundred messages.",
    "5. Report the totals per session, with the largest sessions first.",
]


async def test_a_plan_written_again_shows_its_unchanged_paragraph_once(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    # A plan revised in one step is a new text, but the step that matches the query reads the same in
    # both drafts: a person would see it twice.
    t = Transcript(tmp_path / "app")
    t.user("write up the plan")
    t.say("\n\n".join(PLAN))
    t.user("count in batches of fifty instead")
    t.say("\n\n".join([*PLAN[:4], "4. Count tokens in batches of fifty messages.", PLAN[5]]))
    path = t.write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None

    page = await run(store, settings, limit=10)

    [plan] = [r for r in page.results if r.origin == "reply"]
    assert plan.repeats == 2
