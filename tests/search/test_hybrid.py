"""Hybrid search on a real store with controlled data: tiers, filters, supersession, recency, paging,
hostile queries, the decisive shortcut, degradation without vectors and usage reinforcement."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosqlite
import pytest

from cairn.search import hybrid
from cairn.search.errors import BadContinuationError
from cairn.search.hybrid import asks_question, search
from cairn.search.keyword import keyword_hits
from cairn.search.models import SearchPage, SearchRequest
from cairn.store.store import Store, message_hash
from tests.search.helpers import ids
from tests.tools.memory import add_idea, add_span, insert

NOW = datetime.now(UTC)


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


async def add_message(
    conn: aiosqlite.Connection, session: str, file_id: int, line: int, text: str, **cols: Any
):
    role = cols.pop("role", "user")
    kind = cols.pop("kind", "text")
    names = ["session_id", "file_id", "line", "end_line", "byte_start", "byte_end", "role", "kind", "text"]
    values = [session, file_id, line, line, line * 100, line * 100 + 50, role, kind, text]
    names += ["content_hash", "timestamp", *cols]
    values += [message_hash(role, kind, text), cols.pop("timestamp", ago(1)), *cols.values()]
    marks = ", ".join("?" * len(names))
    return await insert(conn, f"INSERT INTO messages ({', '.join(names)}) VALUES ({marks})", tuple(values))


class World:
    """Two projects, three sessions; ids by name."""

    def __init__(self) -> None:
        self.ideas: dict[str, int] = {}
        self.spans: dict[str, int] = {}
        self.messages: dict[str, int] = {}
        self.files: dict[str, int] = {}


async def build(store: Store) -> World:
    w = World()
    async with store.db.write() as conn:
        api = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/api', 'api')")
        web = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/web', 'web')")
        await conn.executemany(
            "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
            [("a1", api, ago(40), ago(39)), ("a2", api, ago(2), ago(1)), ("w1", web, ago(5), ago(4))],
        )
        for session in ("a1", "a2", "w1"):
            w.files[session] = await insert(
                conn,
                "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)",
                (f"/t/{session}.jsonl", session),
            )

        def idea(name: str, session: str, intent: str, content: str, line: int, **cols: Any) -> Any:
            cols.setdefault("said_at", ago(1))
            return add_idea(conn, session, intent, content, line, file_id=w.files[session], **cols)

        w.spans["tx"] = await add_span(
            conn, "a2", "Database transactions", 1, 30, summary="How writes are grouped"
        )
        w.ideas["phrase"] = await idea(
            "phrase", "a2", "decision", "We use transactions for operations", 3, span=w.spans["tx"]
        )
        w.ideas["near"] = await idea(
            "near",
            "a2",
            "context",
            "Operations in one batch: we use nested transactions there",
            4,
            span=w.spans["tx"],
        )
        w.ideas["terms"] = await idea(
            "terms",
            "a2",
            "context",
            "We use a queue. Much later, after many unrelated words about caching, retries, logging, "
            "metrics and dashboards, operations appear, and finally transactions too",
            5,
        )
        w.ideas["auth"] = await idea(
            "auth", "a2", "solution", "Authentication tokens are refreshed by the gateway", 6
        )
        w.ideas["login"] = await idea(
            "login", "w1", "decision", "LoginButton.tsx renders the sign-in button on the landing page", 2
        )
        w.ideas["old_cache"] = await idea(
            "old", "a1", "decision", "Cache the rendered pages in Redis", 7, said_at=ago(40)
        )
        w.ideas["new_cache"] = await idea("new", "a2", "decision", "Cache the rendered pages in memcached", 8)
        await conn.execute(
            "UPDATE ideas SET superseded_by = ? WHERE id = ?", (w.ideas["new_cache"], w.ideas["old_cache"])
        )
        w.ideas["stale"] = await idea(
            "stale", "a1", "conclusion", "The flaky test fails from a timezone bug", 9, said_at=ago(60)
        )
        w.ideas["fresh"] = await idea(
            "fresh", "a2", "conclusion", "The flaky test fails from a timezone bug", 9, said_at=ago(1)
        )
        await conn.execute(
            "INSERT INTO relations (from_idea_id, to_idea_id, relation_type) VALUES (?, ?, 'builds_on')",
            (w.ideas["near"], w.ideas["phrase"]),
        )
        w.messages["said"] = await add_message(
            conn, "a2", w.files["a2"], 3, "We use transactions for operations, agreed"
        )
        w.messages["port"] = await add_message(
            conn,
            "w1",
            w.files["w1"],
            10,
            "The dev server listens on port 5173 because vite picks it",
            role="assistant",
        )
        w.messages["noise"] = await add_message(conn, "w1", w.files["w1"], 11, "ok port 5173", is_noise=1)
    await store.sync_vectors()
    return w


@pytest.fixture
async def world(store: Store) -> World:
    return await build(store)


async def run(store: Store, query: str = "", **kwargs: Any) -> SearchPage:
    record = kwargs.pop("record_usage", False)
    vectors = kwargs.pop("vectors", store.vectors)
    return await search(
        store.db, vectors, store.settings, SearchRequest(query=query, **kwargs), record_usage=record
    )


async def test_phrase_ranks_above_near_above_scattered_terms(store: Store, world: World) -> None:
    page = await run(store, "use transactions for operations", mode="keyword", kind="ideas", min_score=0)
    order = ids(page)
    expected = [str(world.ideas[n]) for n in ("phrase", "near", "terms")]
    assert [i for i in order if i in expected] == expected
    strengths = {r.id: r.scores.bm25 for r in page.results}
    assert [strengths[i] for i in expected] == [1.0, 0.85, 0.7]
    assert all(r.match == "keyword" and r.scores.vector is None for r in page.results)


async def test_prefix_matching_finds_partial_words(store: Store, world: World) -> None:
    page = await run(store, "authent", mode="keyword")
    assert ids(page)[0] == str(world.ideas["auth"])
    top = page.results[0]
    assert [top.snippet[a:b] for a, b in top.highlights] == ["Authentication"]


async def test_semantic_mode_finds_a_paraphrase_without_shared_words(store: Store, world: World) -> None:
    page = await run(store, "login button component", mode="semantic", kind="ideas")
    assert ids(page)[0] == str(world.ideas["login"])
    assert page.results[0].match == "semantic"
    assert page.results[0].scores.bm25 is None and page.results[0].scores.vector > 0.5


async def test_hybrid_merges_keyword_and_vector_rankings(store: Store, world: World) -> None:
    # Two equally strong keyword matches: not decisive, so vectors run and both signals see them.
    page = await run(store, "flaky test timezone", kind="ideas")
    assert not page.vector_skipped
    top = page.results[0]
    assert top.id == str(world.ideas["fresh"])
    assert top.match == "both" and top.scores.bm25 and top.scores.vector


async def test_decisive_keyword_match_skips_the_vector_search(store: Store, world: World) -> None:
    page = await run(store, "refreshed by the gateway", kind="ideas")
    assert page.vector_skipped
    assert ids(page)[0] == str(world.ideas["auth"])
    assert any("decisive" in n for n in page.notices)


async def test_superseded_ideas_are_left_out_unless_asked_for(store: Store, world: World) -> None:
    old, new = str(world.ideas["old_cache"]), str(world.ideas["new_cache"])
    page = await run(store, "cache the rendered pages", kind="ideas")
    assert new in ids(page) and old not in ids(page)
    page = await run(store, "cache the rendered pages", kind="ideas", include_superseded=True, min_score=0)
    by_id = {r.id: r for r in page.results}
    assert by_id[old].superseded and by_id[old].superseded_by is not None
    assert by_id[old].superseded_by.id == new
    assert "memcached" in by_id[old].superseded_by.preview
    assert by_id[old].scores.boost == pytest.approx(store.settings.search_boosts["decision"] * 0.5)
    assert ids(page).index(new) < ids(page).index(old)


async def test_recent_ideas_rank_above_old_ones_with_the_same_match(store: Store, world: World) -> None:
    # The same sentence said 60 days and a day ago: one result, the recent one, said twice.
    page = await run(store, "flaky test timezone bug", kind="ideas")
    fresh, stale = str(world.ideas["fresh"]), str(world.ideas["stale"])
    assert fresh in ids(page) and stale not in ids(page)
    by_id = {r.id: r for r in page.results}
    assert by_id[fresh].repeats == 2 and by_id[fresh].last_said_at == by_id[fresh].said_at
    older = await run(store, "flaky test timezone bug", kind="ideas", until=NOW - timedelta(days=10))
    assert by_id[fresh].scores.recency > 0.9 > 0.3 > older.results[0].scores.recency > 0  # no hard cut-off


async def test_filters_project_session_intent_kind_and_time(store: Store, world: World) -> None:
    everything = await run(store, "button transactions cache", min_score=0, limit=100)
    assert {r.session.project for r in everything.results if r.session} == {"/work/api", "/work/web"}

    by_name = await run(store, "button transactions cache", project="web", min_score=0, limit=100)
    by_path = await run(store, "button transactions cache", project="/work/web", min_score=0, limit=100)
    assert ids(by_name) == ids(by_path) and by_name.results
    assert {r.session.id for r in by_name.results} == {"w1"}

    session = await run(store, "transactions", session="a2", min_score=0, limit=100)
    assert session.results and {r.session.id for r in session.results} == {"a2"}

    intents = await run(store, "transactions cache button", intents=["decision"], min_score=0, limit=100)
    assert intents.results and {(r.kind, r.intent) for r in intents.results} == {("idea", "decision")}

    for kind, expected in (("ideas", "idea"), ("spans", "span"), ("messages", "message")):
        page = await run(store, "transactions port", kind=kind, min_score=0, limit=100)
        assert page.results and {r.kind for r in page.results} == {expected}

    recent = await run(
        store, "flaky test timezone bug", kind="ideas", since=NOW - timedelta(days=10), min_score=0
    )
    assert ids(recent) == [str(world.ideas["fresh"])]
    older = await run(
        store, "flaky test timezone bug", kind="ideas", until=NOW - timedelta(days=10), min_score=0
    )
    assert ids(older) == [str(world.ideas["stale"])]

    nowhere = await run(store, "transactions", project="no-such-project")
    assert nowhere.results == [] and any("no-such-project" in n for n in nowhere.notices)


async def test_min_score_cuts_weak_results(store: Store, world: World) -> None:
    loose = await run(store, "transactions cache button", min_score=0, limit=100)
    scores = sorted(r.score for r in loose.results)
    threshold = scores[len(scores) // 2]
    strict = await run(store, "transactions cache button", min_score=threshold, limit=100)
    assert set(ids(strict)) < set(ids(loose))
    assert strict.results and all(r.score >= threshold for r in strict.results)


async def test_result_carries_context_parts_and_location(store: Store, world: World) -> None:
    page = await run(store, "use transactions for operations", kind="ideas")
    top = page.results[0]
    assert top.id == str(world.ideas["phrase"]) and top.intent == "decision"
    assert top.session is not None
    assert (top.session.id, top.session.project, top.session.project_name) == ("a2", "/work/api", "api")
    assert top.session.started_at is not None
    assert (top.session.topic, top.session.topic_id) == ("Database transactions", f"s{world.spans['tx']}")
    assert (top.source.file, top.source.line) == ("/t/a2.jsonl", 3)
    assert top.related == 1
    assert top.content == "We use transactions for operations" and len(top.preview) <= 200
    assert top.snippet == top.content and "transactions" in [top.snippet[a:b] for a, b in top.highlights]
    parts = top.scores
    assert 0 < parts.fusion <= 1 and 0 < parts.recency <= 1 and parts.importance == 0.5
    assert 0 < top.score <= 1


async def test_a_message_an_idea_came_from_is_folded_into_the_idea(store: Store, world: World) -> None:
    page = await run(store, "use transactions for operations", min_score=0, limit=100)
    assert str(world.ideas["phrase"]) in ids(page)
    assert f"m{world.messages['said']}" not in ids(page)
    only_messages = await run(store, "use transactions for operations", kind="messages", min_score=0)
    assert ids(only_messages) == [f"m{world.messages['said']}"]


async def test_noise_messages_are_never_returned(store: Store, world: World) -> None:
    page = await run(store, "port 5173", kind="messages", min_score=0, limit=100)
    assert ids(page) == [f"m{world.messages['port']}"]
    assert page.results[0].intent == "assistant"


async def test_pages_never_repeat_and_keep_their_total(store: Store, world: World) -> None:
    async with store.db.write() as conn:
        for n in range(23):
            await add_idea(conn, "a2", "context", f"Retry policy note number {n} about retries", 100 + n)
    await store.sync_vectors()
    first = await run(store, "retry policy", kind="ideas", limit=10, record_usage=True)
    total = first.total
    assert 23 <= total <= 30 and len(first.results) == 10 and first.next_token
    async with store.db.write() as conn:  # written while the caller pages: not part of these pages
        await add_idea(conn, "a2", "decision", "Retry policy: exponential backoff", 200)
    second = await run(store, limit=10, continuation=first.next_token, record_usage=True)
    third = await run(store, limit=10, continuation=second.next_token, record_usage=True)
    pages = [first, second, third]
    while pages[-1].next_token:
        pages.append(await run(store, limit=10, continuation=pages[-1].next_token))
    seen = [i for page in pages for i in ids(page)]
    assert len(seen) == len(set(seen)) == total
    assert {page.total for page in pages} == {total}
    assert second.query == "retry policy"
    used = await store.db.fetchall(
        "SELECT usage_count FROM ideas WHERE content LIKE 'Retry policy note%' AND id IN "
        "(SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in ids(first) + ids(second) + ids(third)]),),
    )
    assert len(used) == 23
    assert {row[0] for row in used} == {1}


async def test_usage_is_recorded_only_when_asked(store: Store, world: World) -> None:
    phrase = world.ideas["phrase"]
    await run(store, "use transactions for operations", kind="ideas", record_usage=False)
    assert await store.db.scalar("SELECT usage_count FROM ideas WHERE id = ?", (phrase,)) == 0
    await run(store, "use transactions for operations", kind="ideas", record_usage=True)
    row = await store.db.fetchone("SELECT usage_count, last_used_at FROM ideas WHERE id = ?", (phrase,))
    assert row[0] == 1 and row[1] is not None
    page = await run(store, "use transactions for operations", kind="ideas")
    assert page.results[0].scores.usage == 1


async def test_a_damaged_token_is_a_clear_error(store: Store, world: World) -> None:
    for token in ("nonsense", "eJzLSM3JyQcABiwCFQ", ""):
        if not token:
            continue
        with pytest.raises(BadContinuationError, match="repeat the search"):
            await run(store, continuation=token)


HOSTILE = [
    '"',
    "NEAR(",
    "*",
    "-x",
    "AND",
    "",
    "   ",
    "a" * 10_240,
    "x\x00y\x07z\x1b[31m",
    "数据库 迁移",
    "тест кэша",
    'col:value OR "unbalanced',
    "^start NOT end",
    "(((",
    "transactions*",
    "word " * 2_000,
]


async def test_hostile_queries_never_break_fts(store: Store, world: World) -> None:
    for mode in ("hybrid", "keyword", "semantic"):
        for query in HOSTILE:
            page = await run(store, query, mode=mode)
            assert page.total >= len(page.results), (mode, query[:20])
            if not query.strip() or query == "*":
                assert page.results == [] and page.notices, (mode, query)
    page = await run(store, 'transactions" OR "x', mode="keyword", kind="ideas")
    assert str(world.ideas["phrase"]) in ids(page)


async def test_without_vectors_search_degrades_to_keywords(store: Store, world: World) -> None:
    page = await run(store, "use transactions for operations", vectors=None, kind="ideas")
    assert ids(page)[0] == str(world.ideas["phrase"])
    assert page.notices
    semantic = await run(
        store, "use transactions for operations", mode="semantic", vectors=None, kind="ideas"
    )
    assert ids(semantic)[0] == str(world.ideas["phrase"])


async def test_a_failing_vector_index_degrades_to_keywords(store: Store, world: World) -> None:
    class Broken:
        def embed(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("chroma is down")

    page = await run(store, "sign in button transactions", vectors=Broken(), min_score=0)
    assert page.results and all(r.match == "keyword" for r in page.results)
    assert any("chroma is down" in n for n in page.notices)
    assert page.vectors_unavailable is not None and "chroma is down" in page.vectors_unavailable
    assert page.total == len(page.results) if page.next_token is None else page.total > len(page.results)


async def conversation_store(store: Store, lines: dict[str, list[tuple[int, str, str]]]) -> dict[str, int]:
    """Sessions of one project, each a file of (line, role, text) messages; message ids by 'session:line'."""
    found: dict[str, int] = {}
    async with store.db.write() as conn:
        project = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/chat', 'chat')")
        for session, messages in lines.items():
            await conn.execute(
                "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES (?, ?, ?, ?)",
                (session, project, ago(3), ago(2)),
            )
            file_id = await insert(
                conn,
                "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)",
                (f"/t/{session}.jsonl", session),
            )
            for line, role, text in messages:
                found[f"{session}:{line}"] = await add_message(conn, session, file_id, line, text, role=role)
    await store.sync_vectors()
    return found


async def test_a_rare_query_word_outweighs_several_common_ones(store: Store) -> None:
    # "go" and "soon" are in every other turn; "roadtrip" in one. A turn with the two common words
    # matched as many terms as the one with the rare word would, unweighted, and ranked above it.
    chatter = [(n, "user", f"Talk soon, I have to go now, see you at {n}") for n in range(1, 40)]
    found = await conversation_store(
        store,
        {
            "s1": [*chatter, (50, "assistant", "Melanie: off I go swimming, talk soon")],
            "s2": [(3, "assistant", "Melanie: that roadtrip last weekend was wild")],
        },
    )
    page = await run(store, "Would Melanie go on another roadtrip soon?", mode="keyword", kind="messages")
    assert ids(page)[0] == f"m{found['s2:3']}"


async def test_a_turn_whose_neighbours_match_outranks_a_lone_match(store: Store) -> None:
    # Both answers hold "applied" only; the one under a question about adoption agencies is the answer.
    found = await conversation_store(
        store,
        {
            # Not the same text, or the two would be one result said twice (`fold_repeats`).
            "gym": [(5, "user", "I applied there last week, it went fine")],
            "adopt": [
                (10, "assistant", "Which adoption agencies did you look at in the end?"),
                (11, "user", "I applied there last week, it went well"),
            ],
        },
    )
    query = "When did Caroline apply to adoption agencies?"
    answer, lone = f"m{found['adopt:11']}", f"m{found['gym:5']}"
    page = await run(store, query, mode="keyword", kind="messages", min_score=0)
    order = ids(page)
    assert order.index(answer) < order.index(lone)

    without = store.settings.model_copy(update={"search_context_weight": 0.0, "search_answer_weight": 0.0})
    request = SearchRequest(query=query, mode="keyword", kind="messages", min_score=0)
    plain = await search(store.db, store.vectors, without, request, record_usage=False)
    scores = {r.id: r.score for r in plain.results}
    assert scores[answer] == scores[lone]  # the same text: only its context told them apart


async def test_a_kind_with_no_rows_yet_answers_empty(store: Store) -> None:
    # No ideas at all: the term weights count over an empty table (max(id) is NULL there).
    found = await conversation_store(store, {"s": [(1, "user", "the cache keeps sessions warm")]})
    page = await run(store, "cache sessions warm", mode="keyword", kind="all")
    assert ids(page) == [f"m{found['s:1']}"]


async def test_a_compaction_summary_ranks_below_the_turn_it_restates(store: Store) -> None:
    # A compaction summary restates a whole session: it holds the query's words wherever the answer is.
    found = await conversation_store(
        store, {"s": [(4, "assistant", "The flaky upload test fails from a timezone bug in the fixture")]}
    )
    async with store.db.write() as conn:
        file_id = (await (await conn.execute("SELECT id FROM transcript_files")).fetchone())[0]
        summary = await add_message(
            conn,
            "s",
            file_id,
            90,
            "Summary: the flaky upload test fails from a timezone bug in the fixture; we also fixed CI",
            kind="compact_summary",
        )
    await store.sync_vectors()
    page = await run(store, "why does the flaky upload test fail", kind="messages", min_score=0)
    order = ids(page)
    assert order.index(f"m{found['s:4']}") < order.index(f"m{summary}")
    by_id = {r.id: r for r in page.results}
    assert by_id[f"m{summary}"].scores.boost == store.settings.search_boosts["compact_summary"] < 1


async def test_one_message_gives_its_place_to_one_idea_only(store: Store) -> None:
    # Two ideas drawn from one message: the better one takes the message's place, the other keeps its
    # own score, so one message cannot fill two places of a page.
    found = await conversation_store(
        store,
        {"s": [(7, "assistant", "Retries use exponential backoff; the gateway also caps them at five")]},
    )
    async with store.db.write() as conn:
        file_id = (await (await conn.execute("SELECT id FROM transcript_files")).fetchone())[0]
        strong = await add_idea(conn, "s", "decision", "Retries use exponential backoff", 7, file_id=file_id)
        weak = await add_idea(conn, "s", "context", "The gateway caps retries at five", 7, file_id=file_id)
    await store.sync_vectors()
    page = await run(store, "retries exponential backoff", kind="all", min_score=0)
    scores = {r.id: r.score for r in page.results}
    assert f"m{found['s:7']}" not in scores
    assert ids(page)[0] == str(strong)
    assert scores[str(weak)] < scores[str(strong)]
    alone = await run(store, "retries exponential backoff", kind="messages", min_score=0)
    assert scores[str(strong)] >= alone.results[0].score


async def answered_question_store(store: Store) -> dict[str, int]:
    """A question asked in one turn, answered two turns later in words the question does not use."""
    question = "What are the settings I need to enable auto-summarization?"
    answer = 'In `.entire/settings.json`: { "strategy_options": { "summarize": { "enabled": true } } }'
    found = await conversation_store(
        store,
        {
            "s": [
                (3, "user", question),
                (4, "assistant", "Let me look at how the CLI reads its configuration."),
                (5, "assistant", answer),
                (9, "user", "Which settings file does the daemon read on start-up?"),
            ]
        },
    )
    async with store.db.write() as conn:
        file_id = (await (await conn.execute("SELECT id FROM transcript_files")).fetchone())[0]
        found["answer"] = await add_idea(conn, "s", "conclusion", answer, 5, file_id=file_id)
        found["question"] = await add_idea(
            conn, "s", "question", question, 3, file_id=file_id, answered_by=found["answer"]
        )
        found["open"] = await add_idea(
            conn, "s", "question", "Which settings file does the daemon read on start-up?", 9, file_id=file_id
        )
    await store.sync_vectors()
    return found


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("kind", ["ideas", "all"])
async def test_an_answered_question_that_matches_ranks_as_its_answer(
    store: Store, mode: str, kind: str
) -> None:
    # The question is the query asked again; what the searcher wants is the JSON it was answered with,
    # which holds none of the query's words. The answer takes the question's place, the question
    # follows it, and the result says whose place it took.
    found = await answered_question_store(store)
    answer, question = str(found["answer"]), str(found["question"])
    page = await run(store, "What setting turns on auto-summarization?", mode=mode, kind=kind, min_score=0)
    assert ids(page)[:2] == [answer, question]
    assert page.results[0].scores.answers == question

    async with store.db.write() as conn:
        await conn.execute("UPDATE ideas SET answered_by = NULL WHERE id = ?", (found["question"],))
    query = "What setting turns on auto-summarization?"
    unanswered = await run(store, query, mode=mode, kind=kind, min_score=0)
    assert ids(unanswered)[0] == question
    assert all(r.scores.answers is None for r in unanswered.results)


async def settled_where_no_idea_was_drawn(store: Store, intent: str) -> tuple[int, str]:
    """The answered question of `answered_question_store` as the learned indexer leaves one: no answering
    idea, settled at line 5 (`resolved_line`, and its time) as a question or a todo; (its id, the id of the
    message at line 5)."""
    found = await answered_question_store(store)
    question = found["question"]
    settled = "answered_at" if intent == "question" else "completed_at"
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM ideas WHERE id = ?", (found["answer"],))
        await conn.execute(
            "UPDATE ideas SET intent = ?, answered_by = NULL, answered_at = NULL, resolved_line = 5, "
            f"{settled} = (SELECT timestamp FROM messages WHERE line = 5) WHERE id = ?",
            (intent, question),
        )
    return question, f"m{found['s:5']}"


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("kind", ["ideas", "all"])
async def test_a_question_answered_where_no_idea_was_drawn_ranks_as_the_answering_message(
    store: Store, mode: str, kind: str
) -> None:
    # An indexer that draws no idea from the reply still links the question to the line that answered
    # it (resolved_line, no answered_by): the message there takes the question's place, as an
    # answering idea would, and the question follows it. kind=ideas returns the question alone.
    question, message = await settled_where_no_idea_was_drawn(store, "question")
    page = await run(store, "What setting turns on auto-summarization?", mode=mode, kind=kind, min_score=0)
    if kind == "all":
        assert ids(page)[:2] == [message, str(question)]
        assert page.results[0].scores.answers == str(question)
    else:
        assert ids(page)[0] == str(question)
        assert all(r.kind == "idea" for r in page.results)

    # Answered at line 5 of a later session: line 5 of the question's own session is not its answer.
    async with store.db.write() as conn:
        await conn.execute(
            "UPDATE ideas SET answered_at = '2031-01-01T00:00:00.000Z' WHERE id = ?", (question,)
        )
    elsewhere = await run(
        store, "What setting turns on auto-summarization?", mode=mode, kind=kind, min_score=0
    )
    assert ids(elsewhere)[0] == str(question)
    assert all(r.scores.answers is None for r in elsewhere.results)

    # A question with no answering line ranks alone.
    async with store.db.write() as conn:
        await conn.execute("UPDATE ideas SET resolved_line = NULL WHERE id = ?", (question,))
    alone = await run(store, "What setting turns on auto-summarization?", mode=mode, kind=kind, min_score=0)
    assert ids(alone)[0] == str(question)
    assert all(r.scores.answers is None for r in alone.results)


async def test_a_todo_drawn_from_a_message_that_asks_ranks_as_the_message_that_settled_it(
    store: Store,
) -> None:
    # The indexer may draw a statement of a message that also asks, and read it as a todo: settled at
    # the reply, it ranks as that reply, as a question would. A todo from a message that asks nothing
    # keeps its own place (its completion is not what it says).
    question, message = await settled_where_no_idea_was_drawn(store, "todo")
    query = "What setting turns on auto-summarization?"
    page = await run(store, query, mode="keyword", kind="all", min_score=0)
    assert ids(page)[:2] == [message, str(question)]

    async with store.db.write() as conn:
        await conn.execute(
            "UPDATE messages SET text = 'Enable auto-summarization in the settings.' WHERE line = 3"
        )
    plain = await run(store, query, mode="keyword", kind="all", min_score=0)
    assert all(r.scores.answers is None for r in plain.results)


async def test_an_answer_comes_only_with_its_question_and_through_the_filters(store: Store) -> None:
    found = await answered_question_store(store)
    answer, question = str(found["answer"]), str(found["question"])
    # The open question matches, the answered one does not: the answer is no candidate.
    other = await run(store, "daemon start-up file", mode="keyword", kind="ideas", min_score=0)
    assert ids(other) == [str(found["open"])]
    # Asked for questions only, the answer (a conclusion) stays out and the question keeps its place.
    questions = await run(
        store, "What setting turns on auto-summarization?", mode="keyword", kind="ideas", intents=["question"]
    )
    assert ids(questions)[0] == question
    assert answer not in ids(questions)


async def test_ideas_are_found_through_the_messages_they_came_from(store: Store) -> None:
    # The decision's own sentence holds one word of the query; the turn it was drawn from holds them
    # all. Searched alone, the idea that mentions the dev server and vite ranked first; the message's
    # evidence puts the decision first, and the message itself is not returned for kind=ideas.
    await conversation_store(
        store,
        {
            "s": [
                (5, "assistant", "The dev server moved to port 5173 because vite picks it by default."),
                (9, "assistant", "The docs page lists vite among the build tools the team looked at."),
            ]
        },
    )
    async with store.db.write() as conn:
        file_id = (await (await conn.execute("SELECT id FROM transcript_files")).fetchone())[0]
        decision = await add_idea(
            conn, "s", "decision", "Keep the default port the bundler picks", 5, file_id=file_id
        )
        mention = await add_idea(
            conn, "s", "context", "The dev server docs list vite as a build tool", 9, file_id=file_id
        )
    await store.sync_vectors()
    query = "why does the dev server use port 5173 with vite"
    page = await run(store, query, mode="keyword", kind="ideas", min_score=0)
    assert ids(page) == [str(decision), str(mention)]
    # Recall asks without the evidence (half the work): the sentences alone decide.
    request = SearchRequest(query=query, mode="keyword", kind="ideas", min_score=0)
    quick = await search(store.db, store.vectors, store.settings, request, record_usage=False, evidence=False)
    assert ids(quick) == [str(mention), str(decision)]

    async with store.db.write() as conn:
        await conn.execute("UPDATE ideas SET source_line = 40 WHERE id = ?", (decision,))
    alone = await run(store, query, mode="keyword", kind="ideas", min_score=0)
    assert ids(alone) == [str(mention), str(decision)]


async def test_search_says_when_vectors_are_still_being_built(store: Store) -> None:
    # Captured, not yet embedded: keyword matches answer at once and the page says vectors lag behind.
    lines = {"s": [(n, "user", f"note {n} about the cache warmer") for n in range(1, 4)]}
    found: dict[str, int] = {}
    async with store.db.write() as conn:
        project = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/w', 'w')")
        await conn.execute(
            "INSERT INTO sessions (id, project_id, started_at, last_at) VALUES ('s', ?, ?, ?)",
            (project, ago(3), ago(2)),
        )
        file_id = await insert(conn, "INSERT INTO transcript_files (path, session_id) VALUES ('/t/s', 's')")
        for line, role, text in lines["s"]:
            found[str(line)] = await add_message(conn, "s", file_id, line, text, role=role)
    waiting = await run(store, "cache warmer", kind="messages", min_score=0)
    assert set(ids(waiting)) == {f"m{i}" for i in found.values()}
    assert any("3 items are still waiting for their vectors" in n for n in waiting.notices)
    keyword = await run(store, "cache warmer", kind="messages", mode="keyword", min_score=0)
    assert not any("waiting for their vectors" in n for n in keyword.notices)  # keyword mode needs none
    await store.sync_vectors()
    done = await run(store, "cache warmer", kind="messages", min_score=0)
    assert not any("waiting for their vectors" in n for n in done.notices)


async def test_the_turn_after_a_question_the_query_asks_outranks_the_same_turn_after_a_statement(
    store: Store,
) -> None:
    # The turns before the two replies hold the same words; only one asks them. Its reply is the answer.
    found = await conversation_store(
        store,
        {
            "asked": [
                (10, "assistant", "Which adoption agencies did you look at in the end?"),
                (11, "user", "We looked at the two near the park, both were lovely"),
            ],
            "told": [
                (10, "assistant", "Which adoption agencies did you look at in the end."),
                (11, "user", "We looked at the two near the park, both were great"),
            ],
        },
    )
    query = "Which adoption agencies did Caroline look at?"
    answer, other = f"m{found['asked:11']}", f"m{found['told:11']}"
    page = await run(store, query, mode="keyword", kind="messages", min_score=0)
    scores = {r.id: r.score for r in page.results}
    assert scores[answer] > scores[other]

    without = store.settings.model_copy(update={"search_answer_weight": 0.0})
    request = SearchRequest(query=query, mode="keyword", kind="messages", min_score=0)
    plain = await search(store.db, store.vectors, without, request, record_usage=False)
    scores = {r.id: r.score for r in plain.results}
    assert scores[answer] == scores[other]  # the same text and context words: only the question mark differs


def test_a_question_is_asked_near_the_end_of_a_turn() -> None:
    assert asks_question("I went to a poetry reading last Friday. Ever been to one?")
    assert asks_question("Is it the migration?\n\nI think so, look at the dates.")
    assert not asks_question("You asked: why? " + "Because the index was rewritten. " * 10)


async def test_a_match_only_in_a_tool_calls_arguments_ranks_below_the_same_words_in_prose(
    store: Store,
) -> None:
    # Both hold the phrase; one only in the path its Read call opens, the other in what it says.
    found = await conversation_store(
        store,
        {
            "path": [
                (
                    10,
                    "assistant",
                    'Let me look at it again.\n[tool_use Read] file_path="/repo/checkpoint-sync/action.yml"',
                )
            ],
            "said": [(10, "assistant", "The checkpoint sync action no longer checks out the repository.")],
        },
    )
    query = "checkpoint sync action"
    in_path, in_prose = f"m{found['path:10']}", f"m{found['said:10']}"
    page = await run(store, query, mode="keyword", kind="messages", min_score=0)
    scores = {r.id: r.score for r in page.results}
    assert scores[in_prose] > scores[in_path]

    full = store.settings.model_copy(update={"search_tool_call_weight": 1.0})
    request = SearchRequest(query=query, mode="keyword", kind="messages", min_score=0)
    plain = await search(store.db, store.vectors, full, request, record_usage=False)
    assert {r.id: r.score for r in plain.results}[in_path] > scores[in_path], "counted in full at weight 1"


async def test_a_passage_inside_a_tool_call_counts_like_the_call(store: Store) -> None:
    # A long message's passage that lies in its rendered tool calls (here the command a Bash call runs)
    # must not give back the full strength the message's own text was denied.
    prose = "Let me look at the upload logs before changing anything in the gateway configuration."
    call = prose + '\n[tool_use Bash] command="grep zanzibar_quota /var/log/gateway/uploads.log"'
    found = await conversation_store(
        store,
        {
            "call": [(10, "assistant", call)],
            "said": [(10, "assistant", "The zanzibar_quota setting caps uploads per hour for each key.")],
        },
    )
    async with store.db.write() as conn:
        for seq, start, end in ((0, 0, len(prose)), (1, len(prose) + 1, len(call))):
            await conn.execute(
                "INSERT INTO message_passages (message_id, seq, char_start, char_end, text) "
                "VALUES (?, ?, ?, ?, ?)",
                (found["call:10"], seq, start, end, call[start:end]),
            )
    in_call, in_prose = f"m{found['call:10']}", f"m{found['said:10']}"
    page = await run(store, "zanzibar_quota", mode="keyword", kind="messages", min_score=0)
    strength = {r.id: r.scores.bm25 for r in page.results}
    assert strength[in_call] == pytest.approx(store.settings.search_tool_call_weight * strength[in_prose])

    full = store.settings.model_copy(update={"search_tool_call_weight": 1.0})
    request = SearchRequest(query="zanzibar_quota", mode="keyword", kind="messages", min_score=0)
    plain = await search(store.db, store.vectors, full, request, record_usage=False)
    assert {r.id: r.scores.bm25 for r in plain.results}[in_call] == strength[in_prose]


async def test_a_vector_failure_after_a_decisive_keyword_match_changes_nothing(
    store: Store, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The vector queries start alongside the keyword queries; a decisive keyword match drops their
    # answer, and their failure with it.
    class Broken:
        def embed(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("chroma is down")

    async def slow_keyword_hits(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.2)  # the vector queries have failed by the time the keyword matches are in
        return await keyword_hits(*args, **kwargs)

    monkeypatch.setattr(hybrid, "keyword_hits", slow_keyword_hits)
    page = await run(store, "refreshed by the gateway", kind="ideas", vectors=Broken())
    assert page.vector_skipped and ids(page)[0] == str(world.ideas["auth"])
    assert not any("chroma is down" in n for n in page.notices)
