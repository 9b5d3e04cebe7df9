"""`cairn forget`, `cairn correct`, `cairn export` and `cairn import`: the thin face of `cairn.lifecycle`.

`forget`, `correct` and `import` write, so they go through the daemon when it runs (it owns the
store) and take the store's lock otherwise, like every writing command; `export` only reads, from a
store another process may be writing (SQLite's WAL shows it every committed row).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cairn.cli.common import (
    JsonOpt,
    app,
    console,
    err,
    fail,
    load_settings,
    open_store,
    print_json,
    request,
    run_async,
)
from cairn.cli.search import parse_when


def _counts_table(counts: dict[str, int], title: str) -> Table:
    table = Table(title=title)
    table.add_column("kind")
    table.add_column("rows", justify="right")
    for kind, n in counts.items():
        if n:
            table.add_row(kind.replace("_", " "), f"{n:,}")
    return table


@app.command("forget")
def forget_command(
    project: Annotated[
        str | None, typer.Option("--project", help="Forget this project (name or path).")
    ] = None,
    session: Annotated[
        list[str] | None, typer.Option("--session", help="Forget this session (repeatable).")
    ] = None,
    idea: Annotated[
        list[int] | None, typer.Option("--idea", help="Forget this idea id (repeatable).")
    ] = None,
    before: Annotated[
        str | None, typer.Option("--before", help="Only what is older: 2025-01-31, 30d, yesterday…")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete a project's, sessions' or ideas' memory for good: rows, full-text index and vectors.

    The transcripts themselves are left alone, and so is each transcript's read position: a later
    sync captures only what is appended after the forget.
    """
    if sum(bool(x) for x in (project, session, idea)) != 1:
        raise fail("name exactly one of --project, --session or --idea", 2)
    settings = load_settings()
    args: dict[str, Any] = {
        "project": project,
        "sessions": list(session or []),
        "ideas": list(idea or []),
        "before": parse_when(before, "--before"),
    }
    if not dry_run and not yes:
        if not sys.stdin.isatty():
            raise fail("cairn forget deletes for good and stdin is not a terminal: pass --yes to confirm", 2)
        plan = run_async(request(settings, "forget", {**args, "dry_run": True}, wait=True))
        if plan["total"] == 0:
            console.print("Nothing to forget.")
            return
        console.print(_counts_table(plan["counts"], "cairn forget would delete"))
        if not typer.confirm("Delete these for good?", default=False):
            err.print("Nothing deleted.")
            raise typer.Exit(1)
    result = run_async(request(settings, "forget", {**args, "dry_run": dry_run}, wait=True))
    if json_out:
        print_json(result)
        return
    verb = "would delete" if dry_run else "deleted"
    if result["total"] == 0:
        console.print("Nothing to forget.")
        return
    console.print(_counts_table(result["counts"], f"cairn forget {verb}"))
    if not dry_run:
        console.print(
            f"{result['vectors_deleted']:,} vectors removed, {result['vectors_pending']:,} still queued."
        )
        if result.get("tombstones"):
            console.print(
                f"{result['tombstones']:,} forgotten as wrong: a re-index will not make them again "
                "(where each was said is kept, not its words)."
            )


