"""What an imported row may hold and point at: the checks that keep a crafted export from rewriting memory.

An export is outside input. Its rows carry ids that are references between its own rows, and values a
writer chose; taken at their word, a row could attach itself to what the target store already holds (a
correction on the person's own transcript, an idea planted in their project) or pin itself first in
every ranking with a time that is not a time. So each row is checked before it is written:

- **Values.** Every value is text, a number or null; a number is finite; every time (a `*_at` column,
  `timestamp`, `valid_until`) is an ISO 8601 date-time that is no later than a day from now — what is
  recorded as having happened cannot have happened in the future, and text that is not a time would sort
  after every real one. States and intents are the schema's CHECK constraints' to refuse.
- **References.** A reference must name a row this file brought (`Ownership`), and a row that is new to
  the store may hang only on rows this import added: never on a project, session, transcript or idea
  that was there before (a row whose natural key the store already has is only counted as present,
  never written). The exceptions are named here: an entity (a shared name, not anyone's memory) may be
  linked to as it is; a run an export did not carry (`skipped_lines.run_id`) is left out as null; a
  transcript row the store holds with nothing hanging on it (the cursor a forget keeps) may take back
  what an older export holds of it.

A refused row is counted with its line and the reason, never dropped without a word (`ImportReport`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosqlite

from cairn.errors import Refusal

#: References that may name a row the store held before the import (not memory of a session).
LINK_REFS = frozenset({("idea_entities", "entity_id")})
#: References that become null when the file did not bring their target (an export of some projects
#: leaves the indexing runs out; the skipped line stays skipped, of no run in particular).
SOFT_REFS = frozenset({("skipped_lines", "run_id")})
#: Tables whose `session_id` must name a session this import added (or be null where it may be).
SESSION_OWNED = frozenset({"transcript_files", "messages", "topic_spans", "ideas", "learning_sessions"})
#: Tables whose rows must belong to something the file brought: a null owner is no owner.
REQUIRED_OWNER = {"search_associations": ("project_id",), "ideas": ("session_id", "source_file_id")}

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(?:Z|[+-]\d{2}:?\d{2})?")
#: How far ahead of this machine's clock a recorded time may be (another machine's clock, a time zone).
CLOCK_SLACK = timedelta(days=1)


class Refused(Refusal):
    """This row cannot be imported; the message says why in a few words."""


def is_time_column(column: str) -> bool:
    return column.endswith("_at") or column in {"timestamp", "valid_until"}


def parse_time(value: str) -> datetime | None:
    """`value` as an aware datetime if it is an ISO 8601 date or date-time (no zone: UTC), else None."""
    if not _ISO.fullmatch(value):
        return None
    text = value.replace("Z", "+00:00")
    if "." in text:  # Python reads at most 6 digits of a fraction; a transcript may carry more
        head, _, rest = text.partition(".")
        digits = re.match(r"\d+", rest)
        assert digits is not None
        text = f"{head}.{digits.group()[:6].ljust(6, '0')}{rest[digits.end() :]}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def check_values(row: Mapping[str, Any], now: datetime) -> None:
    """Refuse a value that is not text, a finite number or null, and a time that is none or to come."""
    latest = now + CLOCK_SLACK
    for column, value in row.items():
        if value is None or isinstance(value, (bool, int)):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise Refused(f"{column} is not a finite number")
            continue
        if not isinstance(value, str):
            raise Refused(f"{column} is not text or a number")
        if is_time_column(column):
            moment = parse_time(value)
            if moment is None:
                raise Refused(f"{column} {value[:40]!r} is not an ISO 8601 date-time")
            if moment > latest:
                raise Refused(f"{column} {value[:40]!r} is in the future")


class Ownership:
    """Which rows this import brought and which of those it added, per table, by the target's ids.

    `mapped` holds every exported id the import has matched or inserted (what a reference may name);
    `added` the target ids of rows it inserted (what a new row may hang on); `open_files` the target ids
    of transcript rows the store held with nothing hanging on them.
    """

    def __init__(self) -> None:
        self.mapped: dict[str, dict[Any, Any]] = {}
        self.added: dict[str, set[Any]] = {}
        self.open_files: set[int] = set()

    def note(self, table: str, source_id: Any, local: Any, *, inserted: bool) -> None:
        if source_id is not None:
            self.mapped.setdefault(table, {})[source_id] = local
        if inserted:
            self.added.setdefault(table, set()).add(local)

    def was_added(self, table: str, local: Any) -> bool:
        if table == "transcript_files" and local in self.open_files:
            return True
        return local in self.added.get(table, ())

    def resolve(self, table: str, column: str, target: str, source: Any) -> Any:
        """The target id exported id `source` of `target` has here; `Refused` when the file did not
        bring it (a soft reference becomes None instead)."""
        mapping = self.mapped.get(target, {})
        if source in mapping:
            return mapping[source]
        if (table, column) in SOFT_REFS:
            return None
        raise Refused(f"{column} names {target} {source!r}, which the file did not bring")

    def check_new(self, table: str, values: Mapping[str, Any], refs: Mapping[str, str]) -> None:
        """Refuse a row about to be inserted that hangs on something this import did not add."""
        for column, target in refs.items():
            local = values.get(column)
            if local is None or (table, column) in LINK_REFS or (table, column) in SOFT_REFS:
                continue
            if not self.was_added(target, local):
                raise Refused(f"{column} names {target} {local} that was in this store before the import")
        session = values.get("session_id")
        owned = self.added.get("sessions", ())
        if session is not None and self._session_owned(table, values) and session not in owned:
            raise Refused(f"session {str(session)[:60]!r} is not a session this import added")
        owners = REQUIRED_OWNER.get(table, ())
        if owners and all(values.get(column) is None for column in owners):
            raise Refused(f"belongs to no {' or '.join(owners)} the file brought")

    @staticmethod
    def _session_owned(table: str, values: Mapping[str, Any]) -> bool:
        # A recall injection names Claude Code's session, which need not be captured: only a context
        # reset marker (no idea) speaks for the session itself.
        return table in SESSION_OWNED or (table == "recall_injections" and values.get("idea_id") is None)


async def holds_nothing(conn: aiosqlite.Connection, file_id: int) -> bool:
    """Whether transcript row `file_id` has no session, messages, ideas, spans or corrections: the
    cursor a forget keeps, which an older export may fill again without touching anyone's memory."""
    async with conn.execute(
        """SELECT session_id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM messages WHERE file_id = :f)
                  AND NOT EXISTS (SELECT 1 FROM ideas WHERE source_file_id = :f)
                  AND NOT EXISTS (SELECT 1 FROM topic_spans WHERE file_id = :f)
                  AND NOT EXISTS (SELECT 1 FROM idea_corrections WHERE source_file_id = :f)
                  AND NOT EXISTS (SELECT 1 FROM skipped_lines WHERE file_id = :f)
                  AND NOT EXISTS (SELECT 1 FROM learning_sessions WHERE file_id = :f)
           FROM transcript_files WHERE id = :f""",
        {"f": file_id},
    ) as cursor:
        row = await cursor.fetchone()
    return bool(row and row[0])
