"""search_content over a small real corpus: messages in two projects and three sessions, real SQLite
FTS and real embedded Chroma with the packaged MiniLM model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from chromadb.api.types import Documents, EmbeddingFunction
from pydantic import ValidationError

from cairn.config import Settings
from cairn.search import content
from cairn.search.content import search_content
from cairn.search.content_models import ContentRequest, ContentResponse
from cairn.search.errors import BadContinuationError, SearchError
from cairn.search.paging import encode_token
from cairn.search.terms import compile_term, is_code_shaped
from cairn.store.store import Store, message_hash
from cairn.store.vectors import VectorIndex
from tests.tools.memory import add_idea, insert

AUTH, UI, STORE = "s-auth", "s-ui", "s-store"
FILES = {AUTH: "/t/s-auth.jsonl", UI: "/t/s-ui.jsonl", STORE: "/t/s-store.jsonl"}

# (session, line, kind, text, is_noise)
CORPUS: list[tuple[str, int, str, str, int]] = [
    (
        AUTH,
        1,
        "text",
        "The login form sends the password, receives a JWT access token and refreshes the token before "
        "it expires; failed authentication redirects to the sign-in page.",
        0,
    ),
    (
        AUTH,
        2,
        "text",
        "const [user, setUser] = useState(null) keeps the signed-in user in the LoginForm component.",
        0,
    ),
    (
        AUTH,
        3,
        "text",
        "Live notifications reach the browser over a WebSocket connection that reconnects with backoff.",
        0,
    ),
    (AUTH, 4, "text", "useState websocket outbox SQLite noise marker", 1),
    (AUTH, 5, "command", "/review useState websocket outbox SQLite command", 0),
    (AUTH, 6, "text", "   ", 0),
    (UI, 1, "text", "The docs misspell the hook as usestate in two places.", 0),
    (UI, 2, "text", "The websocket server drops idle clients after thirty seconds.", 0),
    (UI, 3, "text", "The browser keeps unsent drafts in IndexedDB rather than SQLite.", 0),
    (UI, 4, "text", "useState and useEffect together with a websocket subscription re-render the list.", 0),
    (STORE, 1, "text", "SQLite is the truth; Chroma holds embeddings derived from it through an outbox.", 0),
    (
        STORE,
        2,
        "text",
        "Writers take BEGIN IMMEDIATE so SQLite never reports that the database is locked.",
        0,
    ),
    (STORE, 3, "text", "The outbox row is removed only after Chroma accepted the vector.", 0),
    (STORE, 4, "text", "A crash between the Chroma write and the commit leaves the outbox row queued.", 0),
    (STORE, 5, "text", "Draining the outbox is idempotent because Chroma upserts by id.", 0),
    (STORE, 6, "compact_summary", "Summary: the outbox keeps Chroma in step with SQLite.", 0),
    (STORE, 7, "text", "Triggers fill the outbox so no writer can forget to queue a vector.", 0),
    (STORE, 8, "text", "We considered vec0 inside SQLite for embeddings but chose Chroma.", 0),
]


@dataclass(frozen=True)
class Corpus:
    ids: dict[tuple[str, int], int]

    def chunk(self, session: str, line: int) -> str:
        return f"m{self.ids[(session, line)]}"


async def add_message(
    store: Store, session: str, line: int, text: str, kind: str = "text", noise: int = 0
) -> int:
    async with store.db.write() as conn:
        row = await (
            await conn.execute("SELECT id FROM transcript_files WHERE path = ?", (FILES[session],))
        ).fetchone()
        assert row is not None
        message_id = await insert(
            conn,
            "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, kind, "
            "text, content_hash, timestamp, is_noise) VALUES (?, ?, ?, ?, 0, 10, 'user', ?, ?, ?, ?, ?)",
            (
                session,
                row[0],
                line,
                line,
                kind,
                text,
                message_hash("user", kind, text),
                "2025-01-02T03:04:05.000Z",
                noise,
            ),
        )
    await store.sync_vectors()
    return message_id


@pytest.fixture
async def corpus(store: Store) -> Corpus:
    ids: dict[tuple[str, int], int] = {}
    async with store.db.write() as conn:
        cairn = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/cairn', 'cairn')")
        webapp = await insert(conn, "INSERT INTO projects (path, name) VALUES ('/work/webapp', 'webapp')")
        await conn.executemany(
            "INSERT INTO sessions (id, project_id) VALUES (?, ?)",
            [(AUTH, webapp), (UI, webapp), (STORE, cairn)],
        )
        file_ids = {}
        for session, path in FILES.items():
            file_ids[session] = await insert(
                conn, "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)", (path, session)
            )
        for session, line, kind, text, noise in CORPUS:
            ids[(session, line)] = await insert(
                conn,
                "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, "
                "kind, text, content_hash, timestamp, is_noise) "
                "VALUES (?, ?, ?, ?, 0, 10, 'user', ?, ?, ?, ?, ?)",
                (
                    session,
                    file_ids[session],
                    line,
                    line,
                    kind,
                    text,
                    message_hash("user", kind, text),
                    "2025-01-02T03:04:05.000Z",
                    noise,
                ),
            )
        # Entities of the auth session: JWT in two ideas, React in one; the UI session has none.
        jwt = await insert(conn, "INSERT INTO entities (canonical_name, type) VALUES ('JWT', 'technology')")
        react = await insert(
            conn, "INSERT INTO entities (canonical_name, type) VALUES ('React', 'technology')"
        )
        sqlite = await insert(
            conn, "INSERT INTO entities (canonical_name, type) VALUES ('SQLite', 'technology')"
        )
        first = await add_idea(conn, AUTH, "decision", "Use JWT access tokens", 1)
        second = await add_idea(conn, AUTH, "context", "JWT refresh happens before expiry", 1)
        third = await add_idea(conn, AUTH, "context", "LoginForm keeps the user in React state", 2)
        fourth = await add_idea(conn, STORE, "decision", "SQLite is the truth", 1)
        await conn.executemany(
            "INSERT INTO idea_entities (idea_id, entity_id) VALUES (?, ?)",
            [(first, jwt), (second, jwt), (third, react), (fourth, sqlite)],
        )
    await store.sync_vectors()
    return Corpus(ids)


async def run(store: Store, settings: Settings, **fields: Any) -> ContentResponse:
    return await search_content(store.db, store.vectors, settings, ContentRequest(**fields))


def scores(response: ContentResponse) -> dict[str, float]:
    return {r.chunk_id: r.relevance_score for r in response.results}


# Validation


def test_a_request_needs_concepts_or_terms() -> None:
    with pytest.raises(ValidationError, match="semantic_concepts"):
        ContentRequest()
    with pytest.raises(ValidationError, match="semantic_concepts"):
        ContentRequest(semantic_concepts=["  "], exact_terms=[""])


def test_limit_and_min_score_are_bounded() -> None:
    with pytest.raises(ValidationError, match="between 1 and 50"):
        ContentRequest(exact_terms=["x"], limit=51)
    with pytest.raises(ValidationError, match="between 1 and 50"):
        ContentRequest(exact_terms=["x"], limit=0)
    with pytest.raises(ValidationError, match="min_score"):
        ContentRequest(exact_terms=["x"], min_score=1.5)
    assert ContentRequest(exact_terms=["x"], limit=50).limit == 50


def test_blank_and_repeated_signals_are_dropped() -> None:
    request = ContentRequest(semantic_concepts=[" auth ", "auth", ""], exact_terms=["x", " x", "\t"])
    assert request.semantic_concepts == ["auth"]
    assert request.exact_terms == ["x"]


async def test_search_rejects_an_empty_request_built_without_validation(
    store: Store, settings: Settings
) -> None:
    request = ContentRequest.model_construct(semantic_concepts=[], exact_terms=[], limit=10)
    with pytest.raises(SearchError, match="exact_terms"):
        await search_content(store.db, store.vectors, settings, request)


def test_case_rule() -> None:
    for code in ["useState", "LoginButton", "WebSocket", "user_id", "v4", "vec0", "os.path", "NEAR(", "*"]:
        assert is_code_shaped(code), code
    for natural in ["websocket", "SQLite", "JWT", "React", "state management", "sign-in"]:
        assert not is_code_shaped(natural), natural
    assert compile_term("useState").pattern.search("const x = useState(0)")
    assert not compile_term("useState").pattern.search("the usestate hook")
    assert not compile_term("useState").pattern.search("reuseState")
    assert compile_term("websocket").pattern.search("over WebSockets")
    assert not compile_term("v4").pattern.search("uuidv4")


# Semantic, exact and hybrid


async def test_semantic_only_ranks_the_on_topic_chunk_first(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    response = await run(store, settings, semantic_concepts=["login authentication", "JWT token refresh"])
    assert response.results[0].chunk_id == corpus.chunk(AUTH, 1)
    top = response.results[0]
    assert top.document_id == FILES[AUTH]
    assert top.chunk_index == 1
    assert top.content == CORPUS[0][3]
    assert top.relevance_score >= 0.5
    assert top.document_keywords == ["JWT", "React"]
    assert all(r.relevance_score >= 0.5 for r in response.results)
    assert response.statistics.total_results == len(response.results)
    assert response.statistics.files_covered[0] == FILES[AUTH]
    assert response.statistics.avg_relevance == pytest.approx(
        sum(r.relevance_score for r in response.results) / len(response.results), abs=1e-3
    )
    assert "login authentication; JWT token refresh" in response.statistics.search_interpretation
    assert response.continuation.has_more is False
    assert response.continuation.next_token is None
    assert any("show(id=" in action for action in response.navigation_hints.next_actions)


async def test_exact_only_is_grep_like(store: Store, settings: Settings, corpus: Corpus) -> None:
    response = await run(store, settings, exact_terms=["SQLite", "Chroma", "outbox"], min_score=0.3)
    assert response.results
    for result in response.results:
        assert any(term.lower() in result.content.lower() for term in ["SQLite", "Chroma", "outbox"])
    found = scores(response)
    # All three terms: 1.0; two: 1/1.5; one: 1/2.25 (0.444, kept by min_score 0.3).
    assert found[corpus.chunk(STORE, 1)] == 1.0
    assert found[corpus.chunk(STORE, 6)] == 1.0
    assert found[corpus.chunk(STORE, 3)] == pytest.approx(1 / 1.5, abs=1e-4)
    assert found[corpus.chunk(UI, 3)] == pytest.approx(1 / 2.25, abs=1e-4)
    ordered = [r.relevance_score for r in response.results]
    assert ordered == sorted(ordered, reverse=True)
    # Every chunk containing a term is there (noise and command messages are not chunks).
    expected = {
        corpus.chunk(s, line)
        for s, line, kind, text, noise in CORPUS
        if not noise and kind != "command" and any(t in text for t in ["SQLite", "Chroma", "outbox"])
    }
    assert set(found) == expected
    assert "grep-like" in response.statistics.search_interpretation


async def test_exact_only_default_min_score_drops_chunks_with_too_few_terms(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    response = await run(store, settings, exact_terms=["SQLite", "Chroma", "outbox"])
    assert set(scores(response).values()) <= {1.0, round(1 / 1.5, 4)}
    assert corpus.chunk(UI, 3) not in scores(response)


async def test_code_shaped_terms_are_case_sensitive(store: Store, settings: Settings, corpus: Corpus) -> None:
    exact = await run(store, settings, exact_terms=["useState"])
    assert set(scores(exact)) == {corpus.chunk(AUTH, 2), corpus.chunk(UI, 4)}
    lower = await run(store, settings, exact_terms=["usestate"])
    # A natural-looking word matches in any case, so it also finds the code spelling.
    assert set(scores(lower)) == {corpus.chunk(UI, 1), corpus.chunk(AUTH, 2), corpus.chunk(UI, 4)}


async def test_natural_words_match_in_any_case(store: Store, settings: Settings, corpus: Corpus) -> None:
    expected = {corpus.chunk(AUTH, 3), corpus.chunk(UI, 2), corpus.chunk(UI, 4)}
    assert set(scores(await run(store, settings, exact_terms=["websocket"]))) == expected
    # `WebSocket` is PascalCase, so code-shaped: only that spelling.
    assert set(scores(await run(store, settings, exact_terms=["WebSocket"]))) == {corpus.chunk(AUTH, 3)}


async def test_an_exact_term_multiplies_the_semantic_score(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    target = corpus.chunk(AUTH, 2)
    concepts = ["React component state"]
    semantic = scores(await run(store, settings, semantic_concepts=concepts, min_score=0.0))
    assert 0.3 < semantic[target] < 1 / 1.5
    hybrid = scores(
        await run(store, settings, semantic_concepts=concepts, exact_terms=["useState"], min_score=0)
    )
    assert hybrid[target] / semantic[target] == pytest.approx(1.5, rel=1e-3)
    # The lowercase `usestate` is not the code term, so that chunk keeps its semantic score.
    lowercase = corpus.chunk(UI, 1)
    assert hybrid[lowercase] == pytest.approx(semantic[lowercase], abs=1e-4)
    assert next(iter(hybrid)) == target
    two = scores(
        await run(
            store, settings, semantic_concepts=concepts, exact_terms=["useState", "LoginForm"], min_score=0
        )
    )
    # 2.25 times the semantic score is past 1: reported as 1.0.
    assert two[target] == 1.0
    # Without any semantic similarity an exact term rescues nothing: 0 * 1.5 is still 0.
    assert corpus.chunk(STORE, 8) not in scores(
        await run(store, settings, semantic_concepts=concepts, exact_terms=["vec0"], min_score=0)
    )


async def test_a_term_found_outside_the_vector_top_is_still_scored(
    store: Store, settings: Settings, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exact-term candidate the nearest-neighbour query did not return gets its cosine from its
    stored vector, the same score it has when the query does return it."""
    concepts = ["Chroma vectors kept in step with SQLite"]
    semantic = scores(await run(store, settings, semantic_concepts=concepts, min_score=0))
    monkeypatch.setattr(content, "VECTOR_CANDIDATES", 1)
    narrow = scores(await run(store, settings, semantic_concepts=concepts, min_score=0))
    assert list(narrow) == [corpus.chunk(STORE, 6)]
    hybrid = scores(
        await run(store, settings, semantic_concepts=concepts, exact_terms=["outbox"], min_score=0)
    )
    outbox = [corpus.chunk(STORE, line) for line in (1, 3, 4, 5, 7)]
    for chunk in outbox:
        assert hybrid[chunk] == pytest.approx(min(1.0, semantic[chunk] * 1.5), abs=1e-3)


