"""Entities never hold a redaction label or a piece of a path — from any model (the executor rejects
them, counted like every rejection) and from the offline indexer (it never proposes them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.agent.batches import plan_batches
from cairn.agent.entities import path_fragment
from cairn.agent.executor import apply
from cairn.agent.offline.build import build_result
from cairn.agent.offline.entities import extract
from cairn.agent.offline.lookups import Known
from cairn.agent.schema import BatchMessage, IndexBatch, IndexResult, SessionUpdate
from cairn.config import Settings
from cairn.store.store import Store
from cairn.transcripts.redact import redact
from tests.agent.executor_helpers import ASSISTANT, SESSION_A, USER, Transcripts, capture, run_record

ANTHROPIC_KEY = "sk-ant-api03-" + "x7Q" * 30
GITHUB_TOKEN = "ghp_" + "a1B2" * 9


def _said() -> list[tuple[str, str]]:
    """A session that pastes two secrets and walks paths, redacted as capture stores it."""
    return [
        (USER, f"The deploy fails with key {ANTHROPIC_KEY} and token {GITHUB_TOKEN}, see ~/.claude/projects"),
        (
            ASSISTANT,
            "The `anthropic_api_key` setting reads the key; I moved the config from /Users/dev/app/src/ to "
            "`app/settings.py` and the SQLite store stays in .claude/proj.",
        ),
    ]


def test_capture_redacts_to_labels() -> None:
    text = redact(_said()[0][1])
    assert "[REDACTED:anthropic_api_key]" in text and "[REDACTED:github_token]" in text


async def test_the_executor_rejects_labels_and_path_pieces_and_counts_them(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    t = Transcripts(tmp_path / "projects")
    t.add(SESSION_A, *_said())
    await capture(store, settings, t)
    (planned,) = await plan_batches(store.db)
    names = [
        ("github_token", "concept"),  # the batch writes it only inside its label
        ("[REDACTED:anthropic_api_key]", "concept"),
        ("REDACTED", "concept"),
        ("src/", "file"),
        (".claude/proj", "file"),
        ("Users", "concept"),
        ("anthropic_api_key", "concept"),  # also written as a setting's name: a real name
        ("SQLite", "technology"),
        ("app/settings.py", "file"),
    ]
    idea = {
        "session": SESSION_A,
        "source_file": str(t.path(SESSION_A)),
        "source_line": 2,
        "content": "The anthropic_api_key setting reads the deploy key from app/settings.py.",
        "intent": "conclusion",
        "entities": [{"name": n, "type": kind} for n, kind in names],
    }
    report = await apply(store.db, planned, IndexResult.model_validate({"ideas": [idea]}), run_record())

    stored = {r[0] for r in await store.db.fetchall("SELECT canonical_name FROM entities")}
    assert stored == {"anthropic_api_key", "SQLite", "app/settings.py"}
    (rejected,) = await store.db.fetchall("SELECT rejected_items FROM index_runs")
    refused = {item["item"]["name"]: item["reason"] for item in json.loads(rejected[0])}
    assert set(refused) == {
        "github_token",
        "[REDACTED:anthropic_api_key]",
        "REDACTED",
        "src/",
        ".claude/proj",
        "Users",
    }
    assert all(item.startswith("entity name is") for item in refused.values())
    assert report.rejected == len(refused)


def test_the_offline_extractor_names_no_label() -> None:
    text = redact(
        f"export ANTHROPIC_API_KEY={ANTHROPIC_KEY} and GITHUB_TOKEN={GITHUB_TOKEN} for busy_timeout"
    )
    names = {e.name for e in extract(text)}
    assert "busy_timeout" in names, "the extractor still works on the rest"
    assert not names & {"anthropic_api_key", "github_token", "REDACTED"}


def test_the_offline_indexer_stores_no_label_or_path_piece(tmp_path: Path) -> None:
    said = [
        (1, "user", redact(f"Why does `npm run deploy` fail with {ANTHROPIC_KEY}? The REDACTED token too.")),
        (
            2,
            "assistant",
            redact(f"It fails because GITHUB_TOKEN={GITHUB_TOKEN} expired in /Users/dev/.claude/proj."),
        ),
        (3, "user", "I think the REDACTED key in src/ and Users is the cause."),
        (4, "assistant", "Decided: rotate the REDACTED token and keep it out of src/ and `.claude/proj`."),
    ]
    batch = IndexBatch(
        updates=[
            SessionUpdate(
                session="s-1",
                file_path="/t/s-1.jsonl",
                messages=[BatchMessage(line=n, role=role, content=text) for n, role, text in said],
            )
        ]
    )
    result = build_result(batch, Known())
    names = {e.name for idea in result.ideas for e in idea.entities}
    assert not names & {"anthropic_api_key", "github_token", "REDACTED", "src/", ".claude/proj", "Users"}


@pytest.mark.parametrize(
    ("name", "kind", "fragment"),
    [
        ("src/", "file", True),
        ("src/", "concept", True),
        (".claude/proj", "file", True),
        (".claude/proj", "concept", True),
        ("Users", "concept", True),
        ("/Users/dev", "file", True),
        ("src/components", "file", True),
        (".claude", "concept", True),
        ("app/page.tsx", "file", False),
        ("/Users/dev/app/page.tsx", "file", False),
        ("tests/conftest.py", "file", False),
        ("Dockerfile", "file", False),
        (".env", "file", False),
        ("CI/CD", "concept", False),
        ("I/O", "concept", False),
        ("pydantic-ai", "technology", False),
    ],
)
def test_path_fragments(name: str, kind: str, fragment: bool) -> None:
    assert path_fragment(name, kind) is fragment
