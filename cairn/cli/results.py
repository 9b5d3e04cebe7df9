"""How a page of search results reads at a terminal: the ranked table, its footer and notices.

Only rich and the text helpers: `cairn search` prints a page the daemon answered before typer loads
(`cairn.cli.early_search`), and the command prints every other page with the same functions. Each
renders `terminal_data` of the answer, or makes a snippet visible piece by piece (`highlighted`), so
nothing a transcript holds reaches the terminal as a control character or as rich markup.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from cairn.cli.consoles import console
from cairn.cli.safe import terminal_data, visible
from cairn.dates import shown_date
from cairn.search.labels import kind_label

#: The largest `--limit` of `search`.
MAX_SEARCH_LIMIT = 100


def highlighted(text: str, highlights: Any = (), style: str = "") -> Text:
    """`text` with its matched words (`highlights`, offsets into it) bold, every character literal and
    its controls made visible piece by piece, so the offsets point where they should."""
    out = Text(style=style)
    pos = 0
    for span in sorted(highlights or ()):
        start, end = max(int(span[0]), pos), min(int(span[1]), len(text))
        if start >= end:
            continue
        out.append(visible(text[pos:start]))
        out.append(visible(text[start:end]), style="bold")
        pos = end
    out.append(visible(text[pos:]))
    return out


def ref(item_id: Any) -> str:
    """How a person refers to an item: ideas as `#123` (as hooks show them), spans and messages as is."""
    text = str(item_id)
    return f"#{text}" if text.isdigit() else text


def _session_label(session: dict[str, Any] | None) -> str:
    if not session:
        return ""
    project = session.get("project_name") or session.get("project") or ""
    topic = session.get("topic")
    parts = [p for p in (project, topic) if p]
    return " · ".join(parts) if parts else str(session.get("id", ""))[:8]


def oneline(text: str) -> str:
    """`text` with every run of whitespace, newlines too, as one space."""
    return " ".join(str(text).split())


#: The multiplication sign a repeated result's count is shown with.
TIMES = "\u00d7"


def repeats_label(result: dict[str, Any]) -> str:
    """How often a result's text was said and the day of the last time: the sign, `3, last 2025-09-03`."""
    label = f"{TIMES}{int(result.get('repeats') or 1)}"
    last = shown_date(result.get("last_said_at"), with_time=False)
    return f"{label}, last {last}" if last else label


#: How much of a prompt's or reply's first words a result's turn shows.
EXCHANGE_PREVIEW = 60


def exchange_line(result: dict[str, Any]) -> str:
    """The turn a result sits in, on one line: the prompt that started it and the reply that ended it,
    each by id and first words (`asked m12 "why does…" · replied m19 "The index…"`); an end that is the
    result itself is left out."""
    exchange = result.get("exchange") or {}
    parts = []
    for verb, end in (("asked", exchange.get("prompt")), ("replied", exchange.get("reply"))):
        if end and end.get("id") != result.get("id"):
            words = _cut(oneline(end.get("preview") or ""), EXCHANGE_PREVIEW)
            parts.append(f'{verb} {ref(end["id"])} "{words}"')
    return " · ".join(parts)


def _turn_of(result: dict[str, Any]) -> tuple[str | None, str | None] | None:
    """The ids of a result's prompt and closing reply, or None without an exchange."""
    exchange = result.get("exchange")
    if not exchange:
        return None
    return ((exchange.get("prompt") or {}).get("id"), (exchange.get("reply") or {}).get("id"))


def _cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters at a word boundary, with `…` when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,.;:") + "…"


def search_table(page: dict[str, Any]) -> Table:
    """One page of results, ranked; superseded ones dimmed and struck through, pointing at their successor.

    Where each was said (project · topic) goes under its passage rather than in a column of its own, so
    the passage keeps most of an 80-column terminal. `page` is the op's answer as it came: the snippet
    is made visible piece by piece (`highlighted`), everything else here through `terminal_data`.
    """
    table = Table(expand=True, show_lines=True)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("id", no_wrap=True, style="cyan")
    table.add_column("kind", no_wrap=True, style="magenta")
    table.add_column("date", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("match", ratio=1, overflow="fold")
    previous_turn: tuple[str | None, str | None] | None = None
    answered = page.get("results") or []
    for rank, (raw, result) in enumerate(zip(answered, terminal_data(answered), strict=True), start=1):
        superseded = bool(result.get("superseded"))
        style = "dim strike" if superseded else ""
        if raw.get("snippet"):
            cell = highlighted(str(raw["snippet"]), raw.get("highlights"), style)
        else:
            cell = highlighted(oneline(raw.get("preview") or raw.get("content") or ""), (), style)
        successor = result.get("superseded_by")
        if superseded:
            cell.append(
                f"  → {ref(successor['id'])}" if successor else "  (superseded)", style="yellow not strike"
            )
        if result.get("declined_at"):
            cell.append("  (declined)", style="yellow not strike")
        if int(result.get("repeats") or 1) > 1:
            cell.append(f"  {repeats_label(result)}", style="yellow not strike")
        where = _session_label(result.get("session"))
        if where:
            cell.append(f"\n{where}", style="dim not strike")
        # Results of one turn often follow each other: its prompt and reply are said once, at the first.
        turn = _turn_of(result)
        if turn != previous_turn and (line := exchange_line(result)):
            cell.append(f"\n{line}", style="dim not strike")
        previous_turn = turn
        table.add_row(
            str(rank),
            ref(result.get("id", "")),
            kind_label(result),
            shown_date(result.get("said_at"), with_time=False),
            f"{float(result.get('score') or 0):.2f}",
            cell,
        )
    return table


def more_hint(shown: int, total: int, max_limit: int) -> Text:
    """How a person sees more results: a larger --limit. The page token, hundreds of characters that
    wrap over several lines, stays in `--json` (`next_token`) for scripts."""
    if shown < total <= max_limit:
        line = f"{shown:,} of {total:,} shown: --limit {total} shows them all"
    elif shown < total:
        line = f"{shown:,} of {total:,} shown: --limit {max_limit} shows more"
    else:
        line = "more: a larger --limit shows them"
    return Text(f"{line} (--json has next_token)", style="dim")


def render_found(page: dict[str, Any]) -> None:
    """A page that has results: the ranked table and the line under it (how many, mode, time)."""
    table = search_table(page)
    page = terminal_data(page)
    results = page.get("results") or []
    console.print(table)
    footer = Text(f"{len(results)} of {page.get('total', len(results))}", style="bold")
    footer.append(f" · {page.get('mode', '')} · {float(page.get('took_ms') or 0):.0f} ms", style="dim")
    console.print(footer)


def render_notes(page: dict[str, Any]) -> None:
    """What a page says besides its results: its notices, and how to see more of them."""
    page = terminal_data(page)
    notices = list(page.get("notices") or [])
    if page.get("vector_skipped") and not any("vector" in n or "semantic" in n for n in notices):
        notices.append("semantic search skipped: keyword matches were decisive (--mode semantic forces it)")
    for notice in notices:
        console.print(Text(f"note: {notice}", style="yellow"))
    if page.get("next_token"):
        shown = len(page.get("results") or [])
        console.print(more_hint(shown, int(page.get("total") or 0), MAX_SEARCH_LIMIT))
