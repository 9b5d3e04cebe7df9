"""Which store tables an export carries, in dependency order, and how each row is known across stores.

Row ids are local to a store, so an export keeps them only as references: each table names the
columns that identify a row anywhere (its natural key) and the columns that point at another exported
table. An import maps every exported id to the id the same row has (or gets) in the target store, so
importing into a non-empty store merges, and importing the same file twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Table:
    """One exported table.

    `key`: SQL conditions (with one `?` each, in `key_columns` order) that find the same row in
    another store. `refs`: column -> referenced table. `late_refs`: self references, set once all
    rows are in. `where`: the rows a project export takes, over the selection's JSON id lists.
    """

    name: str
    key_columns: tuple[str, ...]
    key: tuple[str, ...]
    refs: dict[str, str] = field(default_factory=dict)
    late_refs: dict[str, str] = field(default_factory=dict)
    has_id: bool = True
    where: str = "1"


def _eq(*columns: str) -> tuple[str, ...]:
    return tuple(f"{c} IS ?" for c in columns)


_IN = "IN (SELECT value FROM json_each(:{}))"

TABLES: tuple[Table, ...] = (
    Table("projects", ("path",), _eq("path"), where=f"id {_IN.format('projects')}"),
    Table("sessions", ("id",), _eq("id"), {"project_id": "projects"}, where=f"id {_IN.format('sessions')}"),
    Table(
        "transcript_files",
        ("path",),
        _eq("path"),
        where=f"session_id {_IN.format('sessions')}",
    ),
    # Before the ideas, so an import leaves out an idea its target forgot as wrong, or the export did.
    Table(
        "idea_corrections",
        ("source_file_id", "source_line", "content_hash"),
        _eq("source_file_id", "source_line", "content_hash"),
        {"source_file_id": "transcript_files"},
        where=f"source_file_id {_IN.format('files')}",
    ),
    Table(
        "messages",
        ("file_id", "line", "content_hash"),
        _eq("file_id", "line", "content_hash"),
        {"file_id": "transcript_files"},
        where=f"session_id {_IN.format('sessions')} OR file_id {_IN.format('files')}",
    ),
    Table(
        "message_passages",
        ("message_id", "seq"),
        _eq("message_id", "seq"),
        {"message_id": "messages"},
        where=f"message_id IN (SELECT id FROM messages WHERE session_id {_IN.format('sessions')})",
    ),
    Table(
        "topic_spans",
        ("session_id", "file_id", "start_line", "name"),
        _eq("session_id", "file_id", "start_line", "name"),
        {"file_id": "transcript_files"},
        {"parent_id": "topic_spans"},
        where=f"session_id {_IN.format('sessions')}",
    ),
    Table(
        "ideas",
        ("session_id", "source_file_id", "source_line", "content_hash"),
        _eq("session_id", "source_file_id", "source_line", "content_hash"),
        {"span_id": "topic_spans", "source_file_id": "transcript_files"},
        {"answered_by": "ideas", "superseded_by": "ideas"},
        where=f"session_id {_IN.format('sessions')} OR source_file_id {_IN.format('files')}",
    ),
    Table(
        "relations",
        ("from_idea_id", "to_idea_id", "relation_type"),
        _eq("from_idea_id", "to_idea_id", "relation_type"),
        {"from_idea_id": "ideas", "to_idea_id": "ideas"},
        where=f"from_idea_id {_IN.format('ideas')} AND to_idea_id {_IN.format('ideas')}",
    ),
    Table(
        "entities",
        ("canonical_name", "type"),
        ("canonical_name = ? COLLATE NOCASE", "type IS ?"),
        where=f"id IN (SELECT entity_id FROM idea_entities WHERE idea_id {_IN.format('ideas')})",
    ),
    Table(
        "entity_aliases",
        ("alias",),
        ("alias = ? COLLATE NOCASE",),
        {"entity_id": "entities"},
        where=f"entity_id IN (SELECT entity_id FROM idea_entities WHERE idea_id {_IN.format('ideas')})",
    ),
    Table(
        "idea_entities",
        ("idea_id", "entity_id"),
        _eq("idea_id", "entity_id"),
        {"idea_id": "ideas", "entity_id": "entities"},
        has_id=False,
        where=f"idea_id {_IN.format('ideas')}",
    ),
    Table(
        "index_runs",
        ("started_at", "model", "prompt_version", "mode"),
        _eq("started_at", "model", "prompt_version", "mode"),
        where=":whole",
    ),
    Table(
        "skipped_lines",
        ("file_id", "line"),
        _eq("file_id", "line"),
        {"file_id": "transcript_files", "run_id": "index_runs"},
        has_id=False,
        where=f"file_id {_IN.format('files')}",
    ),
    Table(
        "recall_injections",
        ("session_id", "idea_id", "event", "injected_at"),
        _eq("session_id", "idea_id", "event", "injected_at"),
        {"idea_id": "ideas"},
        where=f"session_id {_IN.format('sessions')} OR idea_id {_IN.format('ideas')}",
    ),
    Table(
        "file_documents",
        ("project_id", "rel_path"),
        _eq("project_id", "rel_path"),
        {"project_id": "projects"},
        where=f"project_id {_IN.format('projects')}",
    ),
    Table(
        "file_chunks",
        ("document_id", "chunk_index"),
        _eq("document_id", "chunk_index"),
        {"document_id": "file_documents"},
        where=f"document_id IN (SELECT id FROM file_documents WHERE project_id {_IN.format('projects')})",
    ),
    Table(
        "file_requests",
        ("project_id", "path"),
        _eq("project_id", "path"),
        {"project_id": "projects"},
        where=f"project_id {_IN.format('projects')}",
    ),
    Table(
        "search_associations",
        ("query_key", "file_path"),
        _eq("query_key", "file_path"),
        {"project_id": "projects"},
        where=f"project_id {_IN.format('projects')}",
    ),
    Table(
        "learning_sessions",
        ("tool_use_id",),
        _eq("tool_use_id"),
        {"file_id": "transcript_files", "project_id": "projects"},
        where=f"project_id {_IN.format('projects')} OR session_id {_IN.format('sessions')}",
    ),
)

BY_NAME = {table.name: table for table in TABLES}

#: The export format this cairn writes and the newest it reads. 2 added `idea_corrections` and
#: `ideas.declined_at`: a cairn that reads only 1 would skip every idea row of such a file as a bad
#: line (a column it does not know), so it refuses the file whole instead. Version 1 files still import.
#: 3 added `ideas.state` (deferred, given up), which versions 1 and 2 kept in the ideas' text: their
#: ideas get it on import as migration 13 gives it to a store's (`cairn.store.legacy_states`).
FORMAT = "cairn-export"
FORMAT_VERSION = 3
STATE_FORMAT_VERSION = 3