@app.command("correct")
def correct_command(
    idea: Annotated[str, typer.Argument(help="The idea's id, as search results show it (42 or #42).")],
    answered: Annotated[
        bool, typer.Option("--answered", help="A question or problem: it is answered (settled elsewhere).")
    ] = False,
    done: Annotated[bool, typer.Option("--done", help="A todo: it is done.")] = False,
    declined: Annotated[
        bool,
        typer.Option(
            "--declined",
            help="Any idea: turned down. Search still finds it; recall and open items leave it out.",
        ),
    ] = False,
    reopen: Annotated[
        bool, typer.Option("--open", help="Take back answered, done or declined (whoever set it).")
    ] = False,
    importance: Annotated[
        float | None,
        typer.Option("--importance", help="From 0 to 1: how much the idea weighs in search ranking."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Correct an idea: mark it answered, done or declined, open it again, or set its importance.

    The change shows at once in search, recall and the open questions and todos, and is kept by where
    the idea was said, so a re-index or an import does not undo it. An idea that is wrong is
    forgotten instead: `cairn forget --idea ID` (a re-index does not bring it back either).
    """
    states = [
        name
        for name, given in (("answered", answered), ("done", done), ("declined", declined), ("open", reopen))
        if given
    ]
    if len(states) > 1:
        raise fail("give at most one of --answered, --done, --declined and --open", 2)
    if not states and importance is None:
        raise fail("nothing to correct: give --answered, --done, --declined, --open or --importance", 2)
    if importance is not None and not 0 <= importance <= 1:
        raise fail(f"--importance must be from 0 to 1, not {importance}", 2)
    args = {"id": idea, "state": states[0] if states else None, "importance": importance}
    result = run_async(request(load_settings(), "correct", args))
    if json_out:
        print_json(result)
        return
    console.print(_corrected_line(result), soft_wrap=True, highlight=False)


def _corrected_line(result: dict[str, Any]) -> str:
    """`#42 question: answered (marked answered by the user), importance 0.80`."""
    state = "open"
    if result.get("declined_at"):
        state = "declined"
    if result.get("answered_at"):
        state = "answered"
    if result.get("completed_at"):
        state = "done"
    if result.get("resolution") and state in ("answered", "done"):
        state += f" ({result['resolution']})"
    line = f"#{result['idea']} {result['intent']}: {state}, importance {float(result['importance']):.2f}"
    if not result.get("recorded"):
        line += " (this idea has no source line: a re-index would not find the correction)"
    return line


@app.command("export")
def export_command(
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project (name or path).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write here (mode 0600) instead of stdout.")
    ] = None,
) -> None:
    """Write the memory as versioned JSONL (one row a line) for `cairn import` here or on another machine."""
    from cairn.cli.export_target import ExportTargetError, export_target, stdout_target
    from cairn.lifecycle.export import export, scope_for
    from cairn.search.projects import resolve_projects

    settings = load_settings()
    try:  # what --out is decides how it is written, before the store is opened (`export_target`)
        target = export_target(out.expanduser()) if out is not None else stdout_target()
    except ExportTargetError as exc:
        raise fail(str(exc), 2) from None

    async def run() -> int:
        store = await open_store(settings, read_only_ok=True, busy_ok=True)
        try:
            scope, names = None, None
            if project is not None:
                found = await resolve_projects(store.db, project)
                if not found:
                    raise fail(
                        f"no stored project matches {project!r}; `cairn projects` lists what is stored", 2
                    )
                scope = await scope_for(store.db, [pid for pid, _ in found])
                names = [path for _, path in found]
            with target.open() as handle:  # a failed write is the export's, said so (`ExportTargetError`)
                return await export(store.db, handle, scope=scope, projects=names)
        finally:
            await store.close()

    try:
        count = run_async(run())
    except ExportTargetError as exc:
        raise fail(str(exc), exc.code) from None
    if out is not None:
        err.print(f"exported {count:,} rows to {out}")


@app.command("import")
def import_command(
    file: Annotated[str, typer.Argument(help="An export from `cairn export`, or - for stdin.")],
    json_out: JsonOpt = False,
) -> None:
    """Merge an export into this store: rows it already has are skipped, vectors are recomputed."""
    from cairn.lifecycle.importer import ImportFormatError, bounded_lines, check_header, open_export

    settings = load_settings()
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp: Path | None = None
    if file == "-":
        with tempfile.NamedTemporaryFile("wb", dir=settings.home, prefix="import-", delete=False) as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
            temp = Path(handle.name)
        path = temp
    else:
        path = Path(file).expanduser().resolve()
        if not path.exists():
            raise fail(f"no such file: {file}", 2)
    try:
        try:
            with open_export(str(path)) as handle:
                check_header(next(bounded_lines(handle), ""))
        except ImportFormatError as exc:
            raise fail(str(exc), 2) from None
        except OSError as exc:
            raise fail(f"cannot read {file}: {exc.strerror or exc}", 2) from None
        result = run_async(request(settings, "import", {"path": str(path)}, wait=True, embedding_mode="bulk"))
    finally:
        if temp is not None:
            temp.unlink(missing_ok=True)
    if json_out:
        print_json(result)
        return
    console.print(_counts_table(result["added"], "cairn import added"))
    present = sum(result["already_present"].values())
    queued = int(result.get("vectors_queued") or 0)
    console.print(
        f"{result['total_added']:,} rows added, {present:,} already present; the search index gained "
        f"{result['vectors_written']:,} vectors" + (f" ({queued:,} more queued)." if queued else ".")
    )
    if result.get("secrets_redacted"):
        console.print(f"{result['secrets_redacted']:,} secrets redacted before they were stored.")
    if result["bad_lines"]:
        err.print(f"{result['bad_lines']:,} lines skipped: " + "; ".join(result["bad_examples"]))
    if refused := int(result.get("total_refused") or 0):
        err.print(
            f"{refused:,} rows refused (an import only adds, and only what its own rows hold): "
            + "; ".join(result.get("refused_examples") or []),
            soft_wrap=True,
        )
