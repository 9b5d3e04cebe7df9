"""Asking the running daemon over its Unix socket (see `cairn.daemon.server` for the protocol).

The CLI calls `daemon_request` first and opens the store itself only on `NoDaemon`: a daemon that
runs owns the store, and nobody else may open it (invariant 2).

`ask_daemon` is the same request without an event loop, for a command that asks one question and
prints the answer (`cairn search`): importing asyncio alone costs such a command a noticeable part of
its time, so this module imports it only in the functions that need it.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cairn.daemon.process import PidInfo, running_pid
from cairn.errors import Failure, Refusal

if TYPE_CHECKING:  # a client finds the daemon from `CAIRN_HOME` alone (`cairn.home`): no pydantic here
    from cairn.config import Settings
    from cairn.home import DaemonAddress

DEFAULT_TIMEOUT = 60.0
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class NoDaemon(Failure):
    """No daemon runs for this `CAIRN_HOME` (or it is not listening), so the caller works directly."""


class DaemonRequestError(Failure):
    """The daemon was reached but the request failed: it refused it, timed out or broke the protocol."""


class DaemonRefusal(DaemonRequestError, Refusal):
    """The daemon answered that the request itself is wrong (bad id, bad arguments); `reason` says why,
    worded as the same op run directly would word it."""

    def __init__(self, op: str, reason: str) -> None:
        if reason.startswith(f"unknown op {op!r}"):
            # The daemon outlives an upgrade: one an older cairn started lacks this cairn's newer ops,
            # and the bare refusal would read like a bug here.
            reason += (
                " — the running daemon is older than this cairn: `cairn daemon stop`, and the next "
                "command or Claude Code hook starts the new one"
            )
        super().__init__(f"the cairn daemon refused {op!r}: {reason}")
        self.reason = reason


class DaemonFailure(DaemonRequestError):
    """The daemon took the request but could not answer it: its environment failed (a full disk, the
    model's configuration) or the op hit a bug, whose trace the daemon logged; `reason` is the line
    the same op run directly would print."""

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"the cairn daemon could not answer {op!r}: {reason}")
        self.reason = reason


async def daemon_listening(settings: Settings | DaemonAddress) -> bool:
    """Whether something accepts connections on this home's daemon socket (it is connected to and
    left at once: no request is sent)."""
    import asyncio

    try:
        _reader, writer = await asyncio.open_unix_connection(str(settings.socket_path))
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def daemon_request(
    settings: Settings | DaemonAddress,
    op: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """Send one request to the daemon and return its result.

    Progress lines the daemon sends before the result (long ops) go to `on_progress`; `timeout`
    bounds the wait for each line, None waits as long as the op takes.

    Raises `NoDaemon` when no live daemon owns this `CAIRN_HOME` or its socket refuses connections
    (it is starting up or shutting down), and `DaemonRequestError` for everything that goes wrong
    after the request is sent.
    """
    import asyncio

    info = _running(settings)
    try:
        reader, writer = await asyncio.open_unix_connection(
            str(settings.socket_path), limit=MAX_RESPONSE_BYTES
        )
    except OSError as exc:  # refused, gone, or a path the kernel cannot take
        raise _not_accepting(info.pid, exc) from exc
    try:
        writer.write(_request(op, args))
        try:
            await asyncio.wait_for(writer.drain(), timeout)
            while True:
                line = await asyncio.wait_for(reader.readline(), timeout)
                progress = _progress(line)
                if progress is None:
                    break
                if on_progress is not None:
                    on_progress(progress)
        except TimeoutError as exc:
            raise _late(info.pid, op, timeout) from exc
        except (ConnectionError, ValueError) as exc:
            raise _lost(info.pid, exc) from exc
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    return _result(op, line)


def ask_daemon(
    settings: Settings | DaemonAddress,
    op: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Any:
    """`daemon_request` for an op that sends no progress, with a blocking socket: no event loop, so
    no asyncio to import. Raises as `daemon_request` does; `timeout` bounds each wait on the socket."""
    return send_request(settings, op, args, timeout=timeout).answer()


def send_request(
    settings: Settings | DaemonAddress,
    op: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> PendingAnswer:
    """Send one request over a blocking socket and return at once: the daemon works on it while this
    process does something else, and `PendingAnswer.answer` reads what it said. Raises `NoDaemon` as
    `daemon_request` does."""
    info = _running(settings)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(settings.socket_path))
    except OSError as exc:
        sock.close()
        raise _not_accepting(info.pid, exc) from exc
    try:
        sock.sendall(_request(op, args))
    except (TimeoutError, ConnectionError) as exc:
        return PendingAnswer(sock, op, info.pid, timeout, failure=exc)
    return PendingAnswer(sock, op, info.pid, timeout)


class PendingAnswer:
    """A request sent to the daemon (`send_request`) whose answer has not been read yet."""

    def __init__(
        self,
        sock: socket.socket,
        op: str,
        pid: int,
        timeout: float | None,
        *,
        failure: TimeoutError | ConnectionError | None = None,
    ) -> None:
        self._sock = sock
        self._op = op
        self._pid = pid
        self._timeout = timeout
        #: Why sending failed, raised by `answer` as reading the answer would have.
        self._failure = failure

    def answer(self) -> Any:
        """The daemon's result (after any progress lines); raises as `daemon_request` does. Closes the
        connection: an answer is read once."""
        with self._sock:
            try:
                if self._failure is not None:
                    raise self._failure
                with self._sock.makefile("rb") as replies:
                    line = replies.readline(MAX_RESPONSE_BYTES)
                    while _progress(line) is not None:
                        line = replies.readline(MAX_RESPONSE_BYTES)
            except TimeoutError as exc:
                raise _late(self._pid, self._op, self._timeout) from exc
            except (ConnectionError, ValueError) as exc:
                raise _lost(self._pid, exc) from exc
        return _result(self._op, line)

    def close(self) -> None:
        """Hang up without reading the answer (it is not wanted after all)."""
        self._sock.close()


def _running(settings: Settings | DaemonAddress) -> PidInfo:
    """The live daemon of this home, or `NoDaemon`."""
    info = running_pid(settings)
    if info is None or not settings.socket_path.exists():
        raise NoDaemon(f"no cairn daemon is running for {settings.home}")
    return info


def _request(op: str, args: dict[str, Any] | None) -> bytes:
    return json.dumps({"op": op, "args": args or {}}).encode() + b"\n"


def _not_accepting(pid: int, exc: OSError) -> NoDaemon:
    return NoDaemon(f"the cairn daemon (pid {pid}) is not accepting requests: {exc}")


def _late(pid: int, op: str, timeout: float | None) -> DaemonRequestError:
    return DaemonRequestError(
        f"the cairn daemon (pid {pid}) did not answer {op!r} within {timeout or 0:.0f}s"
    )


def _lost(pid: int, exc: Exception) -> DaemonRequestError:
    return DaemonRequestError(f"lost the connection to the cairn daemon (pid {pid}): {exc}")


def _progress(line: bytes) -> dict[str, Any] | None:
    """The event of a progress line, None for any other line (the result, or garbage `_result` reports)."""
    if not line.startswith(b'{"progress"'):
        return None
    try:
        event = json.loads(line).get("progress")
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _result(op: str, line: bytes) -> Any:
    if not line:
        raise DaemonRequestError(f"the cairn daemon closed the connection without answering {op!r}")
    try:
        response = json.loads(line)
    except ValueError as exc:
        raise DaemonRequestError(f"the cairn daemon sent a malformed response to {op!r}: {exc}") from exc
    if not isinstance(response, dict) or "ok" not in response:
        raise DaemonRequestError(f"the cairn daemon sent a malformed response to {op!r}")
    if not response["ok"]:
        reason = str(response.get("error") or "no reason given")
        # No `kind` is a refusal: a daemon that does not mark its failures means that by every "no".
        if response.get("kind") == "failure":
            raise DaemonFailure(op, reason)
        raise DaemonRefusal(op, reason)
    return response.get("result")
