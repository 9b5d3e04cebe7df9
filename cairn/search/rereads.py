"""How a result reads, and the calls or outputs of one call that read alike folded into one result.

`cairn.search.folding.fold_repeats` folds stored copies of one text. A file read again from other
lines, or edited twice, is a different text each time, yet the stretch that matches a query can read
the same in each: three reads of one Go file showed the same comment three times in one top 10, and
reads of it from other lines are three calls that read `Read cmd/…/hooks.go`. Tool calls, and tool
results, of one call as shown — the same tool on the same file, command or pattern (`messages.tool`,
`tool_arg`, within the project's directory, cut where a snippet's head cuts it) — whose snippets read
alike are one result, as stored copies are: the best-ranked keeps its place and counts the others in
`repeats`.

Only the candidates that share a call with another are read ahead of the page, so a search whose
candidates hold no such pair costs one dictionary pass more. Folding runs on every candidate before
paging, so pages of any size show each text once and in one order.
"""

from __future__ import annotations

from collections.abc import Mapping

from cairn.search.folding import Ranked, fold_into
from cairn.search.hydrate import Item
from cairn.search.keyword import passage_texts
from cairn.search.plain import call_head, within
from cairn.search.query import FtsQuery
from cairn.search.snippets import ResultText, Snippet
from cairn.store.db import Database

_CALLS = frozenset({"tool_call", "tool_result"})


def shown(query: FtsQuery | None, r: Ranked, passages: Mapping[int, str]) -> tuple[Snippet, str]:
    """The snippet and preview of one result as every face shows them; a message found through a
    passage (`passages`, by passage id) shows that passage as its snippet."""
    item: Item = r.item
    row = item.row
    reading = ResultText(
        item.origin, row.get("tool"), row.get("tool_arg"), bool(row.get("failed")), row.get("project")
    )
    return reading.shown(query, passages.get(r.signals.passage_id or 0, item.content), item.content)


def _call_of(r: Ranked) -> tuple[str, str] | None:
    """The call `r` is or is the output of, as its head shows it — (origin, `Read src/app.py`, the key
    argument within the project and cut as shown) — or None for anything else. Two checkouts of one
    project read one file under two paths; two long commands can differ only past their cut."""
    row = r.item.row
    if r.item.kind != "message" or r.item.origin not in _CALLS or not row.get("tool_arg"):
        return None
    return str(r.item.origin), call_head(row.get("tool"), within(str(row["tool_arg"]), row.get("project")))


async def fold_rereads(db: Database, query: FtsQuery | None, ranked: list[Ranked]) -> list[Ranked]:
    """`ranked` (best first) with each tool call or result whose snippet reads as a better-ranked one of
    the same call does folded into that one."""
    calls: dict[tuple[str, str], list[Ranked]] = {}
    for r in ranked:
        call = _call_of(r)
        if call is not None:
            calls.setdefault(call, []).append(r)
    alike = [r for members in calls.values() if len(members) > 1 for r in members]
    if not alike:
        return ranked
    passages = await passage_texts(db, [r.signals.passage_id for r in alike if r.signals.passage_id])
    lead_of: dict[tuple[tuple[str, str], str], Ranked] = {}
    folded: set[int] = set()
    for r in ranked:  # best first: the lead of each text is its best-ranked reading
        call = _call_of(r)
        if call is None or len(calls[call]) < 2:
            continue
        snippet, _ = shown(query, r, passages)
        key = (call, " ".join(snippet.text.split()).casefold())
        lead = lead_of.setdefault(key, r)
        if lead is not r:
            fold_into(lead, r)
            folded.add(id(r))
    return [r for r in ranked if id(r) not in folded]
