"""search_content over file chunks next to transcript messages, and `show` of a chunk id, on a real store.

The file index (documents, chunks, keywords) is written with plain SQL as the indexer would leave it,
and embedded through the real outbox into real Chroma with the packaged MiniLM, so these tests do not
depend on how files get chunked — only on what search does with the chunks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiosqlite
import pytest

from cairn.search.content import search_content
from cairn.search.content_models import ContentRequest, ContentResponse
from cairn.search.errors import ItemNotFoundError, SearchError
from cairn.search.items import show
from cairn.search.models import parse_item_id
from cairn.search.timeline import timeline
from cairn.store.store import Store, message_hash
from tests.tools.memory import insert

WEBAPP, API = "/work/webapp", "/work/api"
SESSION = "s-web"
TRANSCRIPT = "/t/s-web.jsonl"

# (project, rel_path, keywords, [(start_line, end_line, content)])
FILES: list[tuple[str, str, list[str], list[tuple[int, int, str]]]] = [
    (
        WEBAPP,
        "src/api/users.ts",
        ["createUser", "users router", "validation"],
        [
            (
                1,
                12,
                "router.post('/users', validate(createUserSchema), async (req, res) => {\n"
                "  const user = await db.users.insert(req.body);\n"
                "  res.status(201).json(user);\n});",
            ),
            (
                10,
                20,
                "router.delete('/users/:id', requireAdmin, async (req, res) => {\n"
                "  res.status(204).end();\n});",
            ),
        ],
    ),
    (
        WEBAPP,
        "src/hooks/useSession.ts",
        ["useSession", "useState", "session refresh", "JWT", "React hooks", "token", "expiry", "logout"],
        [
            (
                1,
                30,
                "export function useSession() {\n  const [token, setToken] = useState(readToken());\n"
                "  useEffect(() => scheduleRefresh(token, setToken), [token]);\n  return token;\n}",
            ),
        ],
    ),
    (
        WEBAPP,
        "docs/setup.md",
        ["Setup", "pnpm", "dev server"],
        [
            (
                1,
                8,
                "# Setup\n\nInstall dependencies with pnpm, copy the example environment and run the "
                "dev server.",
            )
        ],
    ),
    (
        API,
        "app/storage.py",
        ["Storage", "SQLite", "WAL"],
        [
            (
                1,
                25,
                "class Storage:\n    def open(self):\n"
                "        # SQLite in WAL mode so readers never block the writer\n"
                "        self.conn = sqlite3.connect(self.path)",
            ),
        ],
    ),
]

MESSAGES = [
    (1, "We keep the signed-in user in useState inside the session hook; the outbox sync comes later."),
    (2, "The dev server runs on port 5173 and the outbox table queues vector writes."),
    (3, "Creating a user goes through the POST /users route with schema validation."),
]


@dataclass
class Corpus:
    projects: dict[str, int] = field(default_factory=dict)
    documents: dict[str, int] = field(default_factory=dict)
    chunks: dict[tuple[str, int], int] = field(default_factory=dict)
    messages: dict[int, int] = field(default_factory=dict)

    def chunk(self, rel_path: str, index: int = 0) -> str:
        return f"c{self.chunks[(rel_path, index)]}"

    def message(self, line: int) -> str:
        return f"m{self.messages[line]}"


async def add_document(
    conn: aiosqlite.Connection,
    project_id: int,
    rel_path: str,
    keywords: list[str],
    chunks: list[tuple[int, int, str]],
) -> tuple[int, list[int]]:
    """One indexed file and its chunks, as the file index writes them."""
    text = "\n".join(content for _, _, content in chunks)
    document = await insert(
        conn,
        "INSERT INTO file_documents (project_id, rel_path, content_hash, size, line_count, keywords) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (project_id, rel_path, f"sha-{rel_path}", len(text), chunks[-1][1], json.dumps(keywords)),
    )
    ids = []
    for index, (start, end, content) in enumerate(chunks):
        ids.append(
            await insert(
                conn,
                "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content, tokens) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (document, index, start, end, content, len(content.split())),
            )
        )
    return document, ids


async def build_files(store: Store) -> Corpus:
    """Two projects with indexed files, and one webapp session whose messages mention the same things."""
    corpus = Corpus()
    async with store.db.write() as conn:
        for path in (WEBAPP, API):
            corpus.projects[path] = await insert(
                conn, "INSERT INTO projects (path, name) VALUES (?, ?)", (path, path.rsplit("/", 1)[-1])
            )
        await conn.execute(
            "INSERT INTO sessions (id, project_id) VALUES (?, ?)", (SESSION, corpus.projects[WEBAPP])
        )
        file_id = await insert(
            conn, "INSERT INTO transcript_files (path, session_id) VALUES (?, ?)", (TRANSCRIPT, SESSION)
        )
        for project, rel_path, keywords, chunks in FILES:
            document, ids = await add_document(conn, corpus.projects[project], rel_path, keywords, chunks)
            corpus.documents[rel_path] = document
            for index, chunk_id in enumerate(ids):
                corpus.chunks[(rel_path, index)] = chunk_id
        for line, text in MESSAGES:
            corpus.messages[line] = await insert(
                conn,
                "INSERT INTO messages (session_id, file_id, line, end_line, byte_start, byte_end, role, "
                "kind, text, content_hash, timestamp) VALUES (?, ?, ?, ?, 0, 10, 'user', 'text', ?, ?, ?)",
                (
                    SESSION,
                    file_id,
                    line,
                    line,
                    text,
                    message_hash("user", "text", text),
                    "2025-01-02T03:04:05Z",
                ),
            )
    await store.sync_vectors()
    return corpus


@pytest.fixture
async def corpus(store: Store) -> Corpus:
    return await build_files(store)


async def run(store: Store, **fields: Any) -> ContentResponse:
    return await search_content(
        store.db, store.vectors, store.settings, ContentRequest(**fields), record_usage=False
    )


def ids(response: ContentResponse) -> list[str]:
    return [r.chunk_id for r in response.results]


# Concepts, exact terms, both


async def test_concepts_find_the_file_chunk_with_its_path_lines_and_keywords(
    store: Store, corpus: Corpus
) -> None:
    response = await run(store, semantic_concepts=["user creation endpoint"], min_score=0.2)
    # The message that says it in words ranks with the code: both sources are searched.
    assert corpus.message(3) in ids(response)
    top = next(r for r in response.results if r.chunk_id.startswith("c"))
    assert top.chunk_id == corpus.chunk("src/api/users.ts")
    assert top.document_id == f"{WEBAPP}/src/api/users.ts"
    assert (top.chunk_index, top.start_line, top.end_line) == (0, 1, 12)
    assert top.content.startswith("router.post('/users'")
    assert top.document_keywords == ["createUser", "users router", "validation"]
    assert top.learned_from is None
    assert f"{WEBAPP}/src/api/users.ts" in response.statistics.files_covered
    code = await run(store, exact_terms=["createUserSchema"])
    assert ids(code) == [corpus.chunk("src/api/users.ts")]
    hints = code.navigation_hints.next_actions
    assert f"Open the file {WEBAPP}/src/api/users.ts at lines 1-12" in hints
    assert not any("show(id=" in hint for hint in hints)


async def test_exact_terms_match_file_chunks_and_files_come_first_in_ties(
    store: Store, corpus: Corpus
) -> None:
    response = await run(store, exact_terms=["useState"])
    assert ids(response) == [corpus.chunk("src/hooks/useSession.ts"), corpus.message(1)]
    assert {r.relevance_score for r in response.results} == {1.0}
    # Code-shaped terms are case-sensitive in files as in messages.
    assert await run(store, exact_terms=["UseState"]) is not None
    assert ids(await run(store, exact_terms=["UseState"])) == []
    # A symbol FTS does not index is found by a plain scan of the chunks.
    arrow = await run(store, exact_terms=["=>"], min_score=0)
    assert corpus.chunk("src/api/users.ts") in ids(arrow) and corpus.chunk("src/hooks/useSession.ts") in ids(
        arrow
    )


async def test_an_exact_term_multiplies_a_file_chunks_semantic_score(store: Store, corpus: Corpus) -> None:
    concepts = ["scheduling a refresh"]
    target = corpus.chunk("src/hooks/useSession.ts")
    semantic = {
        r.chunk_id: r.relevance_score
        for r in (await run(store, semantic_concepts=concepts, min_score=0)).results
    }
    both = {
        r.chunk_id: r.relevance_score
        for r in (
            await run(store, semantic_concepts=concepts, exact_terms=["useEffect"], min_score=0)
        ).results
    }
    assert 0 < semantic[target] < 1 / 1.5
    assert both[target] == pytest.approx(semantic[target] * 1.5, abs=2e-4)
    assert next(iter(both)) == target


async def test_project_filter_narrows_files_and_a_session_filter_leaves_them_out(
    store: Store, corpus: Corpus
) -> None:
    everywhere = await run(store, exact_terms=["SQLite", "outbox"], min_score=0)
    assert corpus.chunk("app/storage.py") in ids(everywhere)
    api = await run(store, exact_terms=["SQLite", "outbox"], min_score=0, project="api")
    assert ids(api) == [corpus.chunk("app/storage.py")]
    webapp = await run(store, semantic_concepts=["database write-ahead log"], min_score=0, project=WEBAPP)
    assert corpus.chunk("app/storage.py") not in ids(webapp)
    assert all(r.document_id.startswith(WEBAPP) or r.document_id == TRANSCRIPT for r in webapp.results)

    session = await run(store, exact_terms=["useState"], session=SESSION)
    assert ids(session) == [corpus.message(1)]
    assert "project files, which belong to no session, left out" in session.statistics.search_interpretation
    with pytest.raises(SearchError, match="no project"):
        await run(store, exact_terms=["useState"], project="/work/elsewhere")


async def test_pages_run_across_both_sources_without_repeats(store: Store, corpus: Corpus) -> None:
    request: dict[str, Any] = {"exact_terms": ["res", "dev", "outbox", "useState", "SQLite"], "min_score": 0}
    whole = await run(store, **request, limit=50)
    total = whole.statistics.total_results
    kinds = {r.chunk_id[0] for r in whole.results}
    assert kinds == {"c", "m"} and total >= 6
    page = await run(store, **request, limit=2)
    seen = ids(page)
    # A file indexed while the caller pages is neither shown nor counted.
    async with store.db.write() as conn:
        await add_document(
            conn, corpus.projects[WEBAPP], "src/late.ts", [], [(1, 2, "dev outbox useState res")]
        )
    await store.sync_vectors()
    while page.continuation.has_more:
        assert page.continuation.next_token is not None
        page = await search_content(
            store.db,
            store.vectors,
            store.settings,
            ContentRequest(continuation_token=page.continuation.next_token, limit=2),
            record_usage=False,
        )
        assert page.statistics.total_results == total
        seen += ids(page)
    assert seen == ids(whole)
    assert len(seen) == len(set(seen)) == total
    assert (await run(store, **request, limit=50)).statistics.total_results == total + 1


async def test_document_keywords_are_capped_and_feed_related_queries(store: Store, corpus: Corpus) -> None:
    response = await run(store, exact_terms=["useEffect"])
    assert response.results[0].document_keywords == [
        "useSession",
        "useState",
        "session refresh",
        "JWT",
        "React hooks",
        "token",
        "expiry",
    ]
    assert response.navigation_hints.related_queries == [
        "expiry",
        "JWT",
        "React hooks",
        "session refresh",
        "token",
    ]


async def test_without_vectors_concepts_find_file_chunks_by_their_words(store: Store, corpus: Corpus) -> None:
    request = ContentRequest(semantic_concepts=["schema validation users"], min_score=0.3)
    response = await search_content(store.db, None, store.settings, request, record_usage=False)
    assert "unavailable" in response.statistics.search_interpretation
    assert corpus.chunk("src/api/users.ts") in ids(response)


async def test_a_file_whose_chunks_are_gone_is_no_longer_found(store: Store, corpus: Corpus) -> None:
    async with store.db.write() as conn:
        await conn.execute("DELETE FROM file_documents WHERE id = ?", (corpus.documents["src/api/users.ts"],))
    await store.sync_vectors()
    assert store.vectors.get_embeddings("chunks", [str(corpus.chunks[("src/api/users.ts", 0)])]) == {}
    response = await run(
        store, semantic_concepts=["user creation endpoint"], exact_terms=["router"], min_score=0
    )
    assert not any(r.chunk_id.startswith("c") and "users.ts" in r.document_id for r in response.results)


# show c<id>


async def test_show_a_file_chunk_with_keywords_and_associations(store: Store, corpus: Corpus) -> None:
    chunk = corpus.chunks[("src/api/users.ts", 1)]
    async with store.db.write() as conn:
        await conn.execute(
            "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source, "
            "grep_patterns, original_score, times_learned, hits) "
            "VALUES (?, ?, ?, ?, ?, 'learned', ?, ?, 2, 3)",
            (
                "user creation endpoint",
                "user creation endpoint",
                f"{WEBAPP}/src/api/users.ts",
                "src/api/users.ts",
                corpus.projects[WEBAPP],
                json.dumps(["createUser|user.*create"]),
                0.38,
            ),
        )
        # Another project's file with the same relative path is another file.
        await conn.execute(
            "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source) "
            "VALUES ('users api', 'users api', '/work/api/src/api/users.ts', 'src/api/users.ts', ?, 'agent')",
            (corpus.projects[API],),
        )
    detail = await show(store.db, f"c{chunk}")
    assert (detail.id, detail.kind, detail.title) == (f"c{chunk}", "chunk", "src/api/users.ts")
    assert detail.content.startswith("router.delete")
    assert (detail.source.file, detail.source.line, detail.end_line) == (f"{WEBAPP}/src/api/users.ts", 10, 20)
    assert (detail.project, detail.chunk_index) == (WEBAPP, 1)
    assert detail.document_keywords == ["createUser", "users router", "validation"]
    assert detail.indexed_at is not None and detail.session is None
    assert [(a.query, a.source, a.times_learned, a.hits) for a in detail.associations] == [
        ("user creation endpoint", "learned", 2, 3)
    ]
    assert detail.associations[0].grep_patterns == ["createUser|user.*create"]
    assert detail.associations[0].original_score == 0.38
    assert (await show(store.db, f"chunk:{chunk}")).id == f"c{chunk}"


async def test_chunk_ids_parse_and_unknown_ones_are_clear_errors(store: Store, corpus: Corpus) -> None:
    assert parse_item_id("c12") == ("chunk", 12)
    assert parse_item_id("C7") == ("chunk", 7)
    with pytest.raises(ItemNotFoundError, match="file chunk c99999"):
        await show(store.db, "c99999")
    with pytest.raises(SearchError, match="no place in the conversation's timeline"):
        await timeline(store.db, corpus.chunk("docs/setup.md"))
