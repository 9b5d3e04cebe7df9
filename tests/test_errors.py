"""cairn's one error tree (`cairn.errors`), and how the faces answer each branch.

Every exception a user can meet is a `CairnError`, on the refusal branch (bad input: its line, exit 2)
or the failure branch (the environment: its line, exit 1); anything else raised in an op is a bug,
whose trace is logged and whose one line says where — never passed off as a refusal because it
happens to be a `ValueError`.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import cairn
from cairn.errors import CairnError, Failure, Refusal, internal_error_line
from tests.helpers.cli import cairn as run_cairn

#: Exceptions that carry control flow inside their module, caught there, never seen by a user
#: (`cairn.errors` names them). Private ones (`_Stop`) are left out by their name.
CONTROL_FLOW = {"cairn.daemon.recall.Late"}


def _cairn_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(cairn.__path__, "cairn."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_public_exception_of_cairn_is_in_the_tree() -> None:
    exceptions = _cairn_exceptions()
    assert len(exceptions) > 40, "the walk should find cairn's exception classes"
    outside = sorted(name for name, cls in exceptions.items() if not issubclass(cls, CairnError))
    assert outside == sorted(CONTROL_FLOW)


def test_the_errors_docstring_names_every_class_of_the_tree() -> None:
    import cairn.errors

    doc = cairn.errors.__doc__ or ""
    for name, cls in _cairn_exceptions().items():
        if issubclass(cls, CairnError) and cls.__module__ != "cairn.errors":
            assert cls.__name__ in doc, f"{name} is not named in cairn/errors.py's docstring"
    for name in CONTROL_FLOW:
        assert name in doc


def test_the_branches_keep_the_builtin_bases_callers_catch() -> None:
    from cairn.daemon.client import DaemonRefusal, DaemonRequestError
    from cairn.prompts import PromptNotFoundError
    from cairn.search.errors import ItemNotFoundError
    from cairn.store.lock import StoreLockedError
    from cairn.transcripts.reader import TranscriptNotFound

    assert issubclass(Refusal, ValueError) and issubclass(Failure, RuntimeError)
    assert issubclass(ItemNotFoundError, Refusal)
    assert issubclass(StoreLockedError, Failure)
    assert issubclass(TranscriptNotFound, FileNotFoundError) and issubclass(TranscriptNotFound, Refusal)
    assert issubclass(PromptNotFoundError, LookupError)
    assert issubclass(DaemonRefusal, Refusal) and issubclass(DaemonRefusal, DaemonRequestError)
    both = [
        name
        for name, cls in _cairn_exceptions().items()
        if issubclass(cls, Refusal) and issubclass(cls, Failure)
    ]
    assert both == ["cairn.daemon.client.DaemonRefusal"]


def test_model_errors_stay_pydantic_ais() -> None:
    from pydantic_ai.exceptions import ModelAPIError, ModelRateLimitError

    from cairn.agent.claude_code_errors import ClaudeCodeError, ClaudeCodeRateLimited

    assert issubclass(ClaudeCodeError, ModelAPIError) and issubclass(ClaudeCodeError, Failure)
    assert issubclass(ClaudeCodeRateLimited, ModelRateLimitError)


def test_an_internal_error_line_is_one_line() -> None:
    line = internal_error_line("stats", ValueError("bad\nthing"), Path("/h/logs/daemon.log"))
    assert line == "internal error in stats: ValueError: bad thing; the trace is in /h/logs/daemon.log"
    assert internal_error_line("x", KeyError(), "log") == "internal error in x: KeyError; the trace is in log"


def _boom(monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.daemon import server

    async def boom(store: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setitem(server.OPS, "stats", boom)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def test_a_value_error_in_an_op_is_an_internal_error_with_its_trace_logged(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _boom(monkeypatch)
    proc = run_cairn("stats", "--json", check=False)
    log = cairn_home / "logs" / "cli.log"
    assert proc.returncode == 1
    assert _error_lines(proc.stderr) == [
        f"error: internal error in stats: ValueError: boom; the trace is in {log}"
    ]
    assert proc.stdout == ""
    text = log.read_text()
    assert "internal error in stats" in text
    assert "Traceback (most recent call last)" in text and 'raise ValueError("boom")' in text
    assert log.stat().st_mode & 0o777 == 0o600


def test_a_refusal_is_its_line_and_exit_2(cairn_home: Path) -> None:
    shown = run_cairn("show", "no-such-id", check=False)
    assert shown.returncode == 2
    assert _error_lines(shown.stderr) == [
        "error: 'no-such-id' is not an item id: use 123 or #123 for an idea, s12 for a topic span, m456 "
        "for a message, c78 for a file chunk"
    ]
    token = run_cairn("content", "--page-token", "garbage", check=False)
    assert token.returncode == 2
    assert _error_lines(token.stderr) == [
        "error: the continuation token is damaged or was not issued by cairn; repeat the search without it"
    ]
    assert not (cairn_home / "logs" / "cli.log").exists()


@pytest.mark.process
def test_the_daemon_answers_a_bug_in_an_op_with_the_internal_error_line(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A real daemon process whose `stats` op raises a `ValueError` (patched in at its start by a
    `sitecustomize` on its path): the client hears the internal-error line, the trace is in its log,
    and the daemon answers the next request."""
    import os

    from tests.daemon.helpers import offline_daemons

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "from cairn.daemon import server\n\n\n"
        "async def boom(store):\n"
        '    raise ValueError("boom")\n\n\n'
        'server.OPS["stats"] = boom\n'
    )
    python_path = os.environ.get("PYTHONPATH")
    with offline_daemons(cairn_home, monkeypatch) as daemons:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(shim), python_path) if p))
        daemons.start()
        # The commands below run in this process, unpatched: the daemon alone raises.
        if python_path is None:
            monkeypatch.delenv("PYTHONPATH")
        else:
            monkeypatch.setenv("PYTHONPATH", python_path)
        proc = run_cairn("stats", "--json", check=False)
        log = cairn_home / "logs" / "daemon.log"
        assert proc.returncode == 1
        assert _error_lines(proc.stderr) == [
            f"error: internal error in stats: ValueError: boom; the trace is in {log}"
        ]
        text = log.read_text()
        assert "stats failed" in text and 'raise ValueError("boom")' in text
        refused = run_cairn("show", "no-such-id", check=False)
        assert refused.returncode == 2 and len(_error_lines(refused.stderr)) == 1
        assert "daemon" not in refused.stderr
        listed = run_cairn("ideas", "--json", check=False)
        assert listed.returncode == 0 and json.loads(listed.stdout) == []
        assert not (cairn_home / "logs" / "cli.log").exists()
        assert re.search(r"ERROR cairn\.daemon\.server: stats failed", text)
