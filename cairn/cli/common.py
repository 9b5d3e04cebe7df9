"""What the cairn commands share: the typer app, consoles, option types, output helpers and store access."""

from __future__ import annotations

import contextlib
import inspect
import os
import re
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.table import Table
from rich.text import Text

from cairn import __version__
from cairn.cli.commands import LazyCommands
from cairn.cli.consoles import console, err
from cairn.cli.consoles import print_json as print_json  # re-exported: the commands import it with the app
from cairn.cli.safe import plain_text
from cairn.malloc import tune_malloc
from cairn.quiet import quiet_third_party

# Not imported here: the settings (pydantic-settings, a tenth of a second), asyncio and rich's progress
# bars. A command that only asks the daemon needs none of them (`ask`, `benchmarks/cli_search.py`).
if TYPE_CHECKING:
    from rich.progress import Progress

    from cairn.config import Settings
    from cairn.store.cpus import EmbeddingMode
    from cairn.store.store import Store

#: cairn's own files are the user's alone (invariant 8): whatever the shell's umask, everything cairn
#: creates — home, database and its -wal/-shm, Chroma's files, logs, socket, keys — is 0700/0600.
UMASK = 0o077


def reflowed(text: str | None) -> str | None:
    """A docstring with each paragraph on one line, so `--help` wraps it at the terminal's width.

    typer's rich help keeps a docstring's single line breaks, so text wrapped at the source's 110
    columns came out ragged on an 80-column terminal; one line a paragraph, rich wraps it cleanly.
    """
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _reflow_commands(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        info.help = reflowed(info.help or inspect.getdoc(info.callback))


class _Cairn(typer.Typer):
    """The `cairn` entry point (console script, `python -m cairn`, so also the daemon, hook and MCP
    server it runs): sets cairn's umask, silences third-party banners (`cairn.quiet`), and turns a
    full disk or a read-only store — however deep it surfaced — into one line instead of a traceback
    (`cairn.store.failures`). Every command's help, a sub-app's too, is `reflowed` as it is added."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = super().command(*args, **kwargs)

        def reflowing(f: Callable[..., Any]) -> Callable[..., Any]:
            registered = register(f)
            _reflow_commands(self)
            return registered

        return reflowing

    def callback(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = super().callback(*args, **kwargs)

        def reflowing(f: Callable[..., Any]) -> Callable[..., Any]:
            registered = register(f)
            if self.registered_callback is not None:
                self.registered_callback.help = reflowed(inspect.getdoc(f))
            return registered

        return reflowing

    def add_typer(self, typer_instance: typer.Typer, **kwargs: Any) -> None:
        _reflow_commands(typer_instance)
        super().add_typer(typer_instance, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        global _warned
        _warned = False  # once a command: one process may run several (the test suite does)
        _after_success.clear()
        os.umask(UMASK)
        quiet_third_party()  # before any command can run an agent (pydantic-ai's banner)
        tune_malloc()  # before threads allocate (peak RSS of a backfill)
        try:
            result = super().__call__(*args, **kwargs)
            _warn_after_success()
            return result
        except SystemExit as exit_:
            if exit_.code in (0, None):
                _warn_after_success()
            raise
        except Exception as exc:
            from cairn.errors import Refusal

            if isinstance(exc, Refusal):  # a broken config.toml met outside `load_settings`, a bad id
                raise SystemExit(fail(str(exc), 2).exit_code) from None
            message = _one_line_failure(exc)
            if message is None:
                raise
            raise SystemExit(fail(message).exit_code) from None


def _one_line_failure(exc: BaseException) -> str | None:
    """The line for a write failure (full, read-only), an unusable store or another `Failure` of the
    environment, else None (a bug: traceback)."""
    # Imported only now: a command that asks the daemon never loads the settings (`request`).
    from cairn.config import Settings
    from cairn.errors import Failure
    from cairn.store.db import DatabaseError
    from cairn.store.failures import UnsafeHomeError, describe_write_failure
    from cairn.store.migrations import SchemaTooNewError

    try:
        home: Path | None = Settings.load().home
    except Exception:  # a bad setting was reported (or will be) on its own
        home = None
    message = describe_write_failure(exc, home)
    if message is None and isinstance(exc, DatabaseError | SchemaTooNewError | UnsafeHomeError):
        message = str(exc)
    if message is None:
        message = _vector_failure(exc)
    if message is None and home is not None:
        message = _home_failure(exc, home)
    if message is None and isinstance(exc, Failure):
        message = str(exc)
    return message


def _home_failure(exc: BaseException, home: Path) -> str | None:
    """The line for a `CAIRN_HOME` cairn cannot make or use (`/proc`, a file, a missing parent)."""
    if not isinstance(exc, OSError) or not exc.filename:
        return None
    name = Path(str(exc.filename))
    if name != home and home not in name.parents:
        return None
    return (
        f"cannot use CAIRN_HOME {home}: {exc.strerror or exc} ({name}); set CAIRN_HOME to a directory "
        "you can write (it is created if missing)"
    )


def _vector_failure(exc: BaseException) -> str | None:
    """The line for a vector store that cannot be used: SQLite, the truth, already holds what was
    captured, and the vectors wait in the outbox for the next sync."""
    from cairn.store.vectors import EmbeddingConflictError, VectorStoreError

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, VectorStoreError):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return None
    if isinstance(seen, EmbeddingConflictError):
        return f"{seen} Or set `embedding` back to the one that made them."
    return (
        f"{seen} — what was captured is stored; the vectors wait until the vector store answers "
        "(start the Chroma server or unset chroma_url, then run the command again)"
    )


class _Commands(LazyCommands):
    """`cairn`'s command group, building its commands from `app`."""

    def typer_app(self) -> typer.Typer:
        return app


app = _Cairn(
    name="cairn",
    cls=_Commands,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


T = TypeVar("T")


JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")]


ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Indexing model: 'offline', 'claude-code' (your Claude Code login; claude-code:NAME for another "
        "model), a pydantic-ai model string such as anthropic:claude-haiku-4-5, or "
        "openai-chat:NAME / ollama:NAME with CAIRN_MODEL_BASE_URL. Default: CAIRN_MODEL, else Claude Haiku "
        "with ANTHROPIC_API_KEY, else offline.",
    ),
]


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Show every column, however wide the table gets (at the terminal's width, secondary columns "
        "are left out and named under the table).",
    ),
]


