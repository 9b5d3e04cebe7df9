"""`cairn ARGS` run inside the test process, answering as `subprocess.run` would.

A `cairn` process spends most of a short command starting: importing typer, rich, pydantic, chromadb and
onnxruntime, and loading the embedding model. Tests of what a command *does* — its output, its exit status,
the store it leaves — run it here instead, through the same entry point a user's process runs (`app()`,
with its umask, its one-line failures and `SystemExit` codes), with the same environment, a stdin of
its own and its stdout and stderr captured apart. What only a real process shows stays a real process:
signals, kills and crashes, the hook's start-up, PYTHONHASHSEED, terminal sizes, the daemon.

`run` uses a real process when an event loop is running in this thread (an async test), since a command's
own `asyncio.run` cannot nest in it, and for the commands that start a daemon or serve until stopped
(`REAL_PROCESS`): a daemon started from here would be this process's child, a zombie when it dies, which
no user's daemon ever is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence

from typer.testing import CliRunner

from cairn.cli import app

#: Commands always run as a real process: those that start a daemon (directly, or the hook's spawn)
#: and the servers that run until stopped.
REAL_PROCESS = {("daemon", "start"), ("daemon", "run"), ("hook",), ("mcp",), ("ui",)}


def _needs_process(args: Sequence[str]) -> bool:
    return tuple(args[:1]) in REAL_PROCESS or tuple(args[:2]) in REAL_PROCESS or _loop_running()


@contextlib.contextmanager
def _fresh_process_output() -> Iterator[None]:
    """Log records and warnings reach the command's stderr as in a new process: the root logger without
    pytest's capturing handlers (Python's last-resort handler prints WARNING and above), and each warning
    shown once, on stderr, instead of recorded by pytest."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers, root.level = [], logging.WARNING
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()  # then Python's own default filters, as a new process has them
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.filterwarnings("ignore", category=category)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            warnings.showwarning = _show_warning
            yield
    finally:
        root.handlers, root.level = handlers, level


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """`cairn ARGS` with exactly the environment `env` (as `subprocess.run(env=...)` gives it).

    Exit status, stdout and stderr are those of the process: a `SystemExit` code (a message for a string
    code, on stderr, status 1) or, for any other exception, its traceback on stderr and status 1.
    """
    argv = ["cairn", *args]
    if _needs_process(args):
        return subprocess.run(
            [sys.executable, "-m", "cairn", *args],
            input=input,
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=timeout,
        )
    overrides: dict[str, str | None] = {key: None for key in os.environ if key not in env}
    overrides.update(env)
    runner = CliRunner()
    umask = os.umask(0o022)
    os.umask(umask)
    code: int = 0
    with runner.isolation(input=input, env=overrides) as (out, err, _), _fresh_process_output():
        try:
            app(args=list(args), prog_name="cairn", standalone_mode=True)
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                sys.stderr.write(f"{exc.code}\n")
                code = 1
        except Exception:
            sys.stderr.write(traceback.format_exc())
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.umask(umask)  # the command set cairn's; the test process keeps its own
        stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(argv, code, stdout.decode(), stderr.decode())
