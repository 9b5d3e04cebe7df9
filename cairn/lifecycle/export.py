"""`cairn export`: the store's memory (or one project's) as versioned JSONL, one record per row.

The first line is a header (`format`, `version`, the cairn that wrote it, when, which projects); then
every exported table's rows in dependency order, each `{"type": TABLE, "row": {...}}` with the row's
columns as stored, ids included as references for the importer (`cairn.lifecycle.tables`). Vectors
are not exported: they are derived from the rows, and an import recomputes them (invariant 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from cairn import __version__
from cairn.lifecycle.tables import FORMAT, FORMAT_VERSION, TABLES
from cairn.store.db import Database


@dataclass(frozen=True)
class ExportScope:
    """The JSON id lists a project export selects rows by (`Table.where`); None means everything."""

    projects: list[int]
    sessions: list[str]
    files: list[int]
    ideas: list[int]


async def scope_for(db: Database, project_ids: list[int]) -> ExportScope:
    """The sessions, transcript files and ideas that belong to the projects `project_ids`."""
    marks = json.dumps(project_ids)
    sessions = [
        str(r[0])
        for r in await db.fetchall(
            "SELECT id FROM sessions WHERE project_id IN (SELECT value FROM json_each(?))", (marks,)
        )
    ]
    s = json.dumps(sessions)
    files = [
        int(r[0])
        for r in await db.fetchall(
            "SELECT id FROM transcript_files WHERE session_id IN (SELECT value FROM json_each(?))", (s,)
        )
    ]
    ideas = [
        int(r[0])
        for r in await db.fetchall(
            """SELECT id FROM ideas WHERE session_id IN (SELECT value FROM json_each(?))
               OR source_file_id IN (SELECT value FROM json_each(?))""",
            (s, json.dumps(files)),
        )
    ]
    return ExportScope(project_ids, sessions, files, ideas)


def header(projects: list[str] | None) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "cairn": __version__,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "projects": projects,
    }


async def records(db: Database, scope: ExportScope | None) -> Iterator[dict[str, Any]]:
    """Every exported row as a record, table by table in dependency order, each table in id order."""
    out: list[dict[str, Any]] = []
    for table in TABLES:
        if scope is None:
            where, params = "1", {}
        else:
            where = table.where
            params = {
                "projects": json.dumps(scope.projects),
                "sessions": json.dumps(scope.sessions),
                "files": json.dumps(scope.files),
                "ideas": json.dumps(scope.ideas),
                "whole": 0,
            }
            params = {k: v for k, v in params.items() if f":{k}" in where}
        order = "id" if table.has_id else ", ".join(table.key_columns)
        rows = await db.fetchall(f"SELECT * FROM {table.name} WHERE {where} ORDER BY {order}", params)
        out.extend({"type": table.name, "row": dict(row)} for row in rows)
    return iter(out)


async def export(db: Database, out: IO[str], *, scope: ExportScope | None, projects: list[str] | None) -> int:
    """Write the header and every record to `out`; how many records (rows) were written."""
    out.write(json.dumps(header(projects), ensure_ascii=False) + "\n")
    count = 0
    for record in await records(db, scope):
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