SessionOpt = Annotated[str | None, typer.Option("--session", help="Only this session id.")]


ProjectOpt = Annotated[str | None, typer.Option("--project", help="Only this project (name or path).")]


LimitOpt = Annotated[int, typer.Option("--limit", min=1, max=10_000, help="At most this many rows.")]


OpenOpt = Annotated[
    bool,
    typer.Option(
        "--open",
        help="Only open ones: unresolved and left open by their session (put off, given up, or at its end).",
    ),
]


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    import asyncio

    return asyncio.run(coro)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `message` as one `error:` line and return the exit to raise.

    The message often quotes what the caller or a transcript said (an id, a path, a token), so it is
    printed as text, never as markup, and never wrapped: a script reads the first line of stderr.
    """
    err.print(Text("error:", style="bold red") + Text(" ") + plain_text(message), soft_wrap=True)
    return typer.Exit(code)


def load_settings(*, log_as: str | None = None) -> Settings:
    """Load settings, turning a broken `config.toml` or a bad value into one line and exit code 2.

    Unknown keys and `CAIRN_*` variables are warned about on stderr (once a command, never on a
    `--json` stdout), each with the closest setting name, since cairn otherwise ignores them.
    `log_as` also writes the error line to `$CAIRN_HOME/logs/hook.log` under that name: the daemon
    is started by the hook with its output discarded, and that log is where a user looks then.
    """
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from cairn.config import ConfigError, Settings, resolve_home

    try:
        settings = Settings.load()
    except (ConfigError, ValidationError, SettingsError) as exc:
        if isinstance(exc, ConfigError):
            line = str(exc)
        elif isinstance(exc, SettingsError):  # a list or mapping variable that is not JSON
            line = unparsable_setting_line(exc)
        else:
            line = invalid_settings_line(exc)
        if log_as is not None:
            from cairn.daemon.hook import log

            log(str(resolve_home()), line, source=log_as)
        raise fail(line, 2) from None
    _warn_unknown_settings(settings.home, settings.model)
    return settings


#: Whether this command has warned about unknown settings yet; `_Cairn.__call__` resets it.
_warned = False
#: Warnings said when the command succeeds: a command that fails over the same thing says it once.
_after_success: list[str] = []


def _warn_after_success() -> None:
    for line in _after_success:
        err.print(Text("warning:", style="yellow") + Text(" ") + plain_text(line), soft_wrap=True)
    _after_success.clear()


def _warn_unknown_settings(home: Path, model: str | None) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    from cairn.config import unknown_setting_warnings

    for line in unknown_setting_warnings(home):
        err.print(Text("warning:", style="yellow") + Text(" ") + plain_text(line), soft_wrap=True)
    _after_success.extend(_unknown_model(model))


def _unknown_model(name: str | None) -> list[str]:
    """The warning for a `model` no provider serves (`model = "gpt5"`), said by every command that
    succeeds (one that needs the model refuses it instead): search and the listings work without it,
    so nothing else would say that indexing waits until it is fixed.
    Only a name without a provider prefix is checked here, which needs no model list (a command starts
    fast); the daemon and `cairn index` refuse the others."""
    from cairn.agent.model_names import CLAUDE_CODE, OFFLINE, unknown_model_message

    name = (name or "").strip()
    if not name or ":" in name or name in (OFFLINE, CLAUDE_CODE):
        return []
    line = unknown_model_message(name)
    return [] if line is None else [f"{line}; indexing waits until it is fixed"]


def unparsable_setting_line(exc: Exception) -> str:
    """One line for a `CAIRN_*` variable pydantic-settings could not parse (a list given as `notjson`)."""
    from cairn.config import ENV_PREFIX

    field = re.search(r'field "(\w+)"', str(exc))
    name = f"{ENV_PREFIX}{field[1].upper()}" if field else "a CAIRN_* variable"
    return f'{name} is not valid JSON (a list is written ["a", "b"], a mapping {{"k": 1}}): fix or unset it'


def invalid_settings_line(exc: Any) -> str:
    """One line for a pydantic `ValidationError` of `Settings`: each bad setting, where it came from."""
    from cairn.config import ENV_PREFIX, resolve_home, setting_sources

    sources = setting_sources()
    home = resolve_home()
    problems = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        # A check of several settings together has no location: its message starts with the setting.
        name = str(error["loc"][0]) if error["loc"] else message.split(" ", 1)[0]
        source = sources.get(name, "default")
        origin = {
            "environment": f"${ENV_PREFIX}{name.upper()}",
            "file": f"{home / 'config.toml'}",
        }.get(source, "default")
        if error["loc"] or name in sources:
            problems.append(f"{name} ({origin}): {message}")
        else:
            problems.append(message)
    listed = "; ".join(problems)
    return f"invalid cairn setting: {listed}; fix the value or remove it (`cairn config` lists them)"


def require_known_model(settings: Settings, override: str | None = None) -> str:
    """The model a command will run (`--model`, else `CAIRN_MODEL`, else the default), or one line and
    exit 2 when it names no model cairn can run — before any work and before asking for its key."""
    from cairn.agent.model_names import default_model, unknown_model_message

    name = (override or settings.model or default_model()).strip()
    if (unknown := unknown_model_message(name)) is not None:
        raise fail(unknown, 2)
    return name


def demo_transcript() -> Path:
    """The small demo session cairn ships, used when no Claude Code transcripts exist yet."""
    from importlib import resources

    return Path(str(resources.files("cairn.demo").joinpath("demo-session.jsonl")))


def _version(value: bool) -> None:
    if value:
        console.print(f"cairn {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """A searchable memory built from your coding agents' transcripts.

    Start with `cairn backfill`, which indexes your Claude Code history (or a demo session), then
    `cairn search "what you want to find"`; `cairn install` wires cairn into Claude Code. State lives
    in $CAIRN_HOME (default ~/.cairn); settings come from CAIRN_* variables and $CAIRN_HOME/config.toml.
    """


async def open_store(
    settings: Settings,
    *,
    read_only_ok: bool = False,
    busy_ok: bool = False,
    embedding_mode: EmbeddingMode = "steady",
):
    """The store, for a command; `read_only_ok` for reading commands, which work on a read-only home,
    and `busy_ok` with it for those that also read a store another process is writing (a backfill
    run without the daemon): by keyword, at once, rather than failing until the job ends.
    `embedding_mode` "bulk" lets a command the user waits on embed with every CPU (`cairn.store.cpus`)."""
    from cairn.store.lock import StoreLockedError
    from cairn.store.store import Store

    try:
        return await Store.open(
            settings, read_only_ok=read_only_ok, busy_ok=busy_ok, embedding_mode=embedding_mode
        )
    except StoreLockedError as exc:
        raise fail(str(exc)) from exc


def progress_bar(disable: bool = False) -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=disable,
    )


def ask(
    op: str, args: dict[str, Any] | None = None, *, on_direct: Callable[[Store], Any] | None = None
) -> Any:
    """`request` for a command that reads and prints (`cairn search`, `show`): the daemon is asked first
    with nothing loaded but its address — no settings, no event loop, no store — so its answer takes a
    fraction of a second (`benchmarks/cli_search.py`). It answers with its own settings; this process's
    are loaded (`load_settings`, with its one-line errors and warnings) only when the op runs here.
    `on_direct` is called then, with the store the op is about to run on (a command that says how it
    would have been faster, or that searches it without loading its vectors).
    """
    from cairn.cli import early_search
    from cairn.daemon.client import NoDaemon, ask_daemon
    from cairn.home import DaemonAddress

    address = DaemonAddress.here()
    if address.config_changed_since_start():
        load_settings()  # a config.toml broken since the daemon read it: the line and exit 2, as without it
    with _daemon_failures(), contextlib.suppress(NoDaemon):
        if (sent := early_search.take(op, args)) is not None:
            return sent.answer()
        return ask_daemon(address, op, args)
    return run_async(request(load_settings(), op, args, on_direct=on_direct))


@contextlib.contextmanager
def _daemon_failures() -> Iterator[None]:
    """A daemon's refusal or failure as the one line, and the exit status, the direct path gives it."""
    from cairn.daemon.client import DaemonFailure, DaemonRefusal, DaemonRequestError

    try:
        yield
    except DaemonRefusal as exc:
        raise fail(exc.reason, 2) from exc
    except DaemonFailure as exc:
        raise fail(exc.reason) from exc
    except DaemonRequestError as exc:
        raise fail(str(exc)) from exc


