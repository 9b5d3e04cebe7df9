"""How a result reads, and messages that read alike folded into one result.

`cairn.search.folding.fold_repeats` folds stored copies of one text. A file read again from other
lines, or edited twice, is a different text each time, yet the stretch that matches a query can read
the same in each: three reads of one Go file showed the same comment three times in one top 10, and
reads of it from other lines are three calls that read `Read cmd/…/hooks.go`. A plan written again
with one paragraph changed shows the unchanged paragraph twice. Messages of one group — tool calls,
and tool results, of one call as its head shows it (tool, key argument within the project, cut where
the head cuts it); other messages of one origin that start alike — whose snippets read alike are one
result, as stored copies are: the best-ranked keeps its place and counts the others in `repeats`.

Only candidates that share a group with another are read ahead of the page, so a search whose
candidates hold no such pair costs one dictionary pass more. Folding runs on every candidate before
paging, so pages of any size show each text once and in one order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

from cairn.search.folding import Ranked, fold_into
from cairn.search.hydrate import Item, complete
from cairn.search.keyword import passage_texts
from cairn.search.plain import call_head, within
from cairn.search.query import FtsQuery
from cairn.search.snippets import ResultText, Snippet
from cairn.store.db import Database

_CALLS = frozenset({"tool_call", "tool_result"})
#: Characters of a message's start that group it with others that may read alike (`_group_of`).
HEAD_CHARS = 80


def shown(query: FtsQuery | None, r: Ranked, passages: Mapping[int, str]) -> tuple[Snippet, str]:
    """The snippet and preview of one result as every face shows them; a message found through a
    passage (`passages`, by passage id) shows that passage as its snippet."""
    item: Item = r.item
    row = item.row
    reading = ResultText(
        item.origin, row.get("tool"), row.get("tool_arg"), bool(row.get("failed")), row.get("project")
    )
    return reading.shown(query, passages.get(r.signals.passage_id or 0, item.content), item.content)


def _group_of(r: Ranked, projects: Mapping[str, str]) -> tuple[str, str] | None:
    """What `r` could read alike with, cheaply told: a tool call or result by its call as its head
    shows it (`Read src/app.py`: the key argument within its session's project, `projects`, cut as
    shown — two checkouts of one project read one file under two paths, two long commands can differ
    only past their cut); any other message by how it starts (`HEAD_CHARS`: a plan or summary written
    again starts as before). None for ideas and spans."""
    item, row = r.item, r.item.row
    if item.kind != "message":
        return None
    if item.origin in _CALLS and row.get("tool_arg"):
        root = projects.get(str(row.get("session_id")))
        return str(item.origin), call_head(row.get("tool"), within(str(row["tool_arg"]), root))
    return str(item.origin), " ".join(item.content[: HEAD_CHARS * 2].split())[:HEAD_CHARS].casefold()


async def _projects(db: Database, ranked: list[Ranked]) -> dict[str, str]:
    """The project directory of each session of the tool calls and results among `ranked` (candidates
    are loaded without it: `cairn.search.hydrate.complete` reads it for the page)."""
    sessions = {str(r.item.row.get("session_id")) for r in ranked if r.item.origin in _CALLS}
    if not sessions:
        return {}
    rows = await db.fetchall(
        "SELECT se.id, p.path FROM sessions AS se JOIN projects AS p ON p.id = se.project_id "
        "WHERE se.id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(sessions)),),
    )
    return {str(row["id"]): str(row["path"]) for row in rows}


async def fold_rereads(db: Database, query: FtsQuery | None, ranked: list[Ranked]) -> list[Ranked]:
    """`ranked` (best first) with each message whose snippet reads as a better-ranked one of its group
    (`_group_of`) does folded into that one."""
    projects = await _projects(db, ranked)
    group_of = {id(r): _group_of(r, projects) for r in ranked}
    groups: dict[tuple[str, str], list[Ranked]] = {}
    for r in ranked:
        group = group_of[id(r)]
        if group is not None:
            groups.setdefault(group, []).append(r)
    alike = [r for members in groups.values() if len(members) > 1 for r in members]
    if not alike:
        return ranked
    passages, _ = await asyncio.gather(
        passage_texts(db, [r.signals.passage_id for r in alike if r.signals.passage_id]),
        complete(db, [r.item for r in alike]),  # read as the page will read them
    )
    lead_of: dict[tuple[tuple[str, str], str], Ranked] = {}
    folded: set[int] = set()
    for r in ranked:  # best first: the lead of each text is its best-ranked reading
        group = group_of[id(r)]
        if group is None or len(groups[group]) < 2:
            continue
        snippet, _ = shown(query, r, passages)
        key = (group, " ".join(snippet.text.split()).casefold())
        lead = lead_of.setdefault(key, r)
        if lead is not r:
            fold_into(lead, r)
            folded.add(id(r))
    return [r for r in ranked if id(r) not in folded]
