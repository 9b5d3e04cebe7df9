"""Commands that look after cairn itself: status, doctor, reindex-vectors, config, hook, install and mcp."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cairn.cli.common import (
    JsonOpt,
    app,
    console,
    counts,
    err,
    fail,
    key_value_table,
    load_settings,
    long_request,
    print_json,
    recall_summary,
    run_async,
    uptime,
)
from cairn.cli.safe import plain_text
from cairn.cli.tables import Column, print_listing

if TYPE_CHECKING:
    from cairn.config import Settings
    from cairn.daemon.install import InstallReport, McpReport
    from cairn.daemon.plugin import PluginReport


@app.command()
def status(
    as_json: JsonOpt = False,
    runs: Annotated[int, typer.Option("--runs", min=0, help="How many recent index runs to list.")] = 10,
) -> None:
    """Show the daemon, its queue, parked items, recent index runs, today's token spend against the
    daily indexing budget, and whether indexing is paused (why, and when it resumes).

    Reads the store read-only, so it works the same whether or not the daemon owns the store.
    """
    from cairn.daemon.status import read_status
    from cairn.dates import shown_date

    state = read_status(load_settings(), recent=runs)
    if as_json:
        print_json({**asdict(state), "depth": state.depth})
        return
    daemon = state.daemon
    if daemon.running and daemon.pid is not None and daemon.uptime_seconds is not None:
        console.print(f"cairn daemon running (pid {daemon.pid}, up {uptime(daemon.uptime_seconds)})")
    else:
        console.print("cairn daemon not running")
    if not state.store:
        console.print(f"no cairn store at {state.home} yet: `cairn install` or `cairn sync` creates one")
        return
    if state.error:
        raise fail(state.error)
    if state.pause is not None:
        console.print(plain_text(state.pause.line, style="yellow"), soft_wrap=True)
    today = state.today
    summary: dict[str, Any] = {
        "queue": f"{state.depth} waiting ({counts(state.queue)})",
        "ideas": state.ideas,
        "messages": state.messages,
    }
    if today is not None:
        summary[f"today ({today.date} UTC)"] = (
            f"{today.runs} run(s), {today.failed_runs} failed, "
            f"{today.input_tokens:,} tokens in, {today.output_tokens:,} out"
        )
    if state.budget is not None:
        summary["indexing budget"] = state.budget.words
    if state.pause is not None:
        since = datetime.fromisoformat(state.pause.since).astimezone()
        summary["indexing"] = f"paused since {since:%Y-%m-%d %H:%M} local ({state.pause.model})"
    recall = state.recall
    summary["recall"] = recall_summary(
        recall.injections, recall.hits, recall.hit_rate, recall.drops, recall.drops_by_reason
    )
    if recall.last_drop:
        last = recall.last_drop
        reason = str(last.get("reason")).replace("_", " ")
        summary["last drop"] = f"{shown_date(last.get('at'))} {last.get('event')} ({reason})"
    summary["log"] = daemon.log
    console.print(key_value_table("cairn status", summary))
    if state.parked:
        title = "parked (failed too often, no longer retried)"
        print_listing(console, title, [asdict(item) for item in state.parked], PARKED_COLUMNS)
    if state.retrying:
        print_listing(console, "retrying", [asdict(retry) for retry in state.retrying], RETRYING_COLUMNS)
    if state.recent_runs:
        runs = [asdict(run) for run in state.recent_runs]
        print_listing(console, "recent index runs", runs, RUN_COLUMNS)


def _count(key: str) -> Any:
    """A cell with a count as people write it: thousands separated."""
    return lambda row: f"{int(row.get(key) or 0):,}"


#: A queue item's path and error are what the user came to read: wrapped, never cut.
PARKED_COLUMNS = [
    Column("id", "id", "id"),
    Column("path", "path", min_width=16, whole_words=True),
    Column("attempts", "attempts", "number"),
    Column("last_error", "error", min_width=16, cell=lambda row: row.get("last_error") or "—"),
]
RETRYING_COLUMNS = [
    *PARKED_COLUMNS[:3],
    Column("next_try_at", "next try", "date"),
    PARKED_COLUMNS[3],
]
RUN_COLUMNS = [
    Column("started_at", "started", "date"),
    Column("model", "model", min_width=8, whole_words=True),
    Column("outcome", "outcome", "label", cell=lambda row: row.get("outcome") or "—"),
    Column("ideas_applied", "ideas", "number"),
    Column("input_tokens", "tokens in", "number", cell=_count("input_tokens")),
    Column("output_tokens", "tokens out", "number", cell=_count("output_tokens")),
    Column("mode", "mode", "label", primary=False),
]


@app.command()
def doctor(as_json: JsonOpt = False) -> None:
    """Check every component (SQLite, store, Chroma, embeddings, tokenizer, model) and say how to fix it."""
    from cairn.cli.common import require_known_model
    from cairn.doctor import run_checks

    settings = load_settings()
    require_known_model(settings)  # a config error: one line, exit 2, like a broken config.toml
    checks = run_checks(settings)
    ok = all(c.ok for c in checks)
    if as_json:
        print_json({"ok": ok, "checks": [c.as_dict() for c in checks]})
    else:
        table = Table(show_header=True, header_style="bold")
        table.add_column("component")
        table.add_column("status")
        table.add_column("detail", overflow="fold")  # a path cut short would hide where to look
        for c in checks:
            status = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
            detail = plain_text(c.detail)  # literal: a fix like `pip install '.[claude-code]'` is no markup
            if c.fix and not c.ok:
                detail.append("\n").append_text(plain_text(f"→ {c.fix}", style="dim"))
            table.add_row(c.name, status, detail)
        console.print(table)
    if not ok:
        raise typer.Exit(1)


@app.command("reindex-vectors")
def reindex_vectors() -> None:
    """Rebuild every Chroma collection from SQLite, the source of truth (an embedded vector store too
    damaged to open is moved aside first)."""
    settings = load_settings()

    from cairn.cli.progress import JobProgress

    with JobProgress(err) as progress:
        data = run_async(long_request(settings, "reindex_vectors", {}, progress))
    if data.get("moved_aside"):
        console.print(
            f"The vector store could not be opened ({data['damage']}); it was moved to "
            f"{data['moved_aside']} and a new one built. Delete that directory once you no longer need it.",
            soft_wrap=True,  # a path broken over lines cannot be copied
        )
    console.print(f"Rebuilt {data['vectors']} vectors from SQLite.")


@app.command("config")
def show_config(as_json: JsonOpt = False) -> None:
    """Show each setting's effective value and where it came from (default, file or environment), the
    model indexing runs on, and the paths derived from CAIRN_HOME."""
    from cairn.agent.model_names import default_model
    from cairn.config import setting_sources, toml_value

    try:
        settings = load_settings()
    except typer.Exit:
        # The error line names what to fix; the settings it may take are what the user needs next.
        _list_defaults(as_json)
        raise
    sources = setting_sources(settings.home)
    values = settings.model_dump(mode="json")
    model = settings.model or default_model()
    data = {
        "settings": {name: {"value": value, "source": sources[name]} for name, value in values.items()},
        "effective_model": model,
        "effective_model_source": sources["model"]
        if settings.model
        else ("default: ANTHROPIC_API_KEY is set" if model != "offline" else "default: no ANTHROPIC_API_KEY"),
        "config_file": str(settings.config_path),
        "config_file_exists": settings.config_path.exists(),
        "db_path": str(settings.db_path),
        "chroma_dir": str(settings.chroma_dir),
        "logs_dir": str(settings.logs_dir),
        "lock_path": str(settings.lock_path),
    }
    if as_json:
        print_json(data)
        return
    rows = [
        {
            "setting": name,
            "value": _setting_shown(entry["value"], model if name == "model" else None),
            "source": data["effective_model_source"] if name == "model" else entry["source"],
        }
        for name, entry in data["settings"].items()
    ]
    for key in ("config_file", "db_path", "chroma_dir", "logs_dir", "lock_path"):
        rows.append({"setting": key, "value": toml_value(data[key]), "source": "derived"})
    print_listing(console, None, rows, CONFIG_COLUMNS)


def _list_defaults(as_json: bool) -> None:
    """Every setting with its default, for a config.toml or variable that could not be read: what it
    may hold instead of the value the error names."""
    from pydantic_core import to_jsonable_python

    from cairn.config import Settings

    defaults = {
        name: to_jsonable_python(field.get_default(call_default_factory=True))
        for name, field in Settings.model_fields.items()
    }
    if as_json:
        print_json({"error": "invalid settings (see stderr)", "defaults": defaults})
        return
    rows = [
        {"setting": name, "value": _setting_shown(value, None), "source": "default"}
        for name, value in defaults.items()
    ]
    print_listing(console, None, rows, CONFIG_COLUMNS)


#: `cairn config`'s columns: the whole setting name (it is what config.toml takes), the value wrapped.
CONFIG_COLUMNS = [
    Column("setting", "setting", "label"),
    Column("value", "value", min_width=16),
    Column("source", "source", min_width=12),
]


def _setting_shown(value: Any, effective: str | None) -> str:
    """A setting's value as config.toml would hold it; an unset one says so, and for the model which
    one runs instead (TOML has no null, so `None` would be no value anyone could write)."""
    from cairn.config import toml_value

    if value is not None:
        return toml_value(value)
    if effective is not None:
        return f"# not set: {toml_value(effective)} runs"
    return "# not set"


@app.command()
def hook(
    recall: Annotated[
        bool,
        typer.Option(
            "--recall", help="Run the recall hook instead: print what would be injected for the payload."
        ),
    ] = False,
) -> None:
    """Run cairn's Claude Code hook on the JSON payload on stdin (always exits 0).

    For debugging: `cairn install` wires up the faster `hook.sh` (and `recall.py` under a bare
    interpreter), which honour the same contracts.
    """
    if recall:
        from cairn.daemon.recall import main as recall_main

        raise typer.Exit(recall_main())
    from cairn.daemon.hook import main as hook_main

    raise typer.Exit(hook_main())


@app.command()
def install(
    settings_file: Annotated[
        Path | None,
        typer.Option(
            "--settings",
            help="Claude Code settings file to edit (default ~/.claude/settings.json); remembered for "
            "`cairn doctor` and `--uninstall`.",
        ),
    ] = None,
    claude_config: Annotated[
        Path | None,
        typer.Option(
            "--claude-config",
            help="Claude Code's user config, where MCP servers are registered (default ~/.claude.json); "
            "remembered like --settings.",
        ),
    ] = None,
    mcp: Annotated[
        bool, typer.Option("--mcp/--no-mcp", help="Also register (or remove) the `cairn mcp` server.")
    ] = True,
    recall: Annotated[
        bool,
        typer.Option(
            "--recall/--no-recall",
            help="Also register the recall hook (SessionStart, UserPromptSubmit) that brings memory "
            "into sessions; --no-recall leaves it out, and removes one installed before.",
        ),
    ] = True,
    plugin: Annotated[
        bool,
        typer.Option(
            "--plugin",
            help="Run cairn's hooks and MCP server from the Claude Code plugin `cairn@cairn` instead of "
            "settings.json: installs the plugin with the `claude` CLI (or prints the two /plugin commands) "
            "and takes cairn's entries out of the settings files, so nothing runs twice.",
        ),
    ] = False,
    uninstall: Annotated[
        bool,
        typer.Option(
            "--uninstall",
            help="Remove cairn's hooks, MCP server and launchers instead, putting your files back as they "
            "were, and stop the daemon (the memory stays).",
        ),
    ] = False,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="With --uninstall: also delete CAIRN_HOME, everything cairn remembers (asks first).",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Set the model indexing runs on (`model` in CAIRN_HOME/config.toml), e.g. claude-code to "
            "index with your Claude Code login and your plan's tokens, or offline; nothing is asked then.",
        ),
    ] = None,
    no_ask: Annotated[
        bool,
        typer.Option(
            "--no-ask",
            help="Do not ask whether to index with your Claude Code login (nothing changes: indexing "
            "stays on the configured or default model).",
        ),
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Do not ask: --purge deletes CAIRN_HOME without confirming, and install asks nothing "
            "(like --no-ask: it never chooses Claude Code for you; --model claude-code does).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add cairn's hooks to Claude Code's settings and register `cairn mcp` as its MCP server, or remove both.

    The capture hook queues transcripts for indexing; the recall hook injects what cairn remembers at
    session start and with each prompt (turn it off with `--no-recall`, or keep it installed and set
    `recall_enabled = false` in the config). Both run through launchers in CAIRN_HOME/bin that this
    command (re)writes for the cairn that runs it: after moving the checkout or rebuilding its venv,
    run `cairn install` again from the new place (`cairn doctor` says when).

    What it does to your files: only cairn's own hook handlers and the `cairn` entry under
    `mcpServers` change, written in the file's own formatting (indentation, key order, final
    newline); everything else keeps its bytes, and a file already right is not rewritten. Before
    the first change the original is copied to `<file>.cairn-backup` (a file that did not exist is
    noted in `<file>.cairn-created`); later installs keep that original.

    `--plugin` installs cairn as a Claude Code plugin instead (the `cairn` plugin of the marketplace
    in cairn's checkout, which Claude Code can then enable, disable and update): the launchers are
    written, the plugin is added with the `claude` CLI (without one, the two `/plugin` commands to
    type are printed), and cairn's hooks and MCP server are taken out of the settings files. A plain
    `cairn install` that finds the plugin enabled does the same, so hooks never run twice.

    `--uninstall` undoes it: the original's exact bytes come back (if you edited the file since,
    only cairn's entries are taken out, so your edits stay), a file cairn created is deleted, the
    backups and launchers go, and the daemon is stopped. Your memory in CAIRN_HOME stays;
    `--uninstall --purge` deletes it too, after asking (`--yes` skips the question; without a
    terminal it is required).

    Indexing with your own Claude Code login spends your plan's tokens, so it is never chosen for
    you: on a terminal, with no model configured and Claude Code (claude-agent-sdk, or `claude` on
    PATH) there, install asks once whether to (the answer is kept in CAIRN_HOME; a second install
    does not ask again), and yes writes `model = "claude-code"` into CAIRN_HOME/config.toml.
    `--model NAME` sets the model without asking; without a terminal, or with `--no-ask`/`--yes`,
    nothing is asked and nothing changes. `--uninstall` leaves the model setting as it is.
    """
    from cairn.daemon import install as installer
    from cairn.daemon import launcher, process
    from cairn.daemon import plugin as claude_plugin
    from cairn.daemon.process import DaemonError
    from cairn.store.lock import StoreLockedError
    from cairn.store.store import Store

    settings = load_settings()
    if purge and not uninstall:
        raise fail("--purge deletes CAIRN_HOME and goes only with --uninstall", code=2)
    enabled_plugin = None if uninstall else claude_plugin.enabled_plugin()
    as_plugin = not uninstall and (plugin or enabled_plugin is not None)
    if as_plugin and not (recall and mcp):
        why = "--plugin" if plugin else f"the Claude Code plugin {enabled_plugin} is enabled, and it"
        raise fail(
            f"{why} always brings the recall hook and the MCP server; turn recall off with "
            "recall_enabled = false in CAIRN_HOME/config.toml, or disable the plugin in Claude Code "
            "(/plugin)",
            code=2,
        )
    if model is not None:
        from cairn.agent.model_names import unknown_model_message

        if uninstall:
            raise fail(
                "--model chooses the model an install indexes with; it does not go with --uninstall", 2
            )
        model = model.strip()
        if (unknown := unknown_model_message(model)) is not None:
            raise fail(unknown, 2)
    if purge:
        _confirm_purge(settings, yes)
    # An uninstall finds the files an install with --settings/--claude-config wrote to.
    recorded_settings, recorded_config = launcher.read_where(settings.home) if uninstall else (None, None)
    path = settings_file or recorded_settings or installer.DEFAULT_SETTINGS
    config = claude_config or recorded_config or installer.DEFAULT_CLAUDE_CONFIG
    targets = None
    plugin_report = None
    plugin_error = None
    if as_plugin:
        try:
            targets = installer.write_launchers(settings)
        except OSError as exc:
            raise fail(str(exc)) from exc
        try:
            plugin_report = claude_plugin.register()
        except claude_plugin.PluginError as exc:
            plugin_error = str(exc)
    # With the plugin enabled, cairn's entries in the settings would run every hook a second time, so
    # they go; until it is (the user has yet to type the /plugin commands, or the CLI failed), they
    # stay, and so capture never stops in between.
    hand_over = plugin_report is not None and plugin_report.action in ("registered", "already")
    try:
        if uninstall or hand_over:
            report = installer.uninstall(path)
        elif as_plugin:
            report = installer.InstallReport(str(path), "unchanged")
        else:
            targets = installer.write_launchers(settings)
            recall_command = installer.recall_command(settings) if recall else None
            report = installer.install(path, installer.hook_command(settings), targets.kind, recall_command)
            claude_plugin.mark_hooks_in_settings(settings.home, path)
    except (installer.SettingsFileError, OSError) as exc:
        raise fail(str(exc)) from exc
    mcp_report = None
    if mcp and (uninstall or hand_over or not as_plugin):
        try:
            if uninstall or hand_over:
                mcp_report = installer.uninstall_mcp(config)
            else:
                mcp_report = installer.install_mcp(config, installer.mcp_entry(settings))
        except (installer.SettingsFileError, OSError) as exc:
            done = "removed" if uninstall or hand_over else "installed"
            raise fail(f"{exc} (the hooks were {done}; rerun once that is fixed)") from exc
    if hand_over:
        claude_plugin.unmark_hooks_in_settings(settings.home)
    if uninstall:
        try:
            plugin_report = claude_plugin.unregister()
        except claude_plugin.PluginError as exc:
            plugin_error = str(exc)
    purged = None
    stopped = None
    if not uninstall:
        launcher.write_where(settings.home, path, config if mcp else None)
    else:
        launcher.remove(settings.home)
        # Only now: with the hooks and launchers gone, nothing starts the daemon again.
        try:
            stopped = process.stop(settings)
        except DaemonError as exc:
            raise fail(f"{exc} (the hooks were removed; stop it with `cairn daemon stop`)") from exc
        if purge:
            try:
                purged = installer.purge(settings)
            except (installer.PurgeRefused, OSError, DaemonError) as exc:
                raise fail(f"{exc} (the hooks were removed; the memory is still in {settings.home})") from exc
    store_note = None
    if not uninstall and not settings.db_path.exists():
        # The hook never creates the store (a hook must not migrate a database), so create it now.
        async def create() -> None:
            try:
                store = await Store.open(settings)
            except StoreLockedError:
                return
            await store.close()

        run_async(create())
        store_note = f"created the cairn store at {settings.db_path}"
    ask = not (no_ask or yes)
    if as_json:
        mcp_data = asdict(mcp_report) if mcp_report is not None else None
        extra = {
            "indexing": None if uninstall else _choose_model(settings, model, ask=ask, as_json=True)[0],
            "mcp": mcp_data,
            "store_created": store_note is not None,
            "launcher": asdict(targets) if targets is not None else None,
            "home": str(settings.home),
            "purged": purged,
            "daemon_stopped": stopped,
            "plugin": asdict(plugin_report) if plugin_report is not None else None,
            "plugin_error": plugin_error,
        }
        print_json({**asdict(report), **extra})
        if plugin_error is not None:
            raise typer.Exit(1)
        return
    if as_plugin:
        _print_plugin_install(report, mcp_report, plugin_report, plugin_error)
        if not claude_plugin.plugin_sees(settings.home):
            err.print(
                f"[yellow]note:[/] the plugin finds cairn in {claude_plugin.default_bin()} unless Claude "
                f"Code runs with CAIRN_HOME={plain_text(str(settings.home))} in its environment"
            )
    else:
        _print_hooks_report(report, uninstall)
        if not uninstall:
            if report.recall_events:
                console.print(f"recall: memory is injected on {', '.join(report.recall_events)}")
            else:
                console.print("recall: not installed (capture only)")
        if mcp_report is not None:
            _print_mcp_report(mcp_report)
    if targets is not None and targets.kind == "python":
        err.print("[yellow]note:[/] no sqlite3 CLI (3.32+) on PATH: installed the slower Python hook")
    if store_note:
        console.print(store_note)
    if targets is not None:
        console.print(
            f"launchers in {launcher.bin_dir(settings.home)} run the cairn in {Path(targets.python).parent}"
        )
    if not uninstall:  # asked once the install is done and said, so the question comes last
        for line in _choose_model(settings, model, ask=ask, as_json=False)[1]:
            console.print(plain_text(line))
    if uninstall:
        if stopped is not None:
            console.print(f"stopped the cairn daemon (pid {stopped})")
        if purge:
            console.print(
                f"deleted {settings.home}: everything cairn remembered"
                if purged
                else f"{settings.home} did not exist"
            )
        else:
            console.print(
                f"your memory is kept in {settings.home}; `cairn install --uninstall --purge` deletes it"
            )
        _print_plugin_uninstall(plugin_report, plugin_error)
    if plugin_error is not None:
        raise typer.Exit(1)


