"""Commands that list what the memory holds: stats, ideas, questions, todos, topics and entities.

Their cells are transcript text, shown as `plain_text` (never markup, controls made visible) and laid
out for the terminal by `cairn.cli.tables`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cairn.cli.common import (
    JsonOpt,
    LimitOpt,
    OpenOpt,
    ProjectOpt,
    SessionOpt,
    WideOpt,
    app,
    console,
    fail,
    load_settings,
    print_json,
    render_stats,
    request,
    run_async,
)
from cairn.cli.tables import Column, print_listing


@app.command()
def stats(as_json: JsonOpt = False) -> None:
    """Show what the store holds: projects, sessions, messages, ideas, vectors, queue, files, learning,
    and today's indexing tokens against the daily budget (with the pause line while indexing waits)."""
    data = run_async(request(load_settings(), "stats"))
    if as_json:
        print_json(data)
    else:
        render_stats(data)


NOTHING_STORED = "No {title} stored yet. Run `cairn sync` (or `cairn index PATH`) first."


def _print_rows(
    title: str,
    rows: list[dict[str, Any]],
    columns: list[Column],
    as_json: bool,
    empty: str | None = None,
    wide: bool = False,
) -> None:
    """A listing as a table laid out for the terminal (or JSON); with no rows, `empty` (what is true of
    the store) is said instead."""
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print(empty or NOTHING_STORED.format(title=title))
        return
    print_listing(console, f"{title} ({len(rows)})", rows, columns, wide)


#: The columns of `cairn ideas`; the secondary ones, last first, go when the width cannot hold them.
IDEA_COLUMNS = [
    Column("id", "id", "id"),
    Column("intent", "intent", "label"),
    Column("content", "content", min_width=24),
    Column("said_at", "said", "date"),
    Column("project", "project", "label", primary=False),
    Column("topic", "topic", primary=False, min_width=16),
    Column("importance", "importance", "number", primary=False),
    Column("superseded_by", "superseded by", "id", primary=False),
    Column("declined_at", "declined", "date", primary=False),
]


