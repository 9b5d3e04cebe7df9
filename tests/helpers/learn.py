"""A store filled with projects, indexed files, file requests, learning sessions and associations, and the
learner figures it holds, for the tests of `cairn learn`, the search ops and the MCP server."""

from __future__ import annotations

import json
from typing import Any

import aiosqlite

from cairn.store.store import Store

SHOP = "/srv/shop"
BILLING = "/srv/billing"
LOGIN = f"{SHOP}/src/components/LoginButton.tsx"
# What `learner_stats` must count from `fill`: six searches, of which two resolved, one timed out (with
# an error), one dismissed (strong), one active and one pending; one failed file request; three
# associations, two learned (one learned twice, used three times) and one from the indexing agent.
EXPECTED_FIGURES = {
    "searches_seen": 6,
    "sessions_started": 4,
    "sessions_resolved": 2,
    "sessions_timed_out": 1,
    "active_sessions": 2,
    "files_learned": 2,
    "associations_created": 2,
    "associations_from_agent": 1,
    "association_repeats": 1,
    "association_hits": 3,
    "errors": 2,
}


async def fill(store: Store) -> dict[str, int]:
    """Projects, indexed files, file requests, learning sessions and associations; ids by name."""
    ids: dict[str, int] = {}
    async with store.db.write() as conn:
        shop = await _id(conn, "INSERT INTO projects (path, name) VALUES (?, 'shop')", (SHOP,))
        billing = await _id(conn, "INSERT INTO projects (path, name) VALUES (?, 'billing')", (BILLING,))
        await conn.execute("INSERT INTO sessions (id, project_id, cwd) VALUES ('s-shop', ?, ?)", (shop, SHOP))
        ids["login_doc"] = await _id(
            conn,
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size, line_count, keywords, "
            "indexed_at) VALUES (?, 'src/components/LoginButton.tsx', 'h1', 900, 40, ?, "
            "'2025-09-03T10:00:00.000Z')",
            (shop, json.dumps(["LoginButton", "onLogin", "sign in"])),
        )
        ids["users_doc"] = await _id(
            conn,
            "INSERT INTO file_documents (project_id, rel_path, content_hash, size, line_count, keywords, "
            "indexed_at) VALUES (?, 'app/users.py', 'h2', 300, 12, ?, '2025-09-02T10:00:00.000Z')",
            (billing, json.dumps(["create_user"])),
        )
        chunks = [
            (ids["login_doc"], 0, 1, 25, "export function LoginButton() {", 120),
            (ids["login_doc"], 1, 22, 40, "  return <button onClick={onLogin}>Sign in</button>", 80),
            (ids["users_doc"], 0, 1, 12, "def create_user(name): ...", 40),
        ]
        await conn.executemany(
            "INSERT INTO file_chunks (document_id, chunk_index, start_line, end_line, content, tokens) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            chunks,
        )
        requests = [
            (shop, LOGIN, "read", "indexed", None, 1, "2025-09-03T10:00:00.000Z"),
            (shop, f"{SHOP}/.env", "read", "skipped", "secret", 1, "2025-09-03T10:01:00.000Z"),
            (shop, f"{SHOP}/dist/bundle.js", "grep", "skipped", "ignored", 1, "2025-09-03T10:02:00.000Z"),
            (shop, f"{SHOP}/src/new.ts", "edit", "pending", None, 0, None),
            (billing, f"{BILLING}/app/users.py", "learned", "indexed", None, 1, "2025-09-02T10:00:00.000Z"),
            (billing, f"{BILLING}/data.db", "read", "failed", "OSError: [Errno 5] I/O error", 3, None),
        ]
        await conn.executemany(
            "INSERT INTO file_requests (project_id, path, reason, status, outcome, attempts, done_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            requests,
        )
        sessions = [
            ("t1", "login button component", 0.31, "resolved", None),
            ("t2", "user creation", 0.2, "resolved", None),
            ("t3", "payment retries", 0.0, "timed_out", "search result missing"),
            ("t4", "orders schema", 0.9, "dismissed", None),
            ("t5", "cart totals", 0.4, "active", None),
            ("t6", "checkout flow", None, "pending", None),
        ]
        await conn.executemany(
            "INSERT INTO learning_sessions (session_id, tool_use_id, project_id, tool_name, query, "
            "best_score, status, error, started_at) "
            "VALUES ('s-shop', ?, ?, 'mcp__cairn__search', ?, ?, ?, ?, '2025-09-03T10:00:00.000Z')",
            [(tool, shop, q, score, status, error) for tool, q, score, status, error in sessions],
        )
        associations = [
            ("login", "login button component", LOGIN, "src/components/LoginButton.tsx", shop, "learned",
             ["LoginButton"], 0.31, 2, 3, "2025-09-03T10:05:00.000Z"),
            ("users", "user creation", f"{BILLING}/app/users.py", "app/users.py", billing, "learned",
             [], 0.2, 1, 0, "2025-09-02T10:05:00.000Z"),
            ("auth", "auth flow", f"{SHOP}/src/auth.ts", "src/auth.ts", shop, "agent",
             [], None, 1, 0, "2025-09-01T10:05:00.000Z"),
        ]  # fmt: skip
        for name, q, path, rel, project, source, greps, score, times, hits, learned_at in associations:
            ids[name] = await _id(
                conn,
                "INSERT INTO search_associations (query, query_key, file_path, rel_path, project_id, source, "
                "grep_patterns, original_score, times_learned, hits, learned_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (q, q, path, rel, project, source, json.dumps(greps), score, times, hits, learned_at),
            )
    return ids


async def _id(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    async with conn.execute(sql + " RETURNING id", params) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])
