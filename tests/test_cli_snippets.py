"""Issue 42 in the terminal: `cairn search` labels each result with its kind — a tool's output is a
`tool result` (`✗` when its call failed), not `msg:user` — and shows its snippet as plain text with the
matched words bold, never `**` marks or escapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from chromadb.api.types import Documents, EmbeddingFunction

from cairn.cli import results as cli_results
from cairn.config import Settings
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers.cli import cairn
from tests.helpers.snippets import found, synced


@pytest.mark.process
async def test_search_labels_each_result_by_its_kind_and_shows_plain_text(
    cairn_home: Path, tmp_path: Path, embedding_function: EmbeddingFunction[Documents]
) -> None:
    settings = Settings.load(cairn_home)
    store = await Store.open(settings, vectors=VectorIndex(settings, embedding_function))
    try:
        await synced(store, settings, tmp_path)
        page = (await found(store, "webpack tokenizer")).model_dump(mode="json")
    finally:
        await store.close()

    out = cairn(
        "search", "webpack tokenizer", "--kind", "messages", "--mode", "keyword", env={"COLUMNS": "400"}
    )
    rows = [" ".join(line.replace("│", " ").split()) for line in out.stdout.splitlines()]

    def shown(kind: str, text: str) -> bool:
        return any(f" {kind} " in row and text in row for row in rows)

    assert shown("tool result ✗", "$ cd web npm run build → exit 1: ERROR")
    assert shown("prompt", "the webpack build fails on the tokenizer import *again*")
    assert shown("tool call", "TodoWrite: fix the webpack tokenizer alias (done)")
    assert shown("reply", "The webpack config has no alias for the tokenizer package")
    assert "msg:" not in out.stdout and "**" not in out.stdout and "\\*" not in out.stdout

    # The matched words, and only they, are bold.
    cells = cli_results.search_table(page).columns[-1].cells
    bold = [cell.plain[s.start : s.end].lower() for cell in cells for s in cell.spans if s.style == "bold"]
    assert set(bold) == {"webpack", "tokenizer"} and len(bold) >= len(page["results"])