def _print_plugin_install(
    report: InstallReport, mcp_report: McpReport | None, plugin: PluginReport | None, error: str | None
) -> None:
    """What `install --plugin` did: the plugin's state, and cairn's settings entries it took out."""
    from cairn.daemon.plugin import PLUGIN_ID

    if report.action == "uninstalled":
        _print_undo(report.settings_path, report.undo, "cairn's hooks (the plugin runs them now)")
    if mcp_report is not None and mcp_report.action == "removed":
        _print_undo(
            mcp_report.config_path, mcp_report.undo, "the MCP server 'cairn' (the plugin serves it now)"
        )
    meanwhile = (
        f"until the plugin is enabled, cairn's hooks in {report.settings_path} (if a plain `cairn install` "
        "put them there) keep capturing; once it is, run `cairn install` again to hand them over to it"
    )
    if error is not None:
        err.print(f"[red]error:[/] could not install the Claude Code plugin {PLUGIN_ID}: {plain_text(error)}")
        console.print(meanwhile)
        return
    assert plugin is not None
    if plugin.action == "already":
        console.print(
            f"the Claude Code plugin {plugin.plugin_id} is enabled: it runs cairn's hooks and MCP server"
        )
    elif plugin.action == "registered":
        console.print(
            f"installed the Claude Code plugin {plugin.plugin_id} from the marketplace in "
            f"{plugin.marketplace} (with the claude CLI); Claude Code sessions started from now on use it"
        )
    else:
        console.print("to finish, type these two commands into Claude Code (no claude CLI or checkout here):")
        for command in plugin.commands:
            console.print(f"  {plain_text(command)}")
        console.print(meanwhile)


