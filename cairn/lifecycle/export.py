"""`cairn export`: the store's memory (or one project's) as versioned JSONL, one record per row.

The first line is a header (`format`, `version`, the cairn that wrote it, when, which projects); then
every exported table's rows in dependency order, each `{"type": TABLE, "row": {...}}` with the row's
columns as stored, ids included as references for the importer (`cairn.lifecycle.tables`). Vectors
are not exported: they are derived from the rows, and an import recomputes them (invariant 1).

Every text value is written redacted (`cairn.transcripts.redact`), as an import redacts every value it
reads: an export leaves the machine, and the store keeps one kind of path in clear — where each
transcript is (`transcript_files.path`), which capture needs to read it again, and which spells out a
working directory, token and all, in its Claude Code directory name. A store not yet rescanned after
a rule was added (`cairn redact --rescan`) is exported under today's rules too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from cairn import __version__
from cairn.lifecycle.tables import FORMAT, FORMAT_VERSION, TABLES
from cairn.store.db import Database
from cairn.transcripts.redact import redact


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
        "projects": None if projects is None else [redact(project) for project in projects],
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
        out.extend({"type": table.name, "row": _redacted(dict(row))} for row in rows)
    return iter(out)


def _redacted(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with every text value redacted; already redacted text comes back unchanged."""
    return {column: redact(value) if isinstance(value, str) else value for column, value in row.items()}


#: Characters a terminal obeys or that reorder what is read, beyond the C0 controls JSON escapes itself:
#: DEL and C1 (U+009B is a CSI), bidi embeddings, overrides, isolates and marks, zero-width characters.
_TERMINAL_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def _line(value: dict[str, Any]) -> str:
    """`value` as one JSON line, non-ASCII text kept readable but every character `_TERMINAL_UNSAFE`
    names written as a `\\uXXXX` escape: an export printed to a terminal cannot drive it, and any JSON
    reader (`cairn import`) reads back the same text. Such characters occur only inside JSON strings."""
    text = json.dumps(value, ensure_ascii=False)
    return _TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


async def export(db: Database, out: IO[str], *, scope: ExportScope | None, projects: list[str] | None) -> int:
    """Write the header and every record to `out`; how many records (rows) were written."""
    out.write(_line(header(projects)))
    count = 0
    for record in await records(db, scope):
        out.write(_line(record))
        count += 1
    return count