async def test_min_score_filters(store: Store, settings: Settings, corpus: Corpus) -> None:
    concepts = ["Chroma vectors kept in step with SQLite"]
    loose = await run(store, settings, semantic_concepts=concepts, min_score=0.3, limit=50)
    default = await run(store, settings, semantic_concepts=concepts, limit=50)
    strict = await run(store, settings, semantic_concepts=concepts, min_score=0.8, limit=50)
    assert all(r.relevance_score >= 0.8 for r in strict.results)
    assert all(r.relevance_score >= 0.5 for r in default.results)
    assert set(scores(strict)) < set(scores(default)) <= set(scores(loose))
    assert strict.results
    assert "Minimum score 0.8" in strict.statistics.search_interpretation


# Paging


async def test_pages_do_not_repeat_and_keep_their_total(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    request: dict[str, Any] = {"exact_terms": ["outbox"], "limit": 2}
    page = await run(store, settings, **request)
    total = page.statistics.total_results
    assert total == 6
    seen = [r.chunk_id for r in page.results]
    pages = 1
    # A row written after the first page is neither counted nor shown, however well it matches.
    await add_message(store, STORE, 99, "outbox outbox: a late outbox message")
    while page.continuation.has_more:
        assert page.continuation.next_token is not None
        assert any("continuation_token" in a for a in page.navigation_hints.next_actions)
        page = await run(store, settings, continuation_token=page.continuation.next_token, limit=2)
        assert page.statistics.total_results == total
        seen += [r.chunk_id for r in page.results]
        pages += 1
    assert pages == 3
    assert page.continuation.next_token is None
    assert len(seen) == len(set(seen)) == total
    # Ties (all 1.0) are broken by chunk id, so the order is the insertion order.
    assert seen == sorted(seen, key=lambda c: int(c[1:]))
    fresh = await run(store, settings, **request)
    assert fresh.statistics.total_results == 7


async def test_semantic_pages_continue_the_same_ranking(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    request: dict[str, Any] = {
        "semantic_concepts": ["Chroma vectors kept in step with SQLite"],
        "min_score": 0.1,
    }
    whole = await run(store, settings, **request, limit=50)
    assert whole.statistics.total_results >= 5
    first = await run(store, settings, **request, limit=3)
    assert first.continuation.next_token is not None
    second = await run(store, settings, continuation_token=first.continuation.next_token, limit=50)
    assert [r.chunk_id for r in first.results + second.results] == [r.chunk_id for r in whole.results]
    assert second.statistics.total_results == whole.statistics.total_results
    assert second.continuation.has_more is False


async def test_bad_tokens_are_refused(store: Store, settings: Settings, corpus: Corpus) -> None:
    page = await run(store, settings, exact_terms=["outbox"], limit=2)
    token = page.continuation.next_token
    assert token is not None
    with pytest.raises(BadContinuationError):
        await run(store, settings, continuation_token=token[:-6] + "AAAAAA")
    with pytest.raises(BadContinuationError):
        await run(store, settings, continuation_token="not a token")
    with pytest.raises(BadContinuationError, match="another kind"):
        await run(store, settings, continuation_token=encode_token("search", {"offset": 2}, settings.home))
    with pytest.raises(BadContinuationError):
        await run(
            store, settings, continuation_token=encode_token("search_content", {"offset": 2}, settings.home)
        )


# Filters, hostile input, noise, keywords


async def test_project_and_session_filters(store: Store, settings: Settings, corpus: Corpus) -> None:
    everywhere = await run(store, settings, exact_terms=["SQLite"])
    assert {r.document_id for r in everywhere.results} == {FILES[UI], FILES[STORE]}
    cairn = await run(store, settings, exact_terms=["SQLite"], project="cairn")
    assert {r.document_id for r in cairn.results} == {FILES[STORE]}
    webapp = await run(store, settings, exact_terms=["SQLite"], project="/work/webapp")
    assert set(scores(webapp)) == {corpus.chunk(UI, 3)}
    assert "Only project /work/webapp." in webapp.statistics.search_interpretation

    concepts = ["Chroma vectors kept in step with SQLite"]
    semantic = await run(store, settings, semantic_concepts=concepts, min_score=0.1)
    assert {r.document_id for r in semantic.results} == {FILES[UI], FILES[STORE]}
    webapp_semantic = await run(store, settings, semantic_concepts=concepts, min_score=0.1, project="webapp")
    assert set(scores(webapp_semantic)) == {corpus.chunk(UI, 3)}
    browser = ["browser and websockets"]
    everyone = await run(store, settings, semantic_concepts=browser, min_score=0.1)
    assert corpus.chunk(AUTH, 3) in scores(everyone)
    ui = await run(store, settings, semantic_concepts=browser, min_score=0.1, session=UI)
    assert set(scores(ui)) == {corpus.chunk(UI, 2), corpus.chunk(UI, 4)}

    with pytest.raises(SearchError, match="no project"):
        await run(store, settings, exact_terms=["SQLite"], project="nowhere")
    with pytest.raises(SearchError, match="no session"):
        await run(store, settings, exact_terms=["SQLite"], session="s-missing")


async def test_hostile_terms_do_not_break_the_search(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    hostile = ['"', "NEAR(", "*", "", 'a" OR b', "-x", "AND", "col:umn", "()"]
    response = await run(store, settings, semantic_concepts=['"NEAR( *'], exact_terms=[*hostile, "useState"])
    assert "NEAR( (case-sensitive)" in response.statistics.search_interpretation
    exact = await run(store, settings, exact_terms=hostile, min_score=0)
    # Only `AND` occurs (as the word "and", in any case: it reads as an acronym, not code).
    patterns = [compile_term(term).pattern for term in hostile if term]
    assert exact.results
    for result in exact.results:
        assert [p.pattern for p in patterns if p.search(result.content)] == [
            compile_term("AND").pattern.pattern
        ]
    exact_plus = await run(store, settings, exact_terms=[*hostile, "useState"], min_score=0)
    # Two terms (`useState`, "and") first, then one term each, ties by chunk id.
    assert [r.chunk_id for r in exact_plus.results] == [
        corpus.chunk(UI, 4),
        corpus.chunk(AUTH, 1),
        corpus.chunk(AUTH, 2),
        corpus.chunk(STORE, 4),
    ]
    await add_message(store, UI, 50, "pointer math: *p = NEAR(x) -> y")
    found = await run(store, settings, exact_terms=["*p", "NEAR(", "->"], min_score=0)
    assert [r.content for r in found.results] == ["pointer math: *p = NEAR(x) -> y"]
    assert found.results[0].relevance_score == 1.0


async def test_noise_and_non_content_messages_are_never_results(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    excluded = {corpus.chunk(AUTH, 4), corpus.chunk(AUTH, 5), corpus.chunk(AUTH, 6)}
    for fields in [
        {"exact_terms": ["useState", "websocket", "outbox", "SQLite", "marker"], "min_score": 0},
        {"semantic_concepts": ["noise marker"], "min_score": 0, "limit": 50},
        {"semantic_concepts": ["review command"], "exact_terms": ["marker", "command"], "min_score": 0},
    ]:
        response = await run(store, settings, **fields)
        assert not excluded & set(scores(response)), fields


async def test_document_keywords_come_from_the_session_entities(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    response = await run(store, settings, exact_terms=["websocket"], min_score=0)
    keywords = {r.chunk_id: r.document_keywords for r in response.results}
    assert keywords[corpus.chunk(AUTH, 3)] == ["JWT", "React"]
    assert keywords[corpus.chunk(UI, 2)] == []
    assert response.navigation_hints.related_queries == ["JWT", "React"]
    named = await run(store, settings, exact_terms=["websocket", "JWT"], min_score=0)
    assert named.navigation_hints.related_queries == ["React"]


async def test_nothing_found_suggests_broadening(store: Store, settings: Settings, corpus: Corpus) -> None:
    response = await run(store, settings, exact_terms=["kubernetes"])
    assert response.results == []
    assert response.statistics.total_results == 0
    assert response.statistics.avg_relevance == 0.0
    assert response.statistics.files_covered == []
    assert response.continuation.has_more is False
    actions = " ".join(response.navigation_hints.next_actions)
    assert "lower min_score" in actions
    assert "`search` tool" in actions


# Without vectors


async def test_without_vectors_concepts_fall_back_to_their_words(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    request = ContentRequest(semantic_concepts=["outbox queued crash"], exact_terms=["Chroma"], min_score=0.3)
    response = await search_content(store.db, None, settings, request)
    assert "unavailable (no vector index is open)" in response.statistics.search_interpretation
    found = scores(response)
    # All three concept words and the term: 1.0 * 1.5, reported as 1.0; ranks first.
    assert response.results[0].chunk_id == corpus.chunk(STORE, 4)
    assert found[corpus.chunk(STORE, 4)] == 1.0
    # One concept word of three and the term: 1/3 * 1.5 = 0.5.
    assert found[corpus.chunk(STORE, 3)] == pytest.approx(0.5, abs=1e-4)


async def test_a_failing_chroma_degrades_instead_of_failing(
    store: Store, settings: Settings, corpus: Corpus, embedding_function: EmbeddingFunction[Documents]
) -> None:
    unreachable = VectorIndex(
        settings.model_copy(update={"chroma_url": "http://127.0.0.1:9"}), embedding_function
    )
    request = ContentRequest(semantic_concepts=["outbox"], min_score=0.5)
    response = await search_content(store.db, unreachable, settings, request)
    assert "vector search failed" in response.statistics.search_interpretation
    assert corpus.chunk(STORE, 3) in scores(response)


# A page bounded in characters (what the MCP tool asks for)


def _long(n: int) -> str:
    """A message of ~3K characters about the outbox, distinct per `n`."""
    return f"Message {n} on the outbox: " + " ".join(f"word{n}x{i} outbox drains" for i in range(200))


async def test_a_bounded_page_cuts_long_passages_and_the_cursor_goes_on_where_it_ended(
    store: Store, settings: Settings, corpus: Corpus
) -> None:
    for n in range(8):
        await add_message(store, STORE, 100 + n, _long(n))
    whole = await run(store, settings, exact_terms=["outbox"], limit=50)
    expected = [r.chunk_id for r in whole.results]
    texts = {r.chunk_id: r.content for r in whole.results}
    assert len(expected) == 14 and whole.continuation.has_more is False

    page = await run(store, settings, exact_terms=["outbox"], max_chars=3_000)
    seen: list[str] = []
    cut = 0
    while True:
        assert page.results, "a bounded page is never empty while results remain"
        assert (
            len(page.results) == 1
            or sum(len(r.model_dump_json(exclude_none=True)) for r in page.results) <= 3_000
        )
        for result in page.results:
            original = texts[result.chunk_id]
            if result.omitted_chars is None:
                assert result.content == original
            else:
                cut += 1
                kept = result.content.removesuffix(" …")
                assert original.startswith(kept) and len(kept) + result.omitted_chars == len(original)
                assert len(kept) <= 3_000 // 4
        seen += [r.chunk_id for r in page.results]
        assert page.statistics.total_results == 14
        if not page.continuation.has_more:
            break
        assert page.continuation.next_token is not None
        page = await run(store, settings, continuation_token=page.continuation.next_token, max_chars=3_000)
    assert seen == expected, "every result once, in the unbounded order"
    assert cut == 8, "each long message was cut, no short one was"


def test_max_chars_is_bounded() -> None:
    with pytest.raises(ValidationError):
        ContentRequest(exact_terms=["x"], max_chars=10)