@contextlib.contextmanager
def _op_errors(settings: Settings, op: str) -> Iterator[None]:
    """An op run here answers as the daemon would (`cairn.errors`): a refusal is its line and exit 2;
    a failure of the environment is left to `_Cairn`, which says it in one line; anything else is a bug,
    whose trace goes to `cli.log` and whose line says so, exit 1."""
    from cairn.errors import Failure, Refusal, internal_error_line

    try:
        yield
    except Refusal as exc:
        raise fail(str(exc), 2) from exc
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        if isinstance(exc, Failure) or _one_line_failure(exc) is not None:
            raise
        from cairn.cli.internal import log_internal_error

        try:
            path = log_internal_error(settings.logs_dir, op, exc)
        except OSError:
            raise exc from None  # no log to point at: the trace itself, as any other bug
        raise fail(internal_error_line(op, exc, path)) from exc


async def request(
    settings: Settings,
    op: str,
    args: dict[str, Any] | None = None,
    *,
    wait: bool = False,
    on_direct: Callable[[Store], Any] | None = None,
    embedding_mode: EmbeddingMode = "steady",
) -> Any:
    """One store operation as JSON-able data: asked of the daemon when it runs, else run here directly
    (`cairn.memory.AsyncMemory.call`, the route every face takes), its failures as one line.

    `wait` gives the daemon all the time it needs (a big import); else it has the client's default.
    `on_direct` is called with the store when the op runs here, before it runs. `embedding_mode` is the
    direct path's: "bulk" for an op that embeds much (import). The store, Chroma and every op's module
    (seconds of imports) load only on the direct path: the daemon's answer must not pay for them
    (`benchmarks/cli_search.py`).
    """
    from cairn.memory import AsyncMemory

    memory = AsyncMemory(settings, share_model=False, embedding_mode=embedding_mode)
    with _daemon_failures(), _op_errors(settings, op):
        return await memory.call(op, args, wait=wait, on_direct=on_direct)


