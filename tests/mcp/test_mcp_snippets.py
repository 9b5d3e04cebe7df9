"""Issue 42 for the coding agent: a compact search result's preview is plain text, and a message says
what it is — its origin, and for a tool call or result its call (and `failed` when the call failed) —
while ideas and spans stay as small as before."""

from __future__ import annotations

from pathlib import Path

from cairn.config import Settings
from cairn.evals.shown import has_escape, has_raw_json
from cairn.mcp.server import compact_page
from cairn.store.store import Store
from tests.helpers.snippets import found, synced


async def test_compact_results_name_the_origin_and_call_and_preview_plain_text(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    await synced(store, settings, tmp_path)
    page = compact_page((await found(store, "webpack tokenizer")).model_dump(mode="json"))

    by_id = {r["id"]: r for r in page["results"]}
    failing = [r for r in by_id.values() if r.get("failed")]
    assert failing == [
        {
            "id": failing[0]["id"],
            "kind": "message",
            "intent": "user",
            "date": "2025-09-03",
            "score": failing[0]["score"],
            "preview": "$ cd web npm run build → exit 1: ERROR in ./src/tokenizer.ts Module not found: "
            "webpack cannot resolve 'tiktoken/lite'",
            "origin": "tool_result",
            "call": "Bash: cd web npm run build",
            "failed": True,
            # The reply that ended its turn: what came of the failure.
            "reply": failing[0]["reply"],
        }
    ]
    assert failing[0]["reply"].startswith("m")
    prompt = next(r for r in by_id.values() if r.get("origin") == "prompt")
    assert "call" not in prompt and "failed" not in prompt
    assert prompt["preview"] == "the webpack build fails on the tokenizer import *again*, can you look?"
    assert all(not has_escape(r["preview"]) and not has_raw_json(r["preview"]) for r in by_id.values())

    # Ideas and spans stay as small as before: no origin, call or failed keys at all.
    idea = {"id": "3", "kind": "idea", "intent": "decision", "said_at": None, "score": 0.5, "preview": "x",
            "origin": None, "call": None, "failed": False}  # fmt: skip
    assert set(compact_page({"results": [idea], "total": 1})["results"][0]) == {
        "id", "kind", "intent", "date", "score", "preview"
    }  # fmt: skip