def _print_plugin_uninstall(plugin: PluginReport | None, error: str | None) -> None:
    if error is not None:
        err.print(f"[red]error:[/] could not remove the Claude Code plugin: {plain_text(error)}")
    elif plugin is not None and plugin.action == "removed":
        console.print(f"removed the Claude Code plugin {plugin.plugin_id} (with the claude CLI)")
    elif plugin is not None and plugin.action == "manual":
        console.print(
            f"the Claude Code plugin is still enabled: type `{plugin.commands[0]}` into Claude Code"
        )


def _choose_model(
    settings: Settings, model: str | None, *, ask: bool, as_json: bool
) -> tuple[dict[str, Any], list[str]]:
    """Set the model `--model` names, or ask once (on a terminal) whether to index with Claude Code.

    Returns what `--json` says about indexing (the model it runs on now and why, whether it changed,
    whether and how the question was answered) and the lines a person reads instead. The question
    goes to stderr, so `--json`'s stdout stays JSON.
    """
    import sys

    import click

    from cairn.agent.model_names import CLAUDE_CODE
    from cairn.config import ConfigError
    from cairn.daemon import install as installer
    from cairn.doctor import model_and_source

    answer: str | None = None
    chosen = model
    # A terminal both ways: the user must see the question (stderr) and be there to answer it (stdin).
    on_a_terminal = sys.stdin.isatty() and sys.stderr.isatty()
    if chosen is None and ask and on_a_terminal and installer.should_ask_about_claude_code(settings):
        try:
            yes = typer.confirm(installer.claude_code_question(settings), default=False, err=True)
        except click.exceptions.Abort:  # Ctrl-C or end of input: no answer, so the next install asks
            err.print()
        else:
            answer = "yes" if yes else "no"
            chosen = CLAUDE_CODE if yes else None
    changed = False
    if chosen is not None:
        try:
            changed = installer.set_model(settings, chosen)
        except (ConfigError, OSError) as exc:
            raise fail(f"{exc} (the hooks were installed; rerun once that is fixed)") from exc
        settings = load_settings()
    if answer is not None:  # once the choice is in place: a failed write leaves the question open
        installer.record_answer(settings.home, installer.CLAUDE_CODE_QUESTION, answer)
    now, why = model_and_source(settings)
    data = {"model": now, "source": why, "changed": changed, "asked": answer is not None, "answer": answer}
    if as_json:
        return data, []
    lines = [f"indexing: {now} ({why})"]
    if chosen is not None and settings.model != chosen:
        lines.append(f"note: CAIRN_MODEL={settings.model} in your environment overrides model = {chosen!r}")
    lines.extend(_claude_code_lines(settings, now, changed))
    if answer == "no":
        lines.append("not asked again; `cairn install --model claude-code` chooses it later")
    elif settings.model is None and installer.claude_code_available():
        lines.append(
            "to index with your Claude Code login (your plan's tokens): `cairn install --model claude-code`"
        )
    return data, lines


