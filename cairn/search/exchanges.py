"""Exchanges: the person's prompt that started a turn and the assistant's reply that ended it.

A coding session answers a question in many lines — the prompt, tool calls, their output, the reply
that reports what was found — and search finds one of them. A result shows the turn it sits in, so a
hit on the person's question shows what was answered, and a hit in a test run's output shows the
reply that said what it meant:

- the **prompt** is the nearest prompt at or before the item's line in its transcript file: a
  message the person typed (`origin = 'prompt'`: not a subagent's task, nor the interruption marker
  Claude Code writes in the person's name, whose origin is `system`);
- the **reply** is the last reply (`origin = 'reply'`: assistant prose) of that turn, before the next
  prompt; the turn ends there even when the item is the prompt itself.

A subagent's transcript has no prompt of the person's in it, so its messages have no exchange. Both
the page's exchanges (`exchanges_of`) and the turns of every candidate message, which ranking reads
(`turns_of`), cost one query: three index look-ups a line (`messages_prompts` twice,
`messages_replies` once), however long the sessions are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from cairn.search.models import Exchange, ExchangeEnd, item_id, preview
from cairn.search.plain import readable
from cairn.store.db import Database

#: A message that starts a turn, over alias `p`; its first four conditions are those of the
#: `messages_prompts` index, so the index answers it.
PROMPT = """p.role = 'user' AND p.kind = 'text' AND p.is_sidechain = 0 AND p.is_noise = 0
    AND p.origin = 'prompt'"""
# Past any line a transcript has.
_END = 1 << 62


def _turns(keys: str, *, texts: bool) -> str:
    """The turn of each row of `keys` (a CTE of `ref, file_id, line`): its prompt and the reply that
    closes it, with their texts when a result will show them."""
    shown = (
        "pm.text AS prompt_text, rm.text AS reply_text"
        if texts
        else "NULL AS prompt_text, NULL AS reply_text"
    )
    return f"""
    WITH keys AS ({keys}), turns AS (
        SELECT k.ref, k.file_id,
               (SELECT p.id FROM messages AS p WHERE p.file_id = k.file_id AND p.line <= k.line AND {PROMPT}
                ORDER BY p.line DESC, p.id DESC LIMIT 1) AS prompt_id,
               (SELECT p.line FROM messages AS p WHERE p.file_id = k.file_id AND p.line > k.line AND {PROMPT}
                ORDER BY p.line LIMIT 1) AS next_line
        FROM keys AS k
    )
    SELECT t.ref, t.file_id, pm.id AS prompt_id, pm.line AS prompt_line, rm.id AS reply_id, {shown}
    FROM turns AS t
    LEFT JOIN messages AS pm ON pm.id = t.prompt_id
    LEFT JOIN messages AS rm ON rm.id = (
        SELECT r.id FROM messages AS r
        WHERE r.file_id = t.file_id AND r.origin = 'reply'
          AND r.line >= coalesce(pm.line, 0) AND r.line < coalesce(t.next_line, {_END})
        ORDER BY r.line DESC, r.id DESC LIMIT 1)
    """


_OF_LINES = _turns(
    "SELECT value AS ref, json_extract(value, '$[0]') AS file_id, json_extract(value, '$[1]') AS line "
    "FROM json_each(?)",
    texts=True,
)
_OF_MESSAGES = _turns(
    "SELECT m.id AS ref, m.file_id, m.line FROM messages AS m WHERE m.id IN (SELECT value FROM json_each(?))",
    texts=False,
)


async def exchanges_of(db: Database, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], Exchange]:
    """The exchange of each `(file id, line)` that has one (a prompt, a closing reply or both)."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = await db.fetchall(_OF_LINES, (json.dumps(wanted),))
    found: dict[tuple[int, int], Exchange] = {}
    for row in rows:
        prompt = _end(row["prompt_id"], row["prompt_text"])
        reply = _end(row["reply_id"], row["reply_text"])
        if prompt is not None or reply is not None:
            file_id, line = json.loads(row["ref"])
            found[(int(file_id), int(line))] = Exchange(prompt=prompt, reply=reply)
    return found


def _end(row_id: int | None, text: str | None) -> ExchangeEnd | None:
    if row_id is None:
        return None
    return ExchangeEnd(id=item_id("message", int(row_id)), preview=preview(readable(text or "")))


@dataclass(frozen=True)
class Turn:
    """Which turn a message is in — `(file id, line of its prompt)`, -1 before the file's first
    prompt — and the id of the reply that closes it, if it has one."""

    key: tuple[int, int]
    closing_reply: int | None


async def turns_of(db: Database, message_ids: list[int]) -> dict[int, Turn]:
    """The turn of each message of `message_ids`, by id."""
    if not message_ids:
        return {}
    rows = await db.fetchall(_OF_MESSAGES, (json.dumps(message_ids),))
    return {
        int(row["ref"]): Turn(
            (int(row["file_id"]), -1 if row["prompt_line"] is None else int(row["prompt_line"])),
            None if row["reply_id"] is None else int(row["reply_id"]),
        )
        for row in rows
    }
