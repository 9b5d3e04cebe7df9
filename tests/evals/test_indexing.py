"""The indexing eval: the matching rules on hand-computed cases, then whole runs on a real store.

Scripted `FunctionModel` indexers return exactly chosen ideas, so the expected precision and recall of a
run are known before it starts; the offline indexer is then checked to beat a broken one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cairn.config import Settings
from cairn.evals import indexing
from cairn.evals.dataset import Dataset, EntityLabel, load_dataset
from cairn.evals.indexing import eval_settings, run_indexing
from cairn.evals.scoring import (
    StoredEntity,
    StoredIdea,
    StoredRelation,
    key_words,
    match_ideas,
    score_entities,
    similarity,
)
from cairn.evals.state import StoreState, score
from cairn.prompts import load_prompt
from tests.evals import DEMO_SECRET, make_dataset
from tests.evals.helpers import GOLD_SPECS, _scripted, use_model


@pytest.fixture
def demo(tmp_path: Path) -> Dataset:
    return load_dataset(make_dataset(tmp_path / "dataset"))


def test_key_words_drop_stopwords_and_stem_lightly() -> None:
    assert key_words("The tests were locking the databases") == {"test", "lock", "databas"}
    assert key_words("cache") == key_words("cached") == key_words("caching") == {"cach"}
    assert key_words("we do not need it") == {"not", "need"}
    assert key_words("process") == {"process"}


def test_similarity_is_the_share_of_gold_key_words_found() -> None:
    gold = "WAL journal mode busy_timeout BEGIN IMMEDIATE"
    assert similarity(gold, "Use WAL journal mode with a busy_timeout") == pytest.approx(4 / 6)
    assert similarity(gold, "nothing in common") == 0.0
    assert similarity("the of a", "anything") == 1.0


def _idea(id_: int, line: int, intent: str, content: str, **extra: Any) -> StoredIdea:
    return StoredIdea(id=id_, case="demo", line=line, intent=intent, content=content, **extra)


# Nine stored ideas against the nine demo labels, worked out by hand:
# 1 -> i1; 2 duplicates i1 (taken: false positive); 3 -> i3; 4 has the wrong intent (false positive);
# 5 -> i5; 6 -> i7, completed at 27; 7 -> i6, answered by 8; 8 -> i8; 9 says "thanks" at skip line 28.
STORED = [
    _idea(1, 2, "problem", "The orders test suite fails with database is locked"),
    _idea(2, 3, "problem", "orders test suite fails: database is locked"),
    _idea(3, 11, "conclusion", "test_concurrent_checkout opens two connections"),
    _idea(4, 12, "decision", "use WAL mode"),
    _idea(5, 13, "decision", "WAL journal mode with busy_timeout"),
    _idea(6, 20, "todo", "add a load test replaying 10k orders per minute", completed=True, resolved_line=27),
    _idea(7, 19, "question", "move orders to Postgres before Black Friday?", answered=True, answered_by=8),
    _idea(8, 27, "conclusion", "no need for Postgres for Black Friday, stay on SQLite"),
    _idea(9, 28, "context", "thanks"),
]


def _state() -> StoreState:
    return StoreState(
        ideas=STORED,
        relations=[StoredRelation(3, 5, "supersedes"), StoredRelation(8, 7, "answers")],
        span_starts={"demo": [1, 20, 25]},
        entities=[
            StoredEntity(1, ("SQLite", "sqlite"), frozenset({"demo"})),
            StoredEntity(2, ("sqlite3",), frozenset({"demo"})),  # a duplicate of SQLite
            StoredEntity(3, ("Postgres",), frozenset({"demo"})),
            StoredEntity(4, ("pytest",), frozenset({"demo"})),  # nobody labelled it
            StoredEntity(5, ("WAL",), frozenset()),  # linked to no idea of the dataset: not counted
        ],
        leaked={"demo": [DEMO_SECRET]},
    )


def test_ideas_match_one_to_one_by_line_intent_and_words(demo: Dataset) -> None:
    labels = {"demo": demo.cases[0].labels}
    mapping = match_ideas(labels, STORED, tolerance=2)
    assert mapping == {
        1: ("demo", "i1"),
        3: ("demo", "i3"),
        5: ("demo", "i5"),
        6: ("demo", "i7"),
        7: ("demo", "i6"),
        8: ("demo", "i8"),
    }
    assert match_ideas(labels, STORED, tolerance=0)[3] == ("demo", "i3")
    far = [_idea(1, 5, "problem", "The orders test suite fails with database is locked")]
    assert match_ideas(labels, far, tolerance=2) == {}


def _prf(p: float, r: float, f1: float, tp: int, fp: int, fn: int) -> dict[str, Any]:
    return {"precision": p, "recall": r, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def test_every_field_scores_as_computed_by_hand(demo: Dataset) -> None:
    scores, mapping = score(demo, _state(), tolerance=2)
    metrics = scores.totals()
    assert metrics["ideas"] == _prf(0.6667, 0.6667, 0.6667, 6, 3, 3)
    # Both stored relations join matched ideas, but neither is the gold `i3 supersedes i2`.
    assert metrics["relations"] == _prf(0.0, 0.0, 0.0, 0, 2, 1)
    # i6 answered by i8 is found; i4 answered by i5 is not.
    assert metrics["answered"] == _prf(1.0, 0.5, 0.6667, 1, 0, 1)
    assert metrics["completed"] == _prf(1.0, 1.0, 1.0, 1, 0, 0)
    # Spans at 1 and 20 pair with the topics at 2 and 19; the span at 25 is extra.
    assert metrics["topics"] == _prf(0.6667, 1.0, 0.8, 2, 1, 0)
    # SQLite and Postgres found; sqlite3 (a duplicate) and pytest cost precision; WAL and app/db.py missed.
    assert metrics["entities"] == _prf(0.5, 0.5, 0.5, 2, 2, 2)
    assert metrics["skip"] == {"ideas_at_skip_lines": 2}  # ideas 2 and 9, at skip lines 3 and 28
    assert metrics["redaction"] == {"secrets": 1, "leaked": 1}
    per_case = scores.per_case()["demo"]
    assert per_case["ideas"] == metrics["ideas"]
    assert per_case["redaction"]["leaked_secrets"] == ["sk-ant-a…"]
    assert len(mapping) == 6


def test_an_entity_named_so_wins_over_another_entitys_alias(demo: Dataset) -> None:
    labels = demo.cases[0].labels
    labels.entities = [
        EntityLabel(name="PyJWT", type="technology", aliases=["jwt"]),
        EntityLabel(name="JWT", type="technology"),
    ]
    stored = [
        StoredEntity(1, ("JWT",), frozenset({"demo"})),
        StoredEntity(2, ("PyJWT",), frozenset({"demo"})),
        StoredEntity(3, ("jwt",), frozenset({"demo"})),  # both gold entries are found: a duplicate
    ]
    counts = score_entities({"demo": labels}, stored)["demo"]
    assert (counts.tp, counts.fp, counts.fn) == (2, 1, 0)


def test_answered_counts_an_answer_at_the_right_line_without_the_idea(demo: Dataset) -> None:
    state = _state()
    # The WAL question answered at line 13 by a message that left no idea pointing at i5.
    state.ideas = [
        *STORED[:3],
        _idea(4, 12, "question", "should we use WAL mode?", answered=True, resolved_line=14),
    ]
    metrics = score(demo, state, tolerance=2)[0].totals()
    assert metrics["answered"]["tp"] == 1


def test_misses_show_the_stored_ideas_near_each_missed_label(demo: Dataset) -> None:
    from cairn.evals.scoring import misses

    labels = {"demo": demo.cases[0].labels}
    mapping = match_ideas(labels, STORED, tolerance=2)
    missed = {m["key"]: m for m in misses(labels, STORED, mapping, tolerance=2)["demo"]}
    assert set(missed) == {"i2", "i4", "i9"}
    near = missed["i4"]["near"]
    assert [n["id"] for n in near] == [3, 4, 5]
    # The right words at the right line, under the wrong intent: what the labeller needs to see.
    assert near[1]["intent"] == "decision" and near[1]["similarity"] == 1.0


# Whole runs on a store.


async def test_an_indexer_storing_exactly_the_labels_scores_perfect_ideas(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_model(monkeypatch, "scripted", FunctionModel(_scripted(GOLD_SPECS)))
    run = await run_indexing(demo, tmp_path / "store", model="scripted")
    assert run.metrics["ideas"] == _prf(1.0, 1.0, 1.0, 9, 0, 0)
    assert run.metrics["skip"] == {"ideas_at_skip_lines": 0}
    assert run.metrics["redaction"] == {"secrets": 1, "leaked": 0}
    assert run.misses == {}
    assert sorted(key for _case, key in run.idea_map.values()) == sorted(f"i{n}" for n in range(1, 10))
    assert list(run.case_of_file.values()) == ["demo"]
    assert Path(next(iter(run.case_of_file))).parent == tmp_path.resolve() / "store" / "sessions"
    assert (run.home / "cairn.db").is_file()  # kept for the retrieval eval
    assert run.model == "scripted" and run.prompt_version == load_prompt().id
    assert run.cost["batches"] >= 1 and run.cost["failed_runs"] == 0
    assert run.cost["dollars"] is None  # no price known for "scripted"


async def test_wrong_lines_and_intents_score_exactly_lower(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = list(GOLD_SPECS)
    specs[0] = (2, "decision", specs[0][2])  # i1 is a problem, stored as a decision
    specs[8] = (25, "decision", specs[8][2])  # i9 said at 29, stored at 25
    use_model(monkeypatch, "scripted", FunctionModel(_scripted(specs)))
    run = await run_indexing(demo, tmp_path / "store", model="scripted")
    assert run.metrics["ideas"] == _prf(0.7778, 0.7778, 0.7778, 7, 2, 2)
    assert sorted(m["key"] for m in run.misses["demo"]) == ["i1", "i9"]


async def test_offline_beats_a_broken_indexer(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline = await run_indexing(demo, tmp_path / "offline")
    assert offline.model == "offline"
    assert offline.metrics["ideas"]["f1"] > 0.5
    assert offline.metrics["redaction"]["leaked"] == 0
    assert offline.cost["messages"] > 0 and offline.cost["input_tokens"] > 0
    use_model(monkeypatch, "broken", FunctionModel(_scripted([])))
    broken = await run_indexing(demo, tmp_path / "broken", model="broken")
    assert broken.metrics["ideas"] == _prf(1.0, 0.0, 0.0, 0, 0, 9)
    assert broken.metrics["ideas"]["f1"] < offline.metrics["ideas"]["f1"]
    assert broken.metrics["entities"]["recall"] < offline.metrics["entities"]["recall"]


async def test_user_settings_do_not_leak_into_the_eval(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_MODEL", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("CAIRN_MAX_TOOL_CALLS", "0")
    monkeypatch.setenv("CAIRN_MODEL_BASE_URL", "http://127.0.0.1:9")
    settings = eval_settings(tmp_path / "home")
    assert settings.model is None and settings.max_tool_calls == 15 and settings.model_base_url is None
    user = Settings.load(tmp_path / "user")
    assert eval_settings(tmp_path / "home", user).model_base_url == "http://127.0.0.1:9"
    run = await run_indexing(demo, tmp_path / "store")
    assert run.model == "offline" and run.cost["failed_runs"] == 0


async def test_the_store_directory_must_be_empty(demo: Dataset, tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "old.db").write_text("")
    with pytest.raises(ValueError, match="empty directory"):
        await run_indexing(demo, tmp_path / "store")


async def test_an_indexing_pass_that_stops_early_scores_nothing(
    demo: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that cannot be reached (or a spent budget) stops the pass: partial scores would read as
    the model's quality, so the eval says why and writes none."""

    def unreachable(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise ModelAPIError("down", "the API is unreachable")

    use_model(monkeypatch, "down", FunctionModel(unreachable))
    with pytest.raises(indexing.IndexingStoppedError, match="the API is unreachable"):
        await run_indexing(demo, tmp_path / "store", model="down")


async def test_a_transcript_ending_without_a_newline_is_read_whole(tmp_path: Path) -> None:
    """The eval copies each case's transcript just before reading it: the copy's fresh mtime must not
    keep its last line (complete, newline missing) out of the store, as capture does for a live file."""
    whole = await run_indexing(load_dataset(make_dataset(tmp_path / "whole")), tmp_path / "a")
    root = make_dataset(tmp_path / "cut")
    transcript = root / "sessions" / "demo.jsonl"
    transcript.write_bytes(transcript.read_bytes().rstrip(b"\n"))
    cut = await run_indexing(load_dataset(root), tmp_path / "b")
    assert cut.cost["messages"] == whole.cost["messages"]
    assert cut.metrics["ideas"] == whole.metrics["ideas"]
