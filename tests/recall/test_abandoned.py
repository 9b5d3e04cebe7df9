"""What recall leaves out: a bug hunt written by hand (guesses, a refuted theory, a changed plan, the fix),
stored as an indexer leaves it, then recalled at SessionStart and per prompt. The fix and the guess
nothing settled are shown; the superseded plan, the refuted theory and the guesses a firm conclusion
followed are not."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.daemon.server import run_op
from cairn.recall.abandoned import abandoned
from cairn.search.hybrid import search
from cairn.search.models import SearchRequest
from cairn.store.store import Store
from tests.tools.memory import add_idea, add_span, insert

CWD = "/work/orders"
SAID = "2026-11-20T10:{:02d}:00.000Z"


async def bug_hunt(store: Store) -> dict[str, int]:
    """One session, two topic spans: the flaky checkout test (settled) and the cache (still open)."""
    ideas: dict[str, int] = {}
    async with store.db.write() as conn:
        project = await insert(conn, "INSERT INTO projects (path, name) VALUES (?, 'orders')", (CWD,))
        await conn.execute(
            "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES ('s1', ?, ?, ?)",
            (project, SAID.format(0), SAID.format(59)),
        )
        flaky = await add_span(conn, "s1", "Flaky checkout test", 1, 40)
        cache = await add_span(conn, "s1", "Price cache", 41)

        async def idea(
            name: str, intent: str, content: str, line: int, confidence: float, **cols: Any
        ) -> None:
            ideas[name] = await add_idea(
                conn,
                "s1",
                intent,
                content,
                line,
                span=flaky if line <= 40 else cache,
                confidence=confidence,
                said_at=SAID.format(line),
                **cols,
            )

        await idea(
            "pool",
            "conclusion",
            "The checkout test probably fails because the connection pool runs dry",
            3,
            0.5,
        )
        await idea(
            "clock",
            "conclusion",
            "I think the checkout test flakes on the clock skew of the CI runner",
            8,
            0.6,
        )
        await idea("retry", "decision", "Retry the checkout test three times in CI", 10, 0.8)
        await idea(
            "locks", "conclusion", "The checkout test fails on SQLite database is locked errors", 20, 0.9
        )
        await idea(
            "wal",
            "solution",
            "Fixed the checkout test: open SQLite in WAL mode with BEGIN IMMEDIATE",
            25,
            0.9,
        )
        await idea("no_retry", "decision", "Do not retry the checkout test; the WAL fix holds", 30, 0.9)
        await idea(
            "redis", "conclusion", "The price cache misses are probably caused by the Redis TTL", 45, 0.5
        )
        await conn.execute(
            "UPDATE ideas SET superseded_by = ? WHERE id = ?", (ideas["no_retry"], ideas["retry"])
        )
        await conn.execute(
            "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, 'contradicts')",
            (ideas["locks"], ideas["clock"]),
        )
    await store.sync_vectors()
    return ideas


@pytest.fixture
async def hunt(store: Store) -> dict[str, int]:
    return await bug_hunt(store)


async def test_abandoned_reads_the_marks_the_indexer_leaves(store: Store, hunt: dict[str, int]) -> None:
    left_out = await abandoned(store.db, hunt.values())
    # Superseded, contradicted, and a guess a firm conclusion of its span followed.
    assert left_out == {hunt["retry"], hunt["clock"], hunt["pool"]}
    assert await abandoned(store.db, []) == set()


async def test_session_start_shows_the_fix_and_not_the_abandoned_trail(
    store: Store, hunt: dict[str, int]
) -> None:
    # A fix is listed as the fix of something: the flaky test it answers.
    async with store.db.write() as conn:
        flaky = await add_idea(conn, "s1", "problem", "The checkout test fails now and then in CI", 1)
        await conn.execute(
            "UPDATE ideas SET answered_by = ?, answered_at = ? WHERE id = ?",
            (hunt["wal"], SAID.format(25), flaky),
        )
    result = await run_op(store, "recall", {"event": "SessionStart", "session_id": "cc", "cwd": CWD})
    text = result["additionalContext"]
    assert "Latest fixes:" in text and "WAL mode with BEGIN IMMEDIATE" in text
    assert "Do not retry the checkout test" in text and "database is locked" in text
    assert "Redis TTL" in text, "a guess nothing settled yet is still the latest word on its topic"
    assert set(result["ids"]) == {hunt["wal"], hunt["no_retry"], hunt["locks"], hunt["redis"]}
    for guess in ("connection pool", "clock skew", "three times"):
        assert guess not in text


async def test_a_prompt_recalls_the_fix_and_not_the_guesses(
    store: Store, hunt: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A low floor, so the guesses (they share the prompt's words) would be injected if not left out.
    settings = store.settings.model_copy(update={"recall_min_score": 0.05})
    monkeypatch.setattr(store, "settings", settings)
    prompt = "the checkout test is flaky again: connection pool, clock skew or database is locked?"
    request = SearchRequest(query=prompt, kind="ideas", project=CWD, min_score=0.05, limit=10)
    found = {int(r.id) for r in (await search(store.db, store.vectors, settings, request)).results}
    assert {hunt["pool"], hunt["clock"]} <= found, "control: the search itself finds the guesses"
    args = {"event": "UserPromptSubmit", "session_id": "cc", "cwd": CWD, "prompt": prompt}
    result = await run_op(store, "recall", args)
    assert result["additionalContext"] is not None
    assert {hunt["pool"], hunt["clock"], hunt["retry"]}.isdisjoint(result["ids"])
    assert hunt["locks"] in result["ids"]