def _claude_code_lines(settings: Settings, model: str, changed: bool) -> list[str]:
    """What a user who has just chosen `claude-code` needs to hear: the budget, the SDK, the login."""
    from cairn.agent.model_names import claude_code_target
    from cairn.daemon import install as installer
    from cairn.daemon.process import running_pid
    from cairn.doctor import check_claude_code

    if claude_code_target(model, settings.claude_code_model) is None:
        return []
    lines = [f"Claude Code indexes {installer.budget_words(settings)}, then waits for the next day"]
    if changed and (info := running_pid(settings)) is not None:
        lines.append(
            f"the running daemon (pid {info.pid}) keeps its model until it restarts: `cairn daemon stop` "
            "(the next hook starts it again)"
        )
    # The same check `cairn doctor` makes, so the two never say it differently.
    check = check_claude_code(settings)
    if not check.ok:
        lines.append(check.detail + (f" → {check.fix}" if check.fix else ""))
    return lines


def _confirm_purge(settings: Settings, yes: bool) -> None:
    """Ask before deleting CAIRN_HOME; refuse (exit 2) when there is no terminal to ask on and no --yes.

    Checked before anything is changed, so a refused purge leaves the install exactly as it was.
    """
    import sys

    from cairn.daemon import install as installer

    try:
        installer.check_purgeable(settings)
    except installer.PurgeRefused as exc:
        raise fail(str(exc), code=2) from exc
    if yes:
        return
    if not sys.stdin.isatty():
        raise fail(
            f"--purge would delete {settings.home} and there is no terminal to confirm on; "
            "add --yes to delete it without asking",
            code=2,
        )
    if not typer.confirm(f"Delete {settings.home} and everything cairn remembers?", default=False):
        raise fail("nothing changed", code=1)


