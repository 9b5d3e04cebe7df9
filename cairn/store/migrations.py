"""The store's schema as an ordered list of migrations; the version lives in `PRAGMA user_version`.

Each migration is a list of SQL statements applied in its own `BEGIN IMMEDIATE` transaction together
with the new `user_version`, so a crash mid-upgrade leaves the database at the previous version, never
half-way. Migrations are history: once released, a step's text must never change — add a new step.
The user_version is re-read inside each step's transaction, so two processes opening an old database
at once cannot both apply the same step.

Conventions: times are ISO-8601 UTC text with milliseconds (`2025-09-03T00:47:19.293Z`), the format of
`strftime('%Y-%m-%dT%H:%M:%fZ','now')`, so text order is time order. JSON columns are checked with
`json_valid`. Full-text tables are FTS5 external-content tables kept in step by triggers. Rows that
have vectors or that the indexing agent refers to by id use AUTOINCREMENT: an id, once deleted, is
never handed to another row, so a stale id from a model or in Chroma can never hit the wrong row.

1. capture: projects, sessions, transcript files and their messages (+ `messages_fts`).
2. memory: what the indexing agent writes — ideas, relations, topic spans, entities (+ FTS).
3. operations: the work queue, learned search associations, index-run accounting, and the vector
   outbox with the triggers that fill it (and a backfill of every row that existed before it).
4. indexing: the indexer's per-file line cursor, the lines it chose to skip, what each run applied.
5. generations: where a truncated or replaced transcript's new content starts, so it is indexed again.
6. search: when each idea was said in its session (recency and timelines need conversation time, not
   the time a backfill happened to index it).
7. recall: which ideas were injected into which coding-agent session, and which the agent then expanded.
8. files and learning: chunks of the project files the coding agent touched (+ FTS, vectors), the
   requests to index them, the search-learning sessions, and search associations rebuilt to belong to
   a project, merge repeats of a query and have vectors (the outbox is rebuilt to allow the new kinds).
9. passages: long messages cut into passages (`cairn.transcripts.passages`) with their character
   ranges, full-text indexed and queued for vectors (the outbox is rebuilt again to allow them).
10. reindex: `cairn reindex` jobs and the sessions each has swapped to its new generation, so a rerun
   after a crash resumes where it stopped.
11. projects as repositories: `project_paths` (the cwds, checkouts and Claude Code directory names
   each project covers) and how each project's root was found; existing projects are regrouped by
   `cairn.store.projects.regroup` in the same transaction (worktrees and subdirectories merged into
   their repository's project, nothing deleted but the emptied duplicates).
12. corrections: what a person said about an idea (answered, done, declined, wrong, its importance),
   kept by the idea's place so a re-created idea gets it again (`cairn.lifecycle.correct`), and
   `ideas.declined_at`; an idea's importance change re-queues its vector (its metadata carries it).
13. idea state: `ideas.state` (deferred, given up) as data rather than words in the idea's text, filled
   from those words for existing ideas (`cairn.store.legacy_states`), and an index of the person's
   prompts per file, which the definition of open reads (`cairn.store.open_ideas`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiosqlite

from cairn.errors import Failure
from cairn.store.legacy_states import backfill as backfill_states
from cairn.store.origins import fill_origins
from cairn.store.projects import regroup
from cairn.transcripts.origin import ORIGINS


class SchemaTooNewError(Failure):
    """The database was written by a newer cairn; opening it with this one could corrupt it."""


class MigrationError(Failure):
    """A migration could not be applied (or was asked to go backwards)."""


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    # Work SQL cannot express (it reads the disk), run after the statements in the same transaction.
    then: Callable[[aiosqlite.Connection], Awaitable[object]] | None = None


def _enqueue(kind: str, item: str, op: str) -> str:
    """The outbox insert used inside triggers: a re-queue bumps `revision` so a drain in flight keeps it."""
    return f"""
        INSERT INTO vector_outbox (kind, item_id, op) VALUES ('{kind}', {item}, '{op}')
        ON CONFLICT (kind, item_id) DO UPDATE SET
            op = excluded.op, queued_at = excluded.queued_at, revision = revision + 1;"""


_CAPTURE = Migration(
    1,
    "capture: projects, sessions, transcript files, messages + FTS",
    (
        """
        CREATE TABLE projects (
            id          INTEGER PRIMARY KEY,
            path        TEXT NOT NULL UNIQUE,
            name        TEXT NOT NULL,
            created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )
        """,
        """
        CREATE TABLE sessions (
            id             TEXT PRIMARY KEY,
            project_id     INTEGER REFERENCES projects (id) ON DELETE SET NULL,
            cwd            TEXT,
            git_branch     TEXT,
            started_at     TEXT,
            last_at        TEXT,
            message_count  INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
            created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            updated_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )
        """,
        "CREATE INDEX sessions_project ON sessions (project_id, last_at)",
        """
        CREATE TABLE transcript_files (
            id           INTEGER PRIMARY KEY,
            path         TEXT NOT NULL UNIQUE,
            session_id   TEXT REFERENCES sessions (id) ON DELETE SET NULL,
            byte_offset  INTEGER NOT NULL DEFAULT 0 CHECK (byte_offset >= 0),
            line         INTEGER NOT NULL DEFAULT 0 CHECK (line >= 0),
            inode        INTEGER,
            size         INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
            is_subagent  INTEGER NOT NULL DEFAULT 0 CHECK (is_subagent IN (0, 1)),
            agent_id     TEXT,
            created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )
        """,
        "CREATE INDEX transcript_files_session ON transcript_files (session_id)",
        """
        CREATE TABLE messages (
            id                  INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id          TEXT REFERENCES sessions (id) ON DELETE CASCADE,
            file_id             INTEGER NOT NULL REFERENCES transcript_files (id) ON DELETE CASCADE,
            line                INTEGER NOT NULL CHECK (line >= 0),
            end_line            INTEGER NOT NULL,
            byte_start          INTEGER NOT NULL CHECK (byte_start >= 0),
            byte_end            INTEGER NOT NULL,
            uuid                TEXT,
            message_id          TEXT,
            role                TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'summary')),
            kind                TEXT NOT NULL CHECK (kind IN ('text', 'tool_result', 'compact_summary',
                                                              'command', 'meta', 'system', 'summary')),
            text                TEXT NOT NULL,
            content_hash        TEXT NOT NULL,
            timestamp           TEXT,
            cwd                 TEXT,
            git_branch          TEXT,
            is_sidechain        INTEGER NOT NULL DEFAULT 0 CHECK (is_sidechain IN (0, 1)),
            agent_id            TEXT,
            is_noise            INTEGER NOT NULL DEFAULT 0 CHECK (is_noise IN (0, 1)),
            is_compact_summary  INTEGER NOT NULL DEFAULT 0 CHECK (is_compact_summary IN (0, 1)),
            tool_calls          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tool_calls)),
            tool_results        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tool_results)),
            created_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            CHECK (end_line >= line),
            CHECK (byte_end >= byte_start),
            UNIQUE (file_id, line, content_hash)
        )
        """,
        "CREATE INDEX messages_session_time ON messages (session_id, timestamp)",
        "CREATE INDEX messages_uuid ON messages (uuid) WHERE uuid IS NOT NULL",
        """
        CREATE VIRTUAL TABLE messages_fts USING fts5 (
            text, content = 'messages', content_rowid = 'id', tokenize = 'porter unicode61'
        )
        """,
        """
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts (rowid, text) VALUES (NEW.id, NEW.text);
        END
        """,
        """
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', OLD.id, OLD.text);
        END
        """,
        """
        CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', OLD.id, OLD.text);
            INSERT INTO messages_fts (rowid, text) VALUES (NEW.id, NEW.text);
        END
        """,
    ),
)

_MEMORY = Migration(
    2,
    "memory: ideas, relations, topic spans, entities + FTS",
    (
        """
        CREATE TABLE topic_spans (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            file_id     INTEGER REFERENCES transcript_files (id) ON DELETE SET NULL,
            parent_id   INTEGER REFERENCES topic_spans (id) ON DELETE SET NULL,
            name        TEXT NOT NULL CHECK (length(trim(name)) > 0),
            summary     TEXT NOT NULL DEFAULT '',
            start_line  INTEGER NOT NULL CHECK (start_line >= 0),
            end_line    INTEGER CHECK (end_line IS NULL OR end_line >= start_line),
            depth       INTEGER NOT NULL DEFAULT 0 CHECK (depth >= 0),
            created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )
        """,
        "CREATE INDEX topic_spans_session ON topic_spans (session_id, start_line)",
        "CREATE INDEX topic_spans_parent ON topic_spans (parent_id)",
        """
        CREATE TABLE ideas (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id      TEXT REFERENCES sessions (id) ON DELETE SET NULL,
            span_id         INTEGER REFERENCES topic_spans (id) ON DELETE SET NULL,
            source_file_id  INTEGER REFERENCES transcript_files (id) ON DELETE SET NULL,
            source_line     INTEGER CHECK (source_line IS NULL OR source_line >= 0),
            intent          TEXT NOT NULL CHECK (intent IN ('decision', 'conclusion', 'question', 'problem',
                                                            'solution', 'todo', 'context')),
            content         TEXT NOT NULL CHECK (length(trim(content)) > 0),
            content_hash    TEXT NOT NULL,
            confidence      REAL NOT NULL DEFAULT 0.5 CHECK (confidence BETWEEN 0 AND 1),
            importance      REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
            answered_by     INTEGER REFERENCES ideas (id) ON DELETE SET NULL,
            answered_at     TEXT,
            completed_at    TEXT,
            resolved_line   INTEGER,
            resolution      TEXT,
            superseded_by   INTEGER REFERENCES ideas (id) ON DELETE SET NULL,
            valid_until     TEXT,
            usage_count     INTEGER NOT NULL DEFAULT 0 CHECK (usage_count >= 0),
            last_used_at    TEXT,
            created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            CHECK (answered_at IS NULL OR intent IN ('question', 'problem')),
            CHECK (completed_at IS NULL OR intent = 'todo'),
            UNIQUE (source_file_id, source_line, content_hash)
        )
        """,
        "CREATE INDEX ideas_session_intent ON ideas (session_id, intent, created_at)",
        "CREATE INDEX ideas_span ON ideas (span_id)",
        "CREATE INDEX ideas_content_hash ON ideas (content_hash)",
        "CREATE INDEX ideas_superseded_by ON ideas (superseded_by) WHERE superseded_by IS NOT NULL",
        """
        CREATE INDEX ideas_open ON ideas (session_id, intent)
            WHERE (intent = 'question' AND answered_at IS NULL) OR (intent = 'todo' AND completed_at IS NULL)
        """,
        """
        CREATE VIRTUAL TABLE ideas_fts USING fts5 (
            content, content = 'ideas', content_rowid = 'id', tokenize = 'porter unicode61'
        )
        """,
        """
        CREATE TRIGGER ideas_fts_insert AFTER INSERT ON ideas BEGIN
            INSERT INTO ideas_fts (rowid, content) VALUES (NEW.id, NEW.content);
        END
        """,
        """
        CREATE TRIGGER ideas_fts_delete AFTER DELETE ON ideas BEGIN
            INSERT INTO ideas_fts (ideas_fts, rowid, content) VALUES ('delete', OLD.id, OLD.content);
        END
        """,
        """
        CREATE TRIGGER ideas_fts_update AFTER UPDATE OF content ON ideas BEGIN
            INSERT INTO ideas_fts (ideas_fts, rowid, content) VALUES ('delete', OLD.id, OLD.content);
            INSERT INTO ideas_fts (rowid, content) VALUES (NEW.id, NEW.content);
        END
        """,
        """
        CREATE TABLE relations (
            id             INTEGER PRIMARY KEY,
            from_idea_id   INTEGER NOT NULL REFERENCES ideas (id) ON DELETE CASCADE,
            to_idea_id     INTEGER NOT NULL REFERENCES ideas (id) ON DELETE CASCADE,
            relation_type  TEXT NOT NULL CHECK (relation_type IN ('supersedes', 'builds_on', 'contradicts',
                                                                  'answers', 'relates_to')),
            created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            CHECK (from_idea_id <> to_idea_id),
            UNIQUE (from_idea_id, to_idea_id, relation_type)
        )
        """,
        "CREATE INDEX relations_to ON relations (to_idea_id, relation_type)",
        """
        CREATE VIRTUAL TABLE spans_fts USING fts5 (
            name, summary, content = 'topic_spans', content_rowid = 'id', tokenize = 'porter unicode61'
        )
        """,
        """
        CREATE TRIGGER spans_fts_insert AFTER INSERT ON topic_spans BEGIN
            INSERT INTO spans_fts (rowid, name, summary) VALUES (NEW.id, NEW.name, NEW.summary);
        END
        """,
        """
        CREATE TRIGGER spans_fts_delete AFTER DELETE ON topic_spans BEGIN
            INSERT INTO spans_fts (spans_fts, rowid, name, summary)
                VALUES ('delete', OLD.id, OLD.name, OLD.summary);
        END
        """,
        """
        CREATE TRIGGER spans_fts_update AFTER UPDATE OF name, summary ON topic_spans BEGIN
            INSERT INTO spans_fts (spans_fts, rowid, name, summary)
                VALUES ('delete', OLD.id, OLD.name, OLD.summary);
            INSERT INTO spans_fts (rowid, name, summary) VALUES (NEW.id, NEW.name, NEW.summary);
        END
        """,
        """
        CREATE TABLE entities (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            canonical_name  TEXT NOT NULL CHECK (length(trim(canonical_name)) > 0),
            type            TEXT NOT NULL
                            CHECK (type IN ('project', 'technology', 'concept', 'person', 'file')),
            created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            UNIQUE (canonical_name COLLATE NOCASE, type)
        )
        """,
        """
        CREATE TABLE entity_aliases (
            id         INTEGER PRIMARY KEY,
            entity_id  INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            alias      TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(trim(alias)) > 0)
        )
        """,
        "CREATE INDEX entity_aliases_entity ON entity_aliases (entity_id)",
        """
        CREATE TABLE idea_entities (
            idea_id    INTEGER NOT NULL REFERENCES ideas (id) ON DELETE CASCADE,
            entity_id  INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (idea_id, entity_id)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX idea_entities_entity ON idea_entities (entity_id, idea_id)",
    ),
)

