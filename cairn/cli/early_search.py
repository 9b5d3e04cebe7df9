"""`cairn search WORDS` sent to the running daemon before the command line has loaded.

Through the daemon, a search's time is the command line loading (typer and rich: most of `cairn
--version`, the floor in `benchmarks/cli_search.py`) followed by the daemon's search (a tenth of a
second). Neither needs the other: `start`, called by the `cairn` entry point before it imports the
command line, sends the search when the command is the plain form `cairn search WORDS [--json]` and
a daemon listens; the daemon searches while this process loads typer and parses the same command,
and the command's own request then takes that answer (`take`) instead of asking again.

The early request is built by `search_args`, the function the command builds its own with, and is
taken only when the two are equal, so the answer is the one the command would have got. Anything
else — options, a `config.toml` changed since the daemon started (the command reports it), no
daemon — sends nothing early and the command runs as it always does.

When the answer is a page of results (or any page, with `--json`), `print_answer` prints it with
the command's own renderer (`cairn.cli.results`) and typer never loads: through the daemon a search
then costs Python, rich and the daemon's search, not the whole command line (`benchmarks/
cli_search.py`). Anything else it was told — no match, whose advice asks the store more, a refusal,
a lost daemon — it keeps for the command, which takes it and says so as it always does. This module
imports nothing beyond the daemon's address and its socket client until then: it runs first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.daemon.client import PendingAnswer


@dataclass
class _Sent:
    """The search `start` sent: its op and arguments, whether `--json` was asked for, and its answer."""

    op: str
    args: dict[str, Any]
    as_json: bool
    answer: PendingAnswer | _Read


@dataclass
class _Read:
    """An answer `print_answer` read and left for the command: returned, or raised, as the daemon's
    answer would have been when read there."""

    value: Any = None
    error: Exception | None = None

    def answer(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value

    def close(self) -> None:
        """Nothing to hang up: the connection was closed when the answer was read."""


#: The search sent by `start`, until the command takes it or `print_answer` prints it.
_sent: _Sent | None = None


def search_args(
    query: str,
    *,
    mode: str = "hybrid",
    kind: str = "all",
    project: str | None = None,
    session: str | None = None,
    intents: list[str] | None = None,
    origins: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    include_superseded: bool = False,
    min_score: float | None = None,
    limit: int = 10,
    continuation: str | None = None,
) -> dict[str, Any]:
    """The `search` op's arguments for `cairn search`; the defaults are the command's own. A search
    from the command line counts its results as used (`record_usage`)."""
    return {
        "query": query,
        "mode": mode,
        "kind": kind,
        "project": project,
        "session": session,
        "intents": list(intents or ()),
        "origins": list(origins or ()),
        "since": since,
        "until": until,
        "include_superseded": include_superseded,
        "min_score": min_score,
        "limit": limit,
        "continuation": continuation,
        "record_usage": True,
    }


def plain_query(argv: list[str]) -> str | None:
    """The query of `cairn search QUERY` with no option but `--json` (in any place), else None."""
    if not argv or argv[0] != "search":
        return None
    words = [word for word in argv[1:] if word != "--json"]
    if len(words) != 1 or words[0].startswith("-") or not words[0].strip():
        return None
    return words[0]


def start(argv: list[str]) -> None:
    """Send the search `argv` (the command line's words after `cairn`) asks for, when it is the plain
    form and a daemon listens that read the current `config.toml`; otherwise do nothing."""
    global _sent
    query = plain_query(argv)
    if query is None:
        return
    from cairn.daemon.client import NoDaemon, send_request
    from cairn.home import DaemonAddress

    address = DaemonAddress.here()
    if address.config_changed_since_start():
        return
    args = search_args(query)
    try:
        _sent = _Sent("search", args, "--json" in argv, send_request(address, "search", args))
    except (NoDaemon, OSError, ValueError):
        # Only a head start: whatever keeps it from being sent (no daemon, an unreadable pidfile, a
        # socket that fails) the command meets again on its own path, which says so properly.
        return


def print_answer() -> bool:
    """Print the early search's answer as the command would, when it is a page with results (any page
    with `--json`); True when printed, so the command need not run. Otherwise the answer, or the
    failure met reading it, stays for the command to `take`."""
    global _sent
    sent = _sent
    if sent is None or isinstance(sent.answer, _Read):
        return False
    # Loaded while the daemon searches (a tenth of a second each), not after its answer is read.
    from cairn.cli.consoles import print_json
    from cairn.cli.results import render_found, render_notes

    try:
        page = sent.answer.answer()
    except Exception as exc:  # the command's `ask` says it in one line, as any daemon failure
        sent.answer = _Read(error=exc)
        return False
    if not sent.as_json and not (isinstance(page, dict) and page.get("results")):
        sent.answer = _Read(value=page)
        return False
    _sent = None
    if sent.as_json:
        print_json(page)
    else:
        render_found(page)
        render_notes(page)
    return True


def take(op: str, args: dict[str, Any] | None) -> PendingAnswer | _Read | None:
    """The early request's answer-to-be if it was exactly `op` with `args`, else None. Taken once. An
    early request that differs is hung up on; the daemon has searched by then and counted its results
    as used, which only a command that changes its own plain request before asking could cause."""
    global _sent
    sent, _sent = _sent, None
    if sent is None:
        return None
    if (sent.op, sent.args) != (op, args):
        sent.answer.close()
        return None
    return sent.answer
