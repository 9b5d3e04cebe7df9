"""`cairn index` end to end: the offline indexer on real transcripts, and Claude through a fake API."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from cairn.agent.schema import Idea, IndexResult, Relation
from cairn.prompts import load_prompt
from tests.agent.fake_anthropic import FakeAnthropic
from tests.helpers.cli import cairn, cairn_json
from tests.helpers.homes import IndexedViewer
from tests.helpers.paths import VIEWER_SESSIONS

VIEWER = [str(p) for p in VIEWER_SESSIONS]
DEMO = Path(__file__).resolve().parents[1] / "cairn" / "demo" / "demo-session.jsonl"


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9+#]", "", name.lower())


def test_offline_index_of_real_transcripts_then_nothing_more(
    cairn_home: Path, viewer_index: IndexedViewer
) -> None:
    # The first `cairn index *VIEWER --model offline` into a fresh home is the shared run's.
    shutil.copytree(viewer_index.home, cairn_home)
    first = viewer_index.report
    applied = first["applied"]
    assert first["runs_failed"] == 0 and first["runs_ok"] == first["batches"] > 0
    assert len([n for n in applied["ideas_by_intent"].values() if n]) >= 3, applied
    assert applied["spans_opened"] >= 3
    assert applied["entities_created"] > 0
    assert first["input_tokens"] > 0 and first["requests"] >= 2 * first["batches"]

    again = cairn_json("index", *VIEWER, "--model", "offline")
    assert again["messages_added"] == 0 and again["batches"] == 0
    assert again["applied"]["ideas_by_intent"] == {}

    ideas = cairn_json("ideas", "--limit", "1000")
    assert len(ideas) == sum(applied["ideas_by_intent"].values()) - _superseded(applied)
    entities = cairn_json("entities", "--limit", "1000")
    keys = [(_key(e["name"]), e["type"]) for e in entities if e["type"] != "file"]
    assert len(keys) == len(set(keys)), "entities are deduplicated by case and punctuation"
    assert cairn_json("topics")
    runs = _rows(cairn_home, "SELECT model, prompt_version, outcome FROM index_runs")
    assert runs and all(r == ("offline", load_prompt().id, "ok") for r in runs)


def _superseded(applied: dict[str, object]) -> int:
    relations = applied["relations_by_type"]
    assert isinstance(relations, dict)
    return int(relations.get("supersedes", 0))


def _rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "cairn.db") as conn:
        return list(conn.execute(sql))


@pytest.mark.process
def test_claude_through_a_fake_anthropic_server(cairn_home: Path, tmp_path: Path) -> None:
    demo = tmp_path / "0b7c5e2a-3d41-4c8e-9f6a-cafe00000001.jsonl"
    shutil.copy(DEMO, demo)
    cairn("sync", "--no-index", str(demo))
    [(line, session)] = _rows(
        cairn_home, "SELECT line, session_id FROM messages WHERE text LIKE 'Decision: use WAL%'"
    )
    result = IndexResult(
        ideas=[
            Idea(
                session=session,
                source_file=str(demo.resolve()),
                source_line=line,
                intent="decision",
                content="Use WAL mode, busy_timeout and BEGIN IMMEDIATE for every SQLite write.",
                confidence=0.9,
                importance=1.0,
                entities=[{"name": "SQLite", "type": "technology"}],
            ),
            # Two items the executor must reject: a line outside the batch, an idea id that does not exist.
            Idea(
                session=session,
                source_file=str(demo.resolve()),
                source_line=99_999,
                intent="context",
                content="A line that is not in the batch.",
                confidence=0.9,
            ),
        ],
        relations=[
            Relation(from_session=session, from_line=line, to_idea_id=424242, relation_type="builds_on")
        ],
    )
    with FakeAnthropic() as fake:
        fake.tool_use("get_open_questions", {"session": session}).final(result)
        env = {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key", "ANTHROPIC_BASE_URL": fake.base_url}
        # A real process: the HTTP client as a user's runs it, outside this run's ban on model requests.
        out = cairn_json(
            "index", str(demo), "--model", "anthropic:claude-haiku-4-5", env=env, real_process=True
        )
    assert out["runs_ok"] == 1
    assert out["applied"]["ideas_by_intent"] == {"decision": 1}
    assert out["rejected"] == 2
    assert len(fake.requests) == 2
    assert all(req["max_tokens"] > 0 for req in fake.requests)
    [(model, outcome, rejected)] = _rows(cairn_home, "SELECT model, outcome, rejected_items FROM index_runs")
    assert (model, outcome) == ("anthropic:claude-haiku-4-5", "ok")
    assert {item["field"] for item in json.loads(str(rejected))} == {"ideas", "relations"}
    [stored] = cairn_json("ideas", "--intent", "decision")
    assert stored["content"].startswith("Use WAL mode") and stored["source_line"] == line