def _print_undo(path: str, undo: str | None, what: str) -> None:
    """What uninstall did to one file, in a line."""
    if undo == "restored":
        console.print(f"removed {what} from {path}: the file is back to its original bytes")
    elif undo == "deleted":
        console.print(f"removed {what}: deleted {path}, which cairn had created")
    elif undo == "edited":
        console.print(f"removed {what} from {path} (changed since the install, so only cairn's entries went)")


def _print_original(path: str, backup: str | None, created: bool) -> None:
    """Where install keeps the original of a file it changed."""
    if created:
        console.print(f"{path} did not exist: cairn created it, and `cairn install --uninstall` deletes it")
    elif backup:
        console.print(f"the original is kept as {backup}; `cairn install --uninstall` puts it back")


def _print_hooks_report(report: InstallReport, uninstall: bool) -> None:
    if report.action == "unchanged":
        console.print(
            f"{report.settings_path}: already {'clean' if uninstall else 'up to date'}, not changed"
        )
        if report.backup:
            console.print(f"the file is gone; its original from before cairn is still in {report.backup}")
    elif uninstall:
        _print_undo(report.settings_path, report.undo, f"cairn's hooks ({', '.join(report.events)})")
    else:
        console.print(f"installed cairn's hooks in {report.settings_path} ({', '.join(report.events)})")
        _print_original(report.settings_path, report.backup, report.created)


