"""Where a search result sits in the transcripts: its file and the lines it spans.

A search result carries one line, but a topic span covers a range (open while `end_line` is NULL) and an
assistant message merged from consecutive JSONL lines covers `line`..`end_line`. The retrieval eval and
the benchmark evals (`cairn.evals.benchmark`) both score a result by the transcript lines it covers, so
both read extents from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cairn.search.models import SearchResult, parse_item_id

if TYPE_CHECKING:
    from cairn.store.db import Database


@dataclass(frozen=True)
class Extent:
    """Where a result sits: its transcript file and the (inclusive) lines it spans; `end` None = open."""

    file: str | None
    start: int | None
    end: int | None

    def covers(self, line: int) -> bool:
        return self.near(line, 0)

    def near(self, line: int, tolerance: int) -> bool:
        """Whether `line` lies within `tolerance` lines of the extent (inside it counts as distance 0)."""
        if self.start is None:
            return False
        return self.start - tolerance <= line and (self.end is None or line <= self.end + tolerance)


class ResultExtents:
    """Result extents, loaded from the store once per item: spans and messages need rows search omits.

    A row without a file (spans written before files were tracked) falls back to its session's
    transcript file.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._cache: dict[str, Extent] = {}

    async def of(self, results: Sequence[SearchResult]) -> list[Extent]:
        missing = [r for r in results if r.id not in self._cache]
        spans = [parse_item_id(r.id)[1] for r in missing if r.kind == "span"]
        messages = [parse_item_id(r.id)[1] for r in missing if r.kind == "message"]
        rows: dict[str, tuple[int | None, int | None, str | None]] = {}
        for prefix, sql, ids in (
            ("s", _SPAN_SQL, spans),
            ("m", _MESSAGE_SQL, messages),
        ):
            if ids:
                marks = ", ".join("?" * len(ids))
                for row in await self._db.fetchall(sql.format(marks=marks), tuple(ids)):
                    rows[f"{prefix}{row['id']}"] = (row["start"], row["end"], row["file"])
        for result in missing:
            file = result.source.file
            if result.kind == "idea":
                start = end = result.source.line
            else:
                start, end, loaded = rows.get(result.id, (result.source.line, result.source.line, None))
                file = file or loaded
            if file is None and result.session is not None:
                file = await self._db.scalar(
                    "SELECT path FROM transcript_files WHERE session_id = ? ORDER BY id LIMIT 1",
                    (result.session.id,),
                )
            self._cache[result.id] = Extent(file, start, end)
        return [self._cache[r.id] for r in results]


_FALLBACK_FILE = "(SELECT path FROM transcript_files WHERE session_id = t.session_id ORDER BY id LIMIT 1)"
_SPAN_SQL = f"""
    SELECT t.id, t.start_line AS start, t.end_line AS "end", coalesce(f.path, {_FALLBACK_FILE}) AS file
    FROM topic_spans AS t LEFT JOIN transcript_files AS f ON f.id = t.file_id
    WHERE t.id IN ({{marks}})
"""
_MESSAGE_SQL = f"""
    SELECT t.id, t.line AS start, t.end_line AS "end", coalesce(f.path, {_FALLBACK_FILE}) AS file
    FROM messages AS t LEFT JOIN transcript_files AS f ON f.id = t.file_id
    WHERE t.id IN ({{marks}})
"""