@app.command()
def ideas(
    intent: Annotated[
        list[str] | None,
        typer.Option(
            "--intent",
            help="decision, conclusion, question, problem, solution, todo or context; repeat for several.",
        ),
    ] = None,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    superseded: Annotated[bool, typer.Option("--superseded", help="Include superseded ideas.")] = False,
    limit: LimitOpt = 50,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List stored ideas, newest first (superseded ones left out unless asked for)."""
    from cairn.agent.schema import INTENTS

    unknown = sorted(set(intent or ()) - set(INTENTS))
    if unknown:
        raise fail(f"unknown intent {', '.join(unknown)}; choose from {', '.join(INTENTS)}")
    rows = run_async(
        request(
            load_settings(),
            "ideas",
            {
                "intents": list(intent or ()),
                "session": session,
                "project": project,
                "include_superseded": superseded,
                "limit": limit,
            },
        )
    )
    _print_rows("ideas", rows, IDEA_COLUMNS, as_json, wide=wide)


def _list_tracked(
    kind: str,
    intents: tuple[str, ...],
    done_column: str,
    open_only: bool,
    session: str | None,
    project: str | None,
    limit: int,
    as_json: bool,
    wide: bool,
) -> None:
    rows = run_async(
        request(
            load_settings(),
            "ideas",
            {
                "intents": list(intents),
                "session": session,
                "project": project,
                "open_only": open_only,
                "limit": limit,
            },
        )
    )
    columns = [
        Column("id", "id", "id"),
        Column("content", "content", min_width=24),
        Column("state", "state", "label"),
        Column(done_column, done_column.removesuffix("_at"), "date"),
        Column("resolution", "resolution", min_width=20),
        Column("project", "project", "label", primary=False),
        Column("declined_at", "declined", "date", primary=False),
    ]
    empty = None
    if not rows and not as_json:
        filters = {"intents": list(intents), "session": session, "project": project}
        counts = run_async(request(load_settings(), "idea_counts", filters))
        empty = _why_empty(kind, counts, open_only, filters)
    _print_rows(kind, rows, columns, as_json, empty, wide)


def _why_empty(kind: str, counts: dict[str, int], open_only: bool, filters: dict[str, Any]) -> str:
    """What is true when a questions or todos listing is empty: nothing stored at all, nothing in the
    session or project asked for, or nothing open of what is stored — and what became of the rest."""
    where = " and ".join(f"{name} {filters[name]}" for name in ("session", "project") if filters.get(name))
    if not counts.get("stored"):
        return f"No {kind} in {where}." if where else NOTHING_STORED.format(title=kind)
    settled = "answered" if kind == "questions" else "completed"
    parts = [f"{counts[settled]} {settled}", f"{counts['declined']} declined"]
    if counts["superseded"]:
        parts.append(f"{counts['superseded']} superseded")
    rest = counts["stored"] - counts[settled] - counts["declined"] - counts["superseded"] - counts["open"]
    if rest > 0:
        parts.append(f"{rest} followed by more work in their session")
    scope = f" in {where}" if where else ""
    lead = f"No open {kind}{scope}" if open_only else f"No {kind}{scope} to list"
    return f"{lead} — {counts['stored']} stored: {', '.join(parts)}. `cairn {kind} --json` lists them all."


@app.command()
def questions(
    open_only: OpenOpt = False,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    limit: LimitOpt = 50,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List questions and problems the indexer found, and the answers it linked to them."""
    _list_tracked(
        "questions", ("question", "problem"), "answered_at", open_only, session, project, limit, as_json, wide
    )


@app.command()
def todos(
    open_only: OpenOpt = False,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    limit: LimitOpt = 50,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List todos the indexer found, and whether each was completed."""
    _list_tracked("todos", ("todo",), "completed_at", open_only, session, project, limit, as_json, wide)


PROJECT_COLUMNS = [
    Column("name", "name", min_width=8, whole_words=True),
    Column("path", "path", min_width=16, whole_words=True),
    Column("sessions", "sessions", "number"),
    Column("ideas", "ideas", "number"),
    Column("last_active", "last active", "date"),
    Column("open_questions", "open questions", "number", primary=False),
    Column("covers", "covers", primary=False, min_width=24, cell=lambda row: _covers(row)),
]


@app.command()
def projects(limit: LimitOpt = 100, wide: WideOpt = False, as_json: JsonOpt = False) -> None:
    """List projects — one per repository, its worktrees and subdirectories included — with what each
    covers, its sessions, ideas and open questions. Any path listed, a name, or a Claude Code directory
    name is accepted by `--project`."""
    rows = run_async(request(load_settings(), "projects", {"limit": limit}))
    _print_rows("projects", rows, PROJECT_COLUMNS, as_json, wide=wide)
    if rows and not as_json:
        console.print(
            "A project is the git repository of a session's directory (worktrees map to their main "
            "repository); where git cannot tell, the directory itself. `--json` lists the Claude Code "
            "directory names too."
        )


def _covers(project: dict[str, Any]) -> str:
    """One line per directory the project's sessions ran in, marked as worktree or subdirectory."""
    lines = []
    for entry in project.get("paths", []):
        path, checkout = entry["path"], entry.get("checkout")
        if path == project["path"]:
            where = "root"
        elif checkout and path == checkout:
            where = "worktree"
        elif checkout and checkout != project["path"]:
            where = f"in worktree {checkout}"
        else:
            where = "subdirectory"
        lines.append(f"{path} ({where}, {entry['sessions']} sessions)")
    return "\n".join(lines)


TOPIC_COLUMNS = [
    Column("id", "id", "id"),
    Column("name", "name", min_width=16),
    Column("summary", "summary", min_width=30),
    Column("ideas", "ideas", "number"),
    Column("project", "project", "label", primary=False),
    Column("start_line", "from line", "number", primary=False),
    Column("end_line", "to line", "number", primary=False),
]


@app.command()
def topics(
    session: SessionOpt = None, limit: LimitOpt = 100, wide: WideOpt = False, as_json: JsonOpt = False
) -> None:
    """List topic spans per session, in order, with their idea counts."""
    rows = run_async(request(load_settings(), "topics", {"session": session, "limit": limit}))
    _print_rows("topics", rows, TOPIC_COLUMNS, as_json, wide=wide)


ENTITY_COLUMNS = [
    Column("id", "id", "id"),
    Column("name", "name", min_width=16, whole_words=True),
    Column("type", "type", "label"),
    Column("ideas", "ideas", "number"),
    Column("aliases", "aliases", primary=False, min_width=16),
]


@app.command()
def entities(
    type: Annotated[
        str | None, typer.Option("--type", help="project, technology, concept, person or file.")
    ] = None,
    limit: LimitOpt = 100,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List entities (technologies, files, concepts, …) with their aliases and idea counts."""
    rows = run_async(request(load_settings(), "entities", {"type": type, "limit": limit}))
    _print_rows("entities", rows, ENTITY_COLUMNS, as_json, wide=wide)