def _print_mcp_report(report: McpReport) -> None:
    if report.action == "registered":
        entry = report.entry
        command = " ".join([entry["command"], *entry["args"]])
        home = entry.get("env", {}).get("CAIRN_HOME")
        console.print(
            f"registered the MCP server 'cairn' ({command}{f', CAIRN_HOME={home}' if home else ''}) "
            f"in {report.config_path}; Claude Code sessions started from now on can use it"
        )
        _print_original(report.config_path, report.backup, report.created)
    elif report.action == "removed":
        _print_undo(report.config_path, report.undo, "the MCP server 'cairn'")
    else:
        state = "absent" if report.entry is None else "registered"
        console.print(f"{report.config_path}: MCP server 'cairn' already {state}, not changed")


@app.command("mcp")
def mcp_server() -> None:
    """Serve cairn's memory to Claude Code (or any MCP client) over stdin/stdout.

    Claude Code starts this itself: `cairn install` registers it in ~/.claude.json as the user-scope
    MCP server 'cairn' (check with `claude mcp list`), and every session then gets the tools search,
    show, timeline, open_questions and search_content (and learner_stats with the setting
    mcp_learner_stats). It is not meant to be run by hand: it speaks JSON-RPC on stdout and logs to
    stderr.

    Each call is answered by the cairn daemon when it runs for this CAIRN_HOME, else from the store
    opened for that one call, so the server never keeps the store locked.
    """
    from cairn.mcp.server import serve

    serve(load_settings())