_OPERATIONS = Migration(
    3,
    "operations: work queue, search associations, index runs, vector outbox",
    (
        """
        CREATE TABLE work_queue (
            id           INTEGER PRIMARY KEY,
            path         TEXT NOT NULL,
            session_id   TEXT,
            event        TEXT,
            enqueued_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_try_at  TEXT,
            last_error   TEXT,
            status       TEXT NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'running', 'parked', 'done'))
        )
        """,
        # While a path waits, further hook notifications for it collapse into the one pending row.
        "CREATE UNIQUE INDEX work_queue_pending_path ON work_queue (path) WHERE status = 'pending'",
        "CREATE INDEX work_queue_status ON work_queue (status, next_try_at)",
        """
        CREATE TABLE search_associations (
            id              INTEGER PRIMARY KEY,
            query           TEXT NOT NULL CHECK (length(trim(query)) > 0),
            file_path       TEXT NOT NULL,
            reason          TEXT,
            grep_patterns   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(grep_patterns)),
            original_score  REAL,
            hits            INTEGER NOT NULL DEFAULT 0 CHECK (hits >= 0),
            created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            last_used_at    TEXT,
            UNIQUE (query, file_path)
        )
        """,
        """
        CREATE TABLE index_runs (
            id              INTEGER PRIMARY KEY,
            started_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            finished_at     TEXT,
            model           TEXT NOT NULL,
            prompt_version  TEXT NOT NULL,
            mode            TEXT NOT NULL CHECK (mode IN ('continuous', 'backfill')),
            input_tokens    INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
            output_tokens   INTEGER NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
            tool_calls      INTEGER NOT NULL DEFAULT 0 CHECK (tool_calls >= 0),
            requests        INTEGER NOT NULL DEFAULT 0 CHECK (requests >= 0),
            seconds         REAL,
            outcome         TEXT,
            error           TEXT,
            rejected_items  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(rejected_items))
        )
        """,
        "CREATE INDEX index_runs_started ON index_runs (started_at)",
        """
        CREATE TABLE vector_outbox (
            kind       TEXT NOT NULL CHECK (kind IN ('ideas', 'spans', 'entities', 'messages')),
            item_id    INTEGER NOT NULL,
            op         TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            queued_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            revision   INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (kind, item_id)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX vector_outbox_queued ON vector_outbox (queued_at)",
        f"""
        CREATE TRIGGER messages_vec_insert AFTER INSERT ON messages BEGIN
            {_enqueue("messages", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER messages_vec_update AFTER UPDATE OF text, role, kind, session_id, is_noise ON messages
        BEGIN
            {_enqueue("messages", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER messages_vec_delete AFTER DELETE ON messages BEGIN
            {_enqueue("messages", "OLD.id", "delete")}
        END
        """,
        f"""
        CREATE TRIGGER ideas_vec_insert AFTER INSERT ON ideas BEGIN
            {_enqueue("ideas", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER ideas_vec_update AFTER UPDATE OF content, intent, session_id, span_id, superseded_by,
            valid_until ON ideas
        BEGIN
            {_enqueue("ideas", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER ideas_vec_delete AFTER DELETE ON ideas BEGIN
            {_enqueue("ideas", "OLD.id", "delete")}
        END
        """,
        f"""
        CREATE TRIGGER spans_vec_insert AFTER INSERT ON topic_spans BEGIN
            {_enqueue("spans", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER spans_vec_update AFTER UPDATE OF name, summary, session_id ON topic_spans BEGIN
            {_enqueue("spans", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER spans_vec_delete AFTER DELETE ON topic_spans BEGIN
            {_enqueue("spans", "OLD.id", "delete")}
        END
        """,
        f"""
        CREATE TRIGGER entities_vec_insert AFTER INSERT ON entities BEGIN
            {_enqueue("entities", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER entities_vec_update AFTER UPDATE OF canonical_name, type ON entities BEGIN
            {_enqueue("entities", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER entities_vec_delete AFTER DELETE ON entities BEGIN
            {_enqueue("entities", "OLD.id", "delete")}
        END
        """,
        # An entity's document lists its aliases, so alias changes re-embed the entity.
        f"""
        CREATE TRIGGER entity_aliases_vec_insert AFTER INSERT ON entity_aliases BEGIN
            {_enqueue("entities", "NEW.entity_id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER entity_aliases_vec_delete AFTER DELETE ON entity_aliases
        WHEN EXISTS (SELECT 1 FROM entities WHERE id = OLD.entity_id)
        BEGIN
            {_enqueue("entities", "OLD.entity_id", "upsert")}
        END
        """,
        # Rows written before the outbox existed have no vectors yet: queue them all.
        "INSERT INTO vector_outbox (kind, item_id, op) SELECT 'messages', id, 'upsert' FROM messages",
        "INSERT INTO vector_outbox (kind, item_id, op) SELECT 'ideas', id, 'upsert' FROM ideas",
        "INSERT INTO vector_outbox (kind, item_id, op) SELECT 'spans', id, 'upsert' FROM topic_spans",
        "INSERT INTO vector_outbox (kind, item_id, op) SELECT 'entities', id, 'upsert' FROM entities",
    ),
)

_INDEXING = Migration(
    4,
    "indexing: a per-file indexing cursor, skipped lines, what each run applied",
    (
        # The indexer's own cursor, in lines: messages up to `indexed_line` have been through an agent
        # run whose result was applied in the same transaction that moved it (capture's cursor is the
        # byte offset; the two advance independently so capture never waits for a model).
        "ALTER TABLE transcript_files ADD COLUMN indexed_line INTEGER NOT NULL DEFAULT 0",
        """
        CREATE TABLE skipped_lines (
            file_id  INTEGER NOT NULL REFERENCES transcript_files (id) ON DELETE CASCADE,
            line     INTEGER NOT NULL CHECK (line >= 0),
            run_id   INTEGER REFERENCES index_runs (id) ON DELETE SET NULL,
            PRIMARY KEY (file_id, line)
        ) WITHOUT ROWID
        """,
        "ALTER TABLE index_runs ADD COLUMN applied TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(applied))",
        "ALTER TABLE index_runs ADD COLUMN messages INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE index_runs ADD COLUMN sessions INTEGER NOT NULL DEFAULT 0",
    ),
)

_GENERATIONS = Migration(
    5,
    "generations: a rewritten transcript is indexed again from its first line",
    (
        # Messages with ids up to this belong to an earlier content of the file (it was truncated or
        # replaced); the indexer plans only newer ones, from `indexed_line` reset to 0.
        "ALTER TABLE transcript_files ADD COLUMN generation_start_id INTEGER NOT NULL DEFAULT 0",
    ),
)

_SAID_AT = """
    coalesce(
        (SELECT min(m.timestamp) FROM messages AS m
         WHERE m.file_id = {idea}.source_file_id AND m.line = {idea}.source_line AND m.timestamp IS NOT NULL),
        {idea}.created_at)
"""

_SEARCH = Migration(
    6,
    "search: when each idea was said; what an idea answered",
    (
        # The timestamp of the idea's source message; its index time when the message has none. A
        # trigger fills it for every insert, so no writer (executor, tests, future importers) forgets.
        "ALTER TABLE ideas ADD COLUMN said_at TEXT",
        f"UPDATE ideas SET said_at = {_SAID_AT.format(idea='ideas')}",
        f"""
        CREATE TRIGGER ideas_said_at AFTER INSERT ON ideas WHEN NEW.said_at IS NULL BEGIN
            UPDATE ideas SET said_at = {_SAID_AT.format(idea="NEW")} WHERE id = NEW.id;
        END
        """,
        "CREATE INDEX ideas_said_at ON ideas (said_at)",
        # `show` lists the questions an idea answered.
        "CREATE INDEX ideas_answered_by ON ideas (answered_by) WHERE answered_by IS NOT NULL",
    ),
)

_RECALL = Migration(
    7,
    "recall: ideas injected into coding-agent sessions, and hits",
    (
        # One row per idea shown to a session by a hook, and one row with no idea for each SessionStart:
        # a context reset (startup, resume, clear, compact) after which earlier injections are gone from
        # the agent's context and may be shown again. `hit_at`: the agent expanded the idea with `show`.
        # `session_id` is Claude Code's, which need not be captured yet, so it references nothing.
        """
        CREATE TABLE recall_injections (
            id           INTEGER PRIMARY KEY,
            session_id   TEXT NOT NULL,
            idea_id      INTEGER REFERENCES ideas (id) ON DELETE CASCADE,
            event        TEXT NOT NULL CHECK (event IN ('SessionStart', 'UserPromptSubmit')),
            injected_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            hit_at       TEXT
        )
        """,
        "CREATE INDEX recall_injections_session ON recall_injections (session_id, injected_at)",
        """
        CREATE INDEX recall_injections_idea ON recall_injections (idea_id, injected_at)
            WHERE idea_id IS NOT NULL
        """,
    ),
)


def _query_key(column: str) -> str:
    """`cairn.learning.associations.query_key` in SQL: lower case, whitespace runs (up to 34) folded to one
    space. (SQLite's lower() folds ASCII only; such keys are written by Python everywhere but here.)"""
    spaced = f"replace(replace(replace({column}, char(9), ' '), char(10), ' '), char(13), ' ')"
    folded = f"replace(replace(replace(replace({spaced}, '    ', ' '), '    ', ' '), '  ', ' '), '  ', ' ')"
    return f"lower(trim({folded}))"


_OUTBOX_KINDS = "'ideas', 'spans', 'entities', 'messages', 'chunks', 'associations'"

_FILES_AND_LEARNING = Migration(
    8,
    "files and learning: file chunks + FTS, file index requests, learning sessions, search associations",
    (
        # The outbox's kind CHECK cannot be altered in place: rebuild the table (SQLite's documented
        # procedure). `legacy_alter_table` keeps the rename from re-checking the triggers that name
        # `vector_outbox`, which would fail while the old table is gone.
        f"""
        CREATE TABLE vector_outbox_v8 (
            kind       TEXT NOT NULL CHECK (kind IN ({_OUTBOX_KINDS})),
            item_id    INTEGER NOT NULL,
            op         TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            queued_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            revision   INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (kind, item_id)
        ) WITHOUT ROWID
        """,
        """
        INSERT INTO vector_outbox_v8 (kind, item_id, op, queued_at, revision)
        SELECT kind, item_id, op, queued_at, revision FROM vector_outbox
        """,
        "DROP TABLE vector_outbox",
        "PRAGMA legacy_alter_table = ON",
        "ALTER TABLE vector_outbox_v8 RENAME TO vector_outbox",
        "PRAGMA legacy_alter_table = OFF",
        "CREATE INDEX vector_outbox_queued ON vector_outbox (queued_at)",
        # One row per project file cairn has indexed, keyed by its path relative to the project; the
        # content hash says whether a later request needs any work at all.
        """
        CREATE TABLE file_documents (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            rel_path      TEXT NOT NULL CHECK (length(rel_path) > 0),
            content_hash  TEXT NOT NULL,
            size          INTEGER NOT NULL CHECK (size >= 0),
            line_count    INTEGER NOT NULL DEFAULT 0 CHECK (line_count >= 0),
            keywords      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(keywords)),
            indexed_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            UNIQUE (project_id, rel_path)
        )
        """,
        """
        CREATE TABLE file_chunks (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id  INTEGER NOT NULL REFERENCES file_documents (id) ON DELETE CASCADE,
            chunk_index  INTEGER NOT NULL CHECK (chunk_index >= 0),
            start_line   INTEGER NOT NULL CHECK (start_line >= 1),
            end_line     INTEGER NOT NULL,
            content      TEXT NOT NULL,
            tokens       INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
            CHECK (end_line >= start_line),
            UNIQUE (document_id, chunk_index)
        )
        """,
        """
        CREATE VIRTUAL TABLE file_chunks_fts USING fts5 (
            content, content = 'file_chunks', content_rowid = 'id', tokenize = 'porter unicode61'
        )
        """,
        """
        CREATE TRIGGER file_chunks_fts_insert AFTER INSERT ON file_chunks BEGIN
            INSERT INTO file_chunks_fts (rowid, content) VALUES (NEW.id, NEW.content);
        END
        """,
        """
        CREATE TRIGGER file_chunks_fts_delete AFTER DELETE ON file_chunks BEGIN
            INSERT INTO file_chunks_fts (file_chunks_fts, rowid, content)
                VALUES ('delete', OLD.id, OLD.content);
        END
        """,
        """
        CREATE TRIGGER file_chunks_fts_update AFTER UPDATE OF content ON file_chunks BEGIN
            INSERT INTO file_chunks_fts (file_chunks_fts, rowid, content)
                VALUES ('delete', OLD.id, OLD.content);
            INSERT INTO file_chunks_fts (rowid, content) VALUES (NEW.id, NEW.content);
        END
        """,
        f"""
        CREATE TRIGGER file_chunks_vec_insert AFTER INSERT ON file_chunks BEGIN
            {_enqueue("chunks", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER file_chunks_vec_update AFTER UPDATE OF content, document_id ON file_chunks BEGIN
            {_enqueue("chunks", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER file_chunks_vec_delete AFTER DELETE ON file_chunks BEGIN
            {_enqueue("chunks", "OLD.id", "delete")}
        END
        """,
        # Files the transcripts showed the agent touching, waiting to be (re)indexed, and how that went.
        # Requests for one file collapse into its row; a new touch sets it pending again.
        """
        CREATE TABLE file_requests (
            id            INTEGER PRIMARY KEY,
            project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            path          TEXT NOT NULL,
            reason        TEXT NOT NULL
                          CHECK (reason IN ('read', 'edit', 'grep', 'glob', 'learned', 'agent')),
            status        TEXT NOT NULL DEFAULT 'pending'
                          CHECK (status IN ('pending', 'indexed', 'unchanged', 'skipped', 'failed')),
            outcome       TEXT,
            attempts      INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            requested_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            done_at       TEXT,
            UNIQUE (project_id, path)
        )
        """,
        "CREATE INDEX file_requests_pending ON file_requests (requested_at) WHERE status = 'pending'",
        # A weak search by the coding agent and what it did next, one row per search tool call: its
        # tool_use id is unique across sessions, so a resumed or forked session that carries the call
        # over under a new session id does not learn it again. `started_at` is transcript time, so a
        # backfill learns what live indexing would.
        """
        CREATE TABLE learning_sessions (
            id            INTEGER PRIMARY KEY,
            session_id    TEXT NOT NULL,
            tool_use_id   TEXT NOT NULL,
            file_id       INTEGER REFERENCES transcript_files (id) ON DELETE CASCADE,
            project_id    INTEGER REFERENCES projects (id) ON DELETE SET NULL,
            tool_name     TEXT NOT NULL,
            query         TEXT NOT NULL,
            best_score    REAL,
            result_count  INTEGER,
            status        TEXT NOT NULL
                          CHECK (status IN ('pending', 'active', 'dismissed', 'resolved', 'timed_out')),
            reads         TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(reads)),
            greps         TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(greps)),
            error         TEXT,
            started_at    TEXT NOT NULL,
            ended_at      TEXT,
            created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            UNIQUE (tool_use_id)
        )
        """,
        """
        CREATE INDEX learning_sessions_open ON learning_sessions (file_id)
            WHERE status IN ('pending', 'active')
        """,
        "CREATE INDEX learning_sessions_status ON learning_sessions (status)",
        # Search associations: a query that should find a file. They now belong to a project, merge
        # repeats of one query (`query_key`: case and spacing folded) and are embedded, so a query close
        # to an association's query finds the file.
        # The old columns keep their order; `query_key` is filled by a trigger when a writer leaves it
        # out, so an older writer's insert still merges with the rest.
        """
        CREATE TABLE search_associations_v8 (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            query           TEXT NOT NULL CHECK (length(trim(query)) > 0),
            file_path       TEXT NOT NULL,
            reason          TEXT,
            grep_patterns   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(grep_patterns)),
            original_score  REAL,
            hits            INTEGER NOT NULL DEFAULT 0 CHECK (hits >= 0),
            created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            last_used_at    TEXT,
            project_id      INTEGER REFERENCES projects (id) ON DELETE CASCADE,
            query_key       TEXT,
            rel_path        TEXT,
            source          TEXT NOT NULL DEFAULT 'agent' CHECK (source IN ('learned', 'agent')),
            times_learned   INTEGER NOT NULL DEFAULT 1 CHECK (times_learned >= 1),
            learned_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            UNIQUE (query_key, file_path)
        )
        """,
        # Rows whose queries differ only in case or spacing become one, their uses added up.
        f"""
        INSERT INTO search_associations_v8 (
            id, query, file_path, reason, grep_patterns, original_score, hits, created_at, last_used_at,
            query_key, source, learned_at, times_learned)
        SELECT min(id), query, file_path, reason, grep_patterns, min(original_score), sum(hits),
               min(created_at), max(last_used_at), key, 'agent', max(created_at), count(*)
        FROM (SELECT *, {_query_key("query")} AS key FROM search_associations)
        GROUP BY key, file_path
        """,
        "DROP TABLE search_associations",
        "ALTER TABLE search_associations_v8 RENAME TO search_associations",
        "CREATE INDEX search_associations_file ON search_associations (project_id, rel_path)",
        f"""
        CREATE TRIGGER search_associations_key AFTER INSERT ON search_associations
        WHEN NEW.query_key IS NULL
        BEGIN
            UPDATE search_associations SET query_key = {_query_key("NEW.query")} WHERE id = NEW.id;
        END
        """,
        f"""
        CREATE TRIGGER search_associations_vec_insert AFTER INSERT ON search_associations BEGIN
            {_enqueue("associations", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER search_associations_vec_update AFTER UPDATE OF query, project_id, file_path
            ON search_associations
        BEGIN
            {_enqueue("associations", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER search_associations_vec_delete AFTER DELETE ON search_associations BEGIN
            {_enqueue("associations", "OLD.id", "delete")}
        END
        """,
        """
        INSERT INTO vector_outbox (kind, item_id, op)
        SELECT 'associations', id, 'upsert' FROM search_associations
        """,
    ),
)

_OUTBOX_KINDS_V9 = _OUTBOX_KINDS + ", 'passages'"

_PASSAGES = Migration(
    9,
    "passages: long messages cut into passages + FTS and vectors",
    (
        # The outbox's kind CHECK again, by the same procedure as v8.
        f"""
        CREATE TABLE vector_outbox_v9 (
            kind       TEXT NOT NULL CHECK (kind IN ({_OUTBOX_KINDS_V9})),
            item_id    INTEGER NOT NULL,
            op         TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            queued_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            revision   INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (kind, item_id)
        ) WITHOUT ROWID
        """,
        """
        INSERT INTO vector_outbox_v9 (kind, item_id, op, queued_at, revision)
        SELECT kind, item_id, op, queued_at, revision FROM vector_outbox
        """,
        "DROP TABLE vector_outbox",
        "PRAGMA legacy_alter_table = ON",
        "ALTER TABLE vector_outbox_v9 RENAME TO vector_outbox",
        "PRAGMA legacy_alter_table = OFF",
        "CREATE INDEX vector_outbox_queued ON vector_outbox (queued_at)",
        # A message longer than one passage, cut at natural boundaries: `text` is the message's whole
        # text (a clipped tool result in full) from `char_start` to `char_end`. Written with the
        # message, in capture's transaction; gone with it.
        """
        CREATE TABLE message_passages (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id  INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL CHECK (seq >= 0),
            char_start  INTEGER NOT NULL CHECK (char_start >= 0),
            char_end    INTEGER NOT NULL,
            text        TEXT NOT NULL,
            CHECK (char_end > char_start),
            UNIQUE (message_id, seq)
        )
        """,
        """
        CREATE VIRTUAL TABLE message_passages_fts USING fts5 (
            text, content = 'message_passages', content_rowid = 'id', tokenize = 'porter unicode61'
        )
        """,
        """
        CREATE TRIGGER message_passages_fts_insert AFTER INSERT ON message_passages BEGIN
            INSERT INTO message_passages_fts (rowid, text) VALUES (NEW.id, NEW.text);
        END
        """,
        """
        CREATE TRIGGER message_passages_fts_delete AFTER DELETE ON message_passages BEGIN
            INSERT INTO message_passages_fts (message_passages_fts, rowid, text)
                VALUES ('delete', OLD.id, OLD.text);
        END
        """,
        """
        CREATE TRIGGER message_passages_fts_update AFTER UPDATE OF text ON message_passages BEGIN
            INSERT INTO message_passages_fts (message_passages_fts, rowid, text)
                VALUES ('delete', OLD.id, OLD.text);
            INSERT INTO message_passages_fts (rowid, text) VALUES (NEW.id, NEW.text);
        END
        """,
        f"""
        CREATE TRIGGER message_passages_vec_insert AFTER INSERT ON message_passages BEGIN
            {_enqueue("passages", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER message_passages_vec_update AFTER UPDATE OF text, message_id, seq ON message_passages
        BEGIN
            {_enqueue("passages", "NEW.id", "upsert")}
        END
        """,
        f"""
        CREATE TRIGGER message_passages_vec_delete AFTER DELETE ON message_passages BEGIN
            {_enqueue("passages", "OLD.id", "delete")}
        END
        """,
        # A passage's vector carries its message's metadata (and whether it gets one depends on it).
        """
        CREATE TRIGGER messages_passages_vec_update AFTER UPDATE OF role, kind, session_id, is_noise
            ON messages
        BEGIN
            INSERT INTO vector_outbox (kind, item_id, op)
            SELECT 'passages', id, 'upsert' FROM message_passages WHERE message_id = NEW.id
            ON CONFLICT (kind, item_id) DO UPDATE SET
                op = excluded.op, queued_at = excluded.queued_at, revision = revision + 1;
        END
        """,
    ),
)

_REINDEX = Migration(
    10,
    "reindex: re-index jobs and the sessions each has swapped in",
    (
        # A `cairn reindex` run: what it rebuilds (`selection`: its filters as JSON) with which model.
        # `finished_at` stays NULL until every selected session is swapped, so a rerun of the same
        # command finds the job and goes on with the sessions it has not done yet.
        """
        CREATE TABLE reindex_jobs (
            id           INTEGER PRIMARY KEY,
            model        TEXT NOT NULL,
            selection    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(selection)),
            started_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            finished_at  TEXT
        )
        """,
        # Written in the transaction that swaps the session's new generation in: done means swapped.
        """
        CREATE TABLE reindex_sessions (
            job_id      INTEGER NOT NULL REFERENCES reindex_jobs (id) ON DELETE CASCADE,
            session_id  TEXT NOT NULL,
            ideas       INTEGER NOT NULL DEFAULT 0,
            done_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            PRIMARY KEY (job_id, session_id)
        ) WITHOUT ROWID
        """,
    ),
)

_PROJECTS = Migration(
    11,
    "projects as repositories: project_paths, projects.found_by, sessions regrouped",
    (
        """
        ALTER TABLE projects ADD COLUMN found_by TEXT NOT NULL DEFAULT 'cwd'
            CHECK (found_by IN ('git', 'layout', 'cwd', 'claude_dir'))
        """,
        # What a project covers: `kind` 'cwd' is a directory its sessions ran in, with the `checkout`
        # (main or worktree top-level) holding it; 'claude_dir' is a Claude Code transcript directory
        # name. A path belongs to one project; `--project` accepts any of them.
        """
        CREATE TABLE project_paths (
            path        TEXT PRIMARY KEY,
            project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            kind        TEXT NOT NULL CHECK (kind IN ('cwd', 'claude_dir')),
            checkout    TEXT,
            created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        ) WITHOUT ROWID
        """,
        "CREATE INDEX project_paths_project ON project_paths (project_id)",
    ),
    then=regroup,
)

_INTENTS = "'decision', 'conclusion', 'question', 'problem', 'solution', 'todo', 'context'"

#: Column `{column}` of the correction that applies to the idea just inserted: the one at its place
#: (file and line) with its content hash, failing that the latest with its intent unless it is
#: `hash_only` (`cairn.store.corrections`).
_CORRECTION_OF_NEW = """(
    SELECT c.{column} FROM idea_corrections c
    WHERE c.source_file_id = NEW.source_file_id AND c.source_line = NEW.source_line
      AND (c.content_hash = NEW.content_hash OR (c.intent = NEW.intent AND NOT c.hash_only))
    ORDER BY c.content_hash = NEW.content_hash DESC, c.updated_at DESC, c.id DESC LIMIT 1)"""

_CORRECTIONS = Migration(
    12,
    "corrections: a person's word on an idea, kept by its place; ideas.declined_at",
    (
        # A suggestion the person turned down: still searchable as history, no longer live (recall,
        # open items and the board leave it out).
        "ALTER TABLE ideas ADD COLUMN declined_at TEXT",
        # One row per corrected idea, keyed by where it was said (file, line) and its content hash, so
        # an idea the indexer makes again there (a re-index, an import) gets the correction again. No
        # text: `forgotten` (the idea was wrong) must leave nothing of it on the disk but its hash.
        # `state_at` is when the state was given; `open` takes back an answered/done/declined state.
        # `hash_only`: other ideas of the same intent were said at that line, so one reworded by a new
        # model cannot be told from them and only the same words get the correction.
        f"""
        CREATE TABLE idea_corrections (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            source_file_id  INTEGER NOT NULL REFERENCES transcript_files (id) ON DELETE CASCADE,
            source_line     INTEGER NOT NULL CHECK (source_line >= 0),
            content_hash    TEXT NOT NULL,
            intent          TEXT NOT NULL CHECK (intent IN ({_INTENTS})),
            state           TEXT CHECK (state IN ('answered', 'done', 'declined', 'open', 'forgotten')),
            state_at        TEXT,
            importance      REAL CHECK (importance BETWEEN 0 AND 1),
            hash_only       INTEGER NOT NULL DEFAULT 0 CHECK (hash_only IN (0, 1)),
            created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            CHECK (state IS NOT NULL OR importance IS NOT NULL),
            CHECK ((state IS NULL) = (state_at IS NULL)),
            UNIQUE (source_file_id, source_line, content_hash)
        )
        """,
        # Every writer of ideas (the executor, the re-index swap, import, tests) gets the corrections
        # applied as the row goes in, as the FTS and outbox triggers do their part. `forgotten` is not
        # here: a trigger cannot leave a row out and tell its writer, so those skip it themselves.
        f"""
        CREATE TRIGGER ideas_corrected AFTER INSERT ON ideas
        WHEN NEW.source_file_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM idea_corrections c
            WHERE c.source_file_id = NEW.source_file_id AND c.source_line = NEW.source_line)
        BEGIN
            UPDATE ideas SET importance = {_CORRECTION_OF_NEW.format(column="importance")}
            WHERE id = NEW.id AND {_CORRECTION_OF_NEW.format(column="importance")} IS NOT NULL;
            UPDATE ideas SET answered_at = {_CORRECTION_OF_NEW.format(column="state_at")},
                resolution = 'marked answered by the user', declined_at = NULL
            WHERE id = NEW.id AND intent IN ('question', 'problem') AND answered_at IS NULL
              AND {_CORRECTION_OF_NEW.format(column="state")} = 'answered';
            UPDATE ideas SET completed_at = {_CORRECTION_OF_NEW.format(column="state_at")},
                resolution = 'marked done by the user', declined_at = NULL
            WHERE id = NEW.id AND intent = 'todo' AND completed_at IS NULL
              AND {_CORRECTION_OF_NEW.format(column="state")} = 'done';
            UPDATE ideas SET declined_at = {_CORRECTION_OF_NEW.format(column="state_at")}
            WHERE id = NEW.id AND declined_at IS NULL
              AND {_CORRECTION_OF_NEW.format(column="state")} = 'declined';
            UPDATE ideas SET answered_at = NULL, answered_by = NULL, resolved_line = NULL, resolution = NULL,
                completed_at = NULL, declined_at = NULL
            WHERE id = NEW.id AND {_CORRECTION_OF_NEW.format(column="state")} = 'open';
        END
        """,
        # The vectors' metadata carries an idea's importance (`cairn.store.outbox`).
        f"""
        CREATE TRIGGER ideas_vec_importance AFTER UPDATE OF importance ON ideas
        WHEN NEW.importance IS NOT OLD.importance
        BEGIN
            {_enqueue("ideas", "NEW.id", "upsert")}
        END
        """,
    ),
)

_IDEA_STATE = Migration(
    13,
    "idea state: ideas.state (deferred, given_up) moved out of the text; an index of prompts per file",
    (
        """
        ALTER TABLE ideas ADD COLUMN state TEXT
            CHECK (state IS NULL OR (state IN ('deferred', 'given_up')
                                     AND intent IN ('question', 'problem', 'todo')))
        """,
        """
        CREATE INDEX messages_prompts ON messages (file_id, line)
            WHERE role = 'user' AND kind = 'text' AND is_sidechain = 0 AND is_noise = 0
        """,
    ),
    then=backfill_states,
)

_ORIGINS_SQL = ", ".join(repr(origin) for origin in ORIGINS)
_MESSAGE_ORIGIN = Migration(
    14,
    "message origin: prompt, reply, tool call or result, subagent, summary, system; the tool, its argument",
    (
        f"ALTER TABLE messages ADD COLUMN origin TEXT CHECK (origin IS NULL OR origin IN ({_ORIGINS_SQL}))",
        "ALTER TABLE messages ADD COLUMN tool TEXT",
        "ALTER TABLE messages ADD COLUMN tool_arg TEXT",
        "ALTER TABLE messages ADD COLUMN failed INTEGER NOT NULL DEFAULT 0 CHECK (failed IN (0, 1))",
        # A turn's closing reply is found from any of its messages (`cairn.search.exchanges`).
        "CREATE INDEX messages_replies ON messages (file_id, line) WHERE origin = 'reply'",
        # The copies of a result's text are counted by its hash (`cairn.search.folding.count_repeats`).
        "CREATE INDEX messages_content_hash ON messages (content_hash)",
    ),
    then=fill_origins,
)

MIGRATIONS: tuple[Migration, ...] = (
    _CAPTURE,
    _MEMORY,
    _OPERATIONS,
    _INDEXING,
    _GENERATIONS,
    _SEARCH,
    _RECALL,
    _FILES_AND_LEARNING,
    _PASSAGES,
    _REINDEX,
    _PROJECTS,
    _CORRECTIONS,
    _IDEA_STATE,
    _MESSAGE_ORIGIN,
)
LATEST_VERSION = len(MIGRATIONS)


async def schema_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: aiosqlite.Connection, target: int | None = None) -> int:
    """Bring the schema up to `target` (default: the latest) and return the version reached.

    The connection must be in autocommit mode (`isolation_level=None`): the transactions here are
    explicit, and Python's implicit ones would wrap them. Refuses databases newer than this code and
    refuses to go backwards (no migration deletes data).
    """
    if conn.isolation_level is not None:
        raise MigrationError("migrate() needs a connection opened with isolation_level=None")
    wanted = LATEST_VERSION if target is None else target
    if not 0 <= wanted <= LATEST_VERSION:
        raise MigrationError(f"no schema version {wanted}; this cairn knows versions 0..{LATEST_VERSION}")
    current = await schema_version(conn)
    _refuse_newer(current)
    if current > wanted:
        raise MigrationError(f"database is at schema v{current}; cairn does not downgrade to v{wanted}")
    for step in MIGRATIONS[current:wanted]:
        await _apply(conn, step)
    return await schema_version(conn)


async def _apply(conn: aiosqlite.Connection, step: Migration) -> None:
    await conn.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have applied this step while we waited for the write lock.
        now = await schema_version(conn)
        _refuse_newer(now)
        if now < step.version:
            for statement in step.statements:
                await conn.execute(statement)
            if step.then is not None:
                await step.then(conn)
            await conn.execute(f"PRAGMA user_version = {step.version:d}")
        await conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        raise


def _refuse_newer(version: int) -> None:
    if version > LATEST_VERSION:
        raise SchemaTooNewError(
            f"the database is at schema v{version}, newer than this cairn understands (v{LATEST_VERSION}); "
            "upgrade cairn, or point CAIRN_HOME at another directory"
        )