async def long_request(
    settings: Settings,
    op: str,
    args: dict[str, Any],
    on_progress: Callable[[dict[str, Any]], None],
    *,
    should_stop: Callable[[], bool] | None = None,
    on_direct: Callable[[], Any] | None = None,
) -> Any:
    """A long store operation (`cairn.daemon.jobs`): run by the daemon when it runs, else here
    (`cairn.memory.AsyncMemory.run_job`), streaming the same progress events either way.

    `on_direct` is called before the direct path starts (e.g. to take over Ctrl-C), and `should_stop`
    is that path's batch-boundary stop. The direct path embeds in bulk mode (every CPU, see
    `cairn.store.cpus`): these are the jobs a user starts and waits on.
    """
    from cairn.daemon.client import DaemonRequestError
    from cairn.memory import AsyncMemory

    memory = AsyncMemory(settings, share_model=False, embedding_mode="bulk")
    try:
        with _op_errors(settings, op):
            return await memory.run_job(op, args, on_progress, should_stop=should_stop, on_direct=on_direct)
    except DaemonRequestError as exc:
        raise fail(str(exc)) from exc


def interruptible(make: Callable[[], Coroutine[Any, Any, T]], command: str) -> T:
    """Run `make()`; Ctrl-C ends the command (a daemon finishes the batch in flight and stops there)."""
    try:
        return run_async(make())
    except KeyboardInterrupt:
        err.print(f"Interrupted; nothing is half-applied. Rerun `cairn {command}` to continue.")
        raise typer.Exit(130) from None


