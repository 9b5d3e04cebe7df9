"""A result carries its exchange — the person's prompt that started its turn and the reply that ended it —
and that reply ranks with what its turn matched: a hit on a test run's output leads to the reply that said
what it meant (issue 42)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.search.hybrid import search
from cairn.search.models import SearchPage, SearchRequest
from cairn.store.store import Store
from tests.helpers.builders import START, Transcript


async def ids_by_line(store: Store) -> dict[int, str]:
    rows = await store.db.fetchall("SELECT id, line FROM messages")
    return {int(row["line"]): f"m{row['id']}" for row in rows}


async def run(store: Store, settings: Settings, query: str, **request: Any) -> SearchPage:
    fields = {"query": query, "mode": "keyword", "kind": "messages", "min_score": 0, **request}
    return await search(store.db, None, settings, SearchRequest(**fields), record_usage=False)


def failing_build(cwd: Path) -> Transcript:
    t = Transcript(cwd)
    t.user("why does the webpack build fail on the tokenizer import")  # line 1
    t.say("I'll run the build to see.")  # 2: a reply, but not the one that ends the turn
    # 3: a subagent's task and 4: its answer, in the session's file: neither is the person's turn
    t.user("Find where the tokenizer alias is configured", sidechain=True)
    t.say("The alias would go in webpack.config.js.", sidechain=True)
    t.tool("Bash", {"command": "npm run build"}, "Module not found: cannot resolve 'tiktoken/lite'")  # 5, 6
    t.say("The config has no alias for tiktoken; adding one fixes the build.")  # 7: ends the turn
    t.user("thanks, now add a test for it")  # 8
    t.say("Added a test that imports the tokenizer.")  # 9
    return t


async def synced_build(store: Store, settings: Settings, tmp_path: Path) -> dict[int, str]:
    """`failing_build` captured; each line's result id."""
    path = failing_build(tmp_path / "app").write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None
    return await ids_by_line(store)


async def test_a_result_carries_the_prompt_and_the_closing_reply_of_its_turn(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    at = await synced_build(store, settings, tmp_path)

    page = await run(store, settings, "tiktoken lite")
    by_id = {r.id: r for r in page.results}

    output = by_id[at[6]]
    assert output.origin == "tool_result" and output.exchange is not None
    assert output.exchange.prompt is not None and output.exchange.reply is not None
    assert (output.exchange.prompt.id, output.exchange.reply.id) == (at[1], at[7])
    assert output.exchange.prompt.preview == "why does the webpack build fail on the tokenizer import"
    # The prompt's own turn: it started it, the reply on line 7 ended it.
    prompt = (await run(store, settings, "webpack build fail")).results
    exchange = next(r.exchange for r in prompt if r.id == at[1])
    assert exchange is not None and exchange.reply is not None and exchange.reply.id == at[7]


async def test_a_subagents_task_does_not_start_a_turn(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    at = await synced_build(store, settings, tmp_path)

    page = await run(store, settings, "alias configured webpack")
    task = next(r for r in page.results if r.id == at[3])

    assert task.origin == "subagent"
    assert task.exchange is not None and task.exchange.prompt is not None
    assert (task.exchange.prompt.id, task.exchange.reply and task.exchange.reply.id) == (at[1], at[7])


def comparison(cwd: Path, output: str) -> Transcript:
    """A turn whose work is a command and two file reads, and whose closing reply says it is done."""
    t = Transcript(cwd, start=START)
    t.user("run the comparison script please")
    t.say("Running it now.")
    t.tool("Bash", {"command": "python compare.py"}, output)  # lines 3, 4
    t.tool("Read", {"file_path": f"{cwd}/compare.py"}, "import sys")  # 5, 6
    t.tool("Read", {"file_path": f"{cwd}/README.md"}, "# Music")  # 7, 8
    t.say("Done: the model list is ready.")  # 9
    return t


async def test_the_reply_closing_a_turn_ranks_with_the_output_it_reported(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    # Both closing replies hold "model" only; one turn's command printed the answer five lines before.
    answered = comparison(tmp_path / "a", "Most diverse embedding model: all-roberta-large-v1")
    other = comparison(tmp_path / "b", "3 files compared")
    other.lines[-1]["message"]["content"][0]["text"] = "Done: the model list is final."  # not the same text
    for name, t in (("a.jsonl", answered), ("b.jsonl", other)):
        assert (await sync_file(store, t.write(tmp_path / name), settings)).error is None
    rows = await store.db.fetchall(
        "SELECT m.id, f.path FROM messages AS m JOIN transcript_files AS f ON f.id = m.file_id "
        "WHERE m.line = 9"
    )
    reply = {Path(row["path"]).name: f"m{row['id']}" for row in rows}
    query = "which embedding model is the most diverse"

    scores = {r.id: r.score for r in (await run(store, settings, query)).results}
    assert scores[reply["a.jsonl"]] > scores[reply["b.jsonl"]]

    without = settings.model_copy(update={"search_exchange_weight": 0.0})
    scores = {r.id: r.score for r in (await run(store, without, query)).results}
    assert scores[reply["a.jsonl"]] == scores[reply["b.jsonl"]]  # the same words: only their turns differ
