"""What the file index holds and why other files are not in it, as `cairn files` shows it.

It only reads: what was indexed (documents with their chunk counts and keywords) and why other files
were not (requests by status, skipped ones by reason code), which is what a person needs to see to
trust the corpus `search_content` draws on. The socket op that checks its arguments and calls it
(`files`) is in `cairn.search.ops`.
"""

from __future__ import annotations

from typing import Any

from cairn.store.db import Database
from cairn.store.json_columns import json_strings


def _in(column: str, ids: list[int] | None) -> tuple[str, list[int]]:
    if ids is None:
        return "1 = 1", []
    return f"{column} IN ({','.join('?' * len(ids))})", ids


async def file_index(
    db: Database, *, project_ids: list[int] | None = None, status: str | None = None, limit: int = 50
) -> dict[str, Any]:
    """Indexed documents (newest first), request counts by status and by skip reason, recent requests."""
    doc_where, doc_params = _in("d.project_id", project_ids)
    documents = await db.fetchall(
        f"""
        SELECT d.id, p.name AS project, p.path AS project_path, d.rel_path,
               p.path || '/' || d.rel_path AS path, d.size, d.line_count, d.keywords, d.indexed_at,
               (SELECT count(*) FROM file_chunks c WHERE c.document_id = d.id) AS chunks,
               (SELECT coalesce(sum(c.tokens), 0) FROM file_chunks c WHERE c.document_id = d.id) AS tokens
        FROM file_documents d JOIN projects p ON p.id = d.project_id
        WHERE {doc_where}
        ORDER BY d.indexed_at DESC, d.id DESC
        LIMIT ?
        """,
        (*doc_params, limit),
    )
    totals = await db.fetchone(
        f"""
        SELECT count(*) AS documents,
               (SELECT count(*) FROM file_chunks c JOIN file_documents d ON d.id = c.document_id
                WHERE {doc_where}) AS chunks
        FROM file_documents d WHERE {doc_where}
        """,
        (*doc_params, *doc_params),
    )
    req_where, req_params = _in("r.project_id", project_ids)
    by_status = await db.fetchall(
        f"SELECT r.status AS k, count(*) AS n FROM file_requests r WHERE {req_where} "
        "GROUP BY r.status ORDER BY r.status",
        req_params,
    )
    by_reason = await db.fetchall(
        f"SELECT coalesce(r.outcome, 'unknown') AS k, count(*) AS n FROM file_requests r "
        f"WHERE {req_where} AND r.status = 'skipped' GROUP BY k ORDER BY n DESC, k",
        req_params,
    )
    status_where, status_params = ("r.status = ?", [status]) if status else ("1 = 1", [])
    requests = await db.fetchall(
        f"""
        SELECT r.id, p.name AS project, p.path AS project_path, r.path, r.reason, r.status, r.outcome,
               r.attempts, r.requested_at, r.done_at
        FROM file_requests r JOIN projects p ON p.id = r.project_id
        WHERE {req_where} AND {status_where}
        ORDER BY coalesce(r.done_at, r.requested_at) DESC, r.id DESC
        LIMIT ?
        """,
        (*req_params, *status_params, limit),
    )
    return {
        "documents_total": int(totals["documents"]) if totals else 0,
        "chunks_total": int(totals["chunks"]) if totals else 0,
        "requests_by_status": {str(row["k"]): int(row["n"]) for row in by_status},
        "skipped_by_reason": {str(row["k"]): int(row["n"]) for row in by_reason},
        "documents": [{**dict(row), "keywords": json_strings(row["keywords"])} for row in documents],
        "requests": [dict(row) for row in requests],
    }
