"""Two projects with indexed files and one session that mentions the same things, in a real store: the
content-file search tests (tests/search/test_content_files.py) and the learning boost tests build on it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import aiosqlite

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
