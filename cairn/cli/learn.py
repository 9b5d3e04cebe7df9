"""`cairn learn stats|associations|forget` and `cairn files`: what the feedback loop and the file index hold.

Like the other read commands they ask the store through `request` (the daemon when it runs, else
directly), print the op's JSON unchanged with `--json`, and render it for a person otherwise. What a
transcript or a project file says (queries, paths, keywords) is rendered as rich `Text`, never as
markup, so brackets in a query cannot restyle or break the output.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from cairn.cli.common import (
    JsonOpt,
    LimitOpt,
    ProjectOpt,
    WideOpt,
    app,
    console,
    counts,
    err,
    load_settings,
    print_json,
    request,
    run_async,
)
from cairn.cli.safe import plain_text
from cairn.cli.tables import Column, print_listing
from cairn.dates import shown_date

learn_app = typer.Typer(
    help="What cairn learned from searches that found nothing useful: figures, associations, forgetting.",
    no_args_is_help=True,
)


class SourceChoice(StrEnum):
    learned = "learned"
    agent = "agent"


class StatusChoice(StrEnum):
    pending = "pending"
    indexed = "indexed"
    unchanged = "unchanged"
    skipped = "skipped"
    failed = "failed"


# The figures of `LearnerStats` in the order a person reads them, with a short label each.
_FIGURES = (
    ("searches_seen", "searches seen"),
    ("sessions_started", "sessions started"),
    ("sessions_resolved", "resolved"),
    ("sessions_timed_out", "timed out"),
    ("active_sessions", "active"),
    ("files_learned", "files learned"),
    ("associations_created", "associations learned"),
    ("associations_from_agent", "from the indexing agent"),
    ("association_repeats", "learned again"),
    ("association_hits", "helped a search"),
    ("errors", "errors"),
)


def _ask(op: str, args: dict[str, Any] | None = None) -> Any:
    return run_async(request(load_settings(), op, args))


def _text(value: Any) -> Text:
    """Stored text (a query, a path, a keyword) as literal text with its control characters visible."""
    return plain_text(value)


def render_learner_stats(data: dict[str, Any]) -> None:
    """The loop's figures with what each one means (the field descriptions of `LearnerStats`)."""
    from cairn.learning.stats import LearnerStats

    fields = LearnerStats.model_fields
    head = Text("learning from searches: ", style="bold")
    if data.get("enabled"):
        head.append("on")
        threshold, window = float(data.get("threshold") or 0), float(data.get("timeout_seconds") or 0)
        head.append(f" (weak: best score under {threshold:.2f}; reads within {window:g} s)", style="dim")
    else:
        head.append("off").append(" (CAIRN_LEARN_FROM_SEARCH; learned before: below)", style="dim")
    console.print(head)
    table = Table(show_header=False, title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(style="dim", overflow="fold")
    for key, label in _FIGURES:
        table.add_row(label, str(data.get(key, 0)), fields[key].description or "")
    console.print(table)
    for message in data.get("recent_errors") or []:
        err.print(Text("recent error: ", style="yellow") + plain_text(message))


@learn_app.command("stats")
def learn_stats(as_json: JsonOpt = False) -> None:
    """Show what the feedback loop did: weak searches seen, sessions resolved or timed out, associations.

    A cairn search scoring under CAIRN_LEARN_THRESHOLD opens a session.

    Files the agent reads within CAIRN_LEARN_TIMEOUT seconds are learned with the query at the turn's end.
    """
    data = _ask("learner_stats")
    if as_json:
        print_json(data)
    else:
        render_learner_stats(data)


def _score(value: Any) -> str:
    return "" if value is None else f"{float(value):.2f}"


def associations_table(rows: list[dict[str, Any]]) -> Table:
    """One row per association; the project under the file and the last use under the date, so the query
    and the path keep most of an 80-column terminal."""
    table = Table(title=f"associations ({len(rows)})", title_justify="left", expand=True, show_lines=True)
    table.add_column("id", justify="right", style="cyan", no_wrap=True)
    table.add_column("query", ratio=1, overflow="fold")
    table.add_column("file", ratio=1, overflow="fold")
    table.add_column("source", style="magenta", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("learned", no_wrap=True)
    for row in rows:
        file = _text(row.get("rel_path") or row.get("file_path"))
        if row.get("project"):
            file.append(f"\n{row['project']}", style="dim")
        hits = int(row.get("hits") or 0)
        learned = Text(f"{row.get('times_learned', 1)}x, {hits} hit{'' if hits == 1 else 's'}")
        learned.append(f"\n{shown_date(row.get('learned_at'), with_time=False)}", style="dim")
        if row.get("last_used_at"):
            learned.append(f"\nused {shown_date(row['last_used_at'], with_time=False)}", style="dim")
        table.add_row(
            str(row.get("id", "")),
            _text(row.get("query")),
            file,
            str(row.get("source") or ""),
            _score(row.get("original_score")),
            learned,
        )
    return table


@learn_app.command("associations")
def learn_associations(
    project: ProjectOpt = None,
    source: Annotated[
        SourceChoice | None,
        typer.Option(
            "--source", help="learned (from weak searches) or agent (proposed by the indexing agent)."
        ),
    ] = None,
    limit: LimitOpt = 50,
    as_json: JsonOpt = False,
) -> None:
    """List search associations, most recently learned first: query, file, how often learned and used.

    score: the best score of the search it was learned from; hits: results it lifted since.
    """
    args = {"project": project, "source": source.value if source else None, "limit": limit}
    rows = _ask("learn_associations", args)
    if as_json:
        print_json(rows)
    elif not rows and (project or source):
        console.print("No associations match these filters.")
    elif not rows:
        console.print(
            "No associations yet. One is learned when a weak cairn search is followed by reads before the "
            "next prompt (`cairn learn stats` shows what the loop saw)."
        )
    else:
        console.print(associations_table(rows))


@learn_app.command("forget")
def learn_forget(
    ids: Annotated[
        list[int], typer.Argument(min=1, help="Association ids, as `cairn learn associations` lists them.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Delete associations, so they no longer lift their files in search (their vectors follow).

    A later weak search followed by the same reads learns the association again.
    """
    result = _ask("learn_forget", {"ids": ids})
    deleted, missing = result.get("deleted") or [], result.get("missing") or []
    if as_json:
        print_json(result)
    elif deleted:
        noun = "association" if len(deleted) == 1 else "associations"
        console.print(f"forgot {len(deleted)} {noun}: {', '.join(map(str, deleted))}")
    if missing:
        noun = "association" if len(missing) == 1 else "associations"
        err.print(
            f"[bold red]error:[/] no {noun} {', '.join(map(str, missing))} (see `cairn learn associations`)"
        )
        raise typer.Exit(1)


app.add_typer(learn_app, name="learn")


#: The columns of the indexed files; the secondary ones, last first, go when the width cannot hold them.
DOCUMENT_COLUMNS = [
    Column("id", "id", "id"),
    Column("rel_path", "file", min_width=16, whole_words=True),
    Column("chunks", "chunks", "number"),
    Column("indexed_at", "indexed", "date"),
    Column("project", "project", "label", primary=False),
    Column("keywords", "keywords", primary=False, min_width=20),
    Column("line_count", "lines", "number", primary=False),
    Column("tokens", "tokens", "number", primary=False),
]


def _request_path(row: dict[str, Any]) -> str:
    """A requested file's path, relative to its project's when it lies inside it."""
    path, root = str(row.get("path") or ""), f"{row.get('project_path') or ''}/"
    return path[len(root) :] if root != "/" and path.startswith(root) else path


#: The columns of the file requests; the secondary ones, last first, go when the width cannot hold them.
REQUEST_COLUMNS = [
    Column("path", "file", min_width=16, whole_words=True, cell=_request_path),
    Column("status", "status", "label"),
    Column("outcome", "outcome", min_width=10),
    Column("when", "when", "date", cell=lambda row: row.get("done_at") or row.get("requested_at")),
    Column("project", "project", "label", primary=False),
    Column("reason", "touched by", "label", primary=False),
    Column("attempts", "tries", "number", primary=False),
]


def render_files(data: dict[str, Any], status: str | None, wide: bool = False) -> None:
    documents = data.get("documents") or []
    requests = data.get("requests") or []
    summary = Text(
        f"{data.get('documents_total', 0)} files indexed, {data.get('chunks_total', 0)} chunks", "bold"
    )
    if data.get("requests_by_status"):
        summary.append(f" · requests: {counts(data['requests_by_status'])}")
    console.print(summary)
    if data.get("skipped_by_reason"):
        console.print(Text(f"skipped, by reason: {counts(data['skipped_by_reason'])}", style="dim"))
    if not documents and not requests:
        console.print(
            "Nothing in the file index yet: files are indexed when a captured session reads, edits or "
            "finds them (`cairn sync`, or the daemon)."
        )
        return
    if documents and status is None:
        total = int(data.get("documents_total") or len(documents))
        shown = f"{len(documents)} of {total}" if total > len(documents) else str(total)
        print_listing(console, f"indexed files ({shown})", documents, DOCUMENT_COLUMNS, wide)
    if requests:
        title = f"{status} requests" if status else "latest requests"
        print_listing(console, f"{title} ({len(requests)})", requests, REQUEST_COLUMNS, wide)
    elif status:
        console.print(f"No {status} requests.")


@app.command()
def files(
    project: ProjectOpt = None,
    status: Annotated[
        StatusChoice | None,
        typer.Option(
            "--status",
            help="List only requests with this status: pending, indexed, unchanged, skipped (refused: "
            "outside the project, secret-looking, git-ignored, binary, too large, missing) or failed.",
        ),
    ] = None,
    limit: LimitOpt = 50,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the on-demand file index: indexed project files with chunks and keywords, and file requests.

    Files the agent reads, edits or finds enter it; `cairn content` searches their chunks.
    """
    data = _ask("files", {"project": project, "status": status.value if status else None, "limit": limit})
    if as_json:
        print_json(data)
    else:
        render_files(data, status.value if status else None, wide)
