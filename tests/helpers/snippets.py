"""A coding session synced into a real store and searched, for the snippet tests of search, the command line,
the MCP server and the viewer."""

from __future__ import annotations

import json
from pathlib import Path

from cairn.config import Settings
from cairn.ingest import sync_file
from cairn.search.hybrid import search
from cairn.search.models import SearchPage, SearchRequest
from cairn.store.store import Store
from tests.helpers.builders import Transcript

SHORT = (
    "After the busy_timeout fix, 20 runs in a row passed: the flaky orders test is stable now, and CI "
    "has been green all afternoon."
)
LONG_WORDS = [f"step-{i}/stage," for i in range(150)]
LONG = " ".join([*LONG_WORDS[:75], "the zanzibar setting,", *LONG_WORDS[75:]])


async def synced(store: Store, settings: Settings, tmp_path: Path) -> Path:
    cwd = tmp_path / "app"
    path = coding_session(cwd).write(tmp_path / "s.jsonl")
    assert (await sync_file(store, path, settings)).error is None
    return cwd


async def found(store: Store, query: str, mode: str = "keyword", kind: str = "messages") -> SearchPage:
    request = SearchRequest(query=query, mode=mode, kind=kind, limit=20, min_score=0)  # type: ignore[arg-type]
    return await search(store.db, store.vectors, store.settings, request, record_usage=False)


def coding_session(cwd: Path) -> Transcript:
    """A coding session with what made snippets unreadable: markdown and escapes in the person's and
    the assistant's words, a TodoWrite, a failing Bash with a line break in its command, a file read,
    JSON tool output, a short message and a long one."""
    t = Transcript(cwd)
    t.user("the **webpack** build fails on the tokenizer import \\*again\\*, can you look?")
    t.say("I'll run the webpack build.\n\n## Plan\n- **check** the `tokenizer` alias\n- rebuild")
    t.tool(
        "TodoWrite",
        {
            "todos": [
                {
                    "id": "1",
                    "content": "fix the webpack tokenizer alias",
                    "status": "completed",
                    "priority": "high",
                },
                {"id": "2", "content": "add a webpack build test", "status": "pending", "priority": "high"},
            ]
        },
        "Todos have been modified successfully.",
    )
    t.tool(
        "Bash",
        {"command": "cd web\nnpm run build", "description": "Build with webpack"},
        "Exit code 1\nERROR in ./src/tokenizer.ts\nModule not found: webpack cannot resolve 'tiktoken/lite'",
        is_error=True,
    )
    t.tool(
        "Read",
        {"file_path": f"{cwd}/webpack.config.js"},
        "     1\tmodule.exports = {\n     2\t  resolve: {}\n     3\t}",
    )
    t.tool(
        "mcp__tracker__get_issue",
        {"id": "WEB-7"},
        json.dumps({"id": "WEB-7", "title": "webpack tokenizer import broken", "labels": ["build"]}),
    )
    t.say("The **webpack** config has no alias for the *tokenizer* package; adding one fixes the build.")
    t.say(SHORT)
    t.say(LONG)
    return t