def dump(data: Any) -> Any:
    if isinstance(data, dict):
        return dict(data)
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    return asdict(data)


def counts(value: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in value.items()) or "—"


def uptime(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def key_value_table(title: str, rows: dict[str, Any]) -> Table:
    """Named figures, one a row; the names are short and kept whole, the values wrap at words (and a
    path too long for the line folds: cut with `…`, the end of it, the file's name, would be lost)."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows.items():
        table.add_row(key.replace("_", " "), counts(value) if isinstance(value, dict) else str(value))
    return table


def render_stats(stats: Any) -> None:
    from cairn.dates import shown_date

    data = dump(stats)
    if not data.get("vectors_error"):
        data.pop("vectors_error", None)
    if isinstance(data.get("vectors"), dict):  # the kinds that hold any (`--json` lists every kind)
        data["vectors"] = {kind: n for kind, n in data["vectors"].items() if n} or "none yet"
    data["db_size"] = f"{data.pop('db_size_bytes', 0) / 1_048_576:.1f} MiB"
    for moment in ("first_message_at", "last_message_at"):
        if moment in data:
            data[moment] = shown_date(data[moment]) or "—"
    data["recall"] = recall_summary(
        data.pop("recall_injections", 0),
        data.pop("recall_hits", 0),
        data.pop("recall_hit_rate", None),
        data.pop("recall_drops", 0),
        data.pop("recall_drops_by_reason", {}),
    )
    data["file_index"] = files_summary(
        data.pop("file_documents", 0), data.pop("file_chunks", 0), data.pop("file_requests_by_status", {})
    )
    data["learning"] = learning_summary(
        data.pop("learning_sessions_by_status", {}), data.pop("search_associations", 0)
    )
    today = data.pop("indexing_today", None)
    if isinstance(today, dict):  # an older daemon's stats have none
        offline = today.get("limit") and not today.get("applies")
        data["indexing_today"] = (
            f"{int(today.get('spent') or 0):,} tokens today (the offline model indexes: no budget applies)"
            if offline
            else today["words"]
        )
    paused = data.pop("indexing_paused", None)
    console.print(key_value_table("cairn stats", data))
    if paused:
        console.print(plain_text(paused, style="yellow"), soft_wrap=True)


def files_summary(documents: int, chunks: int, requests: dict[str, int]) -> str:
    """One line for `cairn stats`: what the on-demand file index holds and how its requests went."""
    line = f"{plural(documents, 'file')}, {plural(chunks, 'chunk')}"
    return f"{line}; requests: {counts(requests)}" if requests else line


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {nouns or noun + 's'}"


def learning_summary(sessions: dict[str, int], associations: int) -> str:
    """One line for `cairn stats`: weak searches learned from, and the associations there are."""
    started = sum(n for status, n in sessions.items() if status not in ("pending", "dismissed"))
    return (
        f"{plural(started, 'weak search', 'weak searches')}: {sessions.get('resolved', 0)} resolved, "
        f"{sessions.get('timed_out', 0)} timed out; {plural(associations, 'association')}"
    )


def recall_summary(
    injections: int,
    hits: int,
    hit_rate: float | None,
    drops: int = 0,
    drops_by_reason: dict[str, int] | None = None,
) -> str:
    """One line for `cairn stats` and `cairn status`: how many ideas recall injected, how many the agent
    expanded, and how many hook calls were dropped (late, failed, no daemon) — a drop is silent in the
    session, so this line is where a user sees that recall is missing prompts."""
    if not injections:
        line = "nothing injected yet"
    else:
        rate = f"{hit_rate:.0%}" if hit_rate is not None else "n/a"
        line = f"{injections} ideas injected, {hits} expanded by the agent (hit rate {rate})"
    reasons = {k.replace("_", " "): v for k, v in (drops_by_reason or {}).items() if v}
    dropped = f"{plural(drops, 'hook call')} dropped" + (f" ({counts(reasons)})" if reasons else "")
    return f"{line}; {dropped}"


def index_json(report: Any) -> dict[str, Any]:
    from cairn.daemon.jobs import index_json

    return index_json(report)
