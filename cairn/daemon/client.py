"""Asking the running daemon over its Unix socket (see `cairn.daemon.server` for the protocol).

The CLI calls `daemon_request` first and opens the store itself only on `NoDaemon`: a daemon that
runs owns the store, and nobody else may open it (invariant 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from cairn.config import Settings
from cairn.daemon.process import running_pid

DEFAULT_TIMEOUT = 60.0
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class NoDaemon(Exception):
    """No daemon runs for this `CAIRN_HOME` (or it is not listening), so the caller works directly."""


class DaemonRequestError(RuntimeError):
    """The daemon was reached but the request failed: it refused it, timed out or broke the protocol."""


class DaemonRefusal(DaemonRequestError):
    """The daemon answered that the request itself is wrong (bad id, bad arguments); `reason` says why,
    worded as the same op run directly would word it."""

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"the cairn daemon refused {op!r}: {reason}")
        self.reason = reason


async def daemon_listening(settings: Settings) -> bool:
    """Whether something accepts connections on this home's daemon socket (it is connected to and
    left at once: no request is sent)."""
    try:
        _reader, writer = await asyncio.open_unix_connection(str(settings.socket_path))
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def daemon_request(
    settings: Settings,
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
    info = running_pid(settings)
    if info is None or not settings.socket_path.exists():
        raise NoDaemon(f"no cairn daemon is running for {settings.home}")
    try:
        reader, writer = await asyncio.open_unix_connection(
            str(settings.socket_path), limit=MAX_RESPONSE_BYTES
        )
    except OSError as exc:  # refused, gone, or a path the kernel cannot take
        raise NoDaemon(f"the cairn daemon (pid {info.pid}) is not accepting requests: {exc}") from exc
    try:
        request = json.dumps({"op": op, "args": args or {}}).encode() + b"\n"
        writer.write(request)
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
            raise DaemonRequestError(
                f"the cairn daemon (pid {info.pid}) did not answer {op!r} within {timeout or 0:.0f}s"
            ) from exc
        except (ConnectionError, ValueError) as exc:
            raise DaemonRequestError(
                f"lost the connection to the cairn daemon (pid {info.pid}): {exc}"
            ) from exc
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    return _result(op, line)


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
        raise DaemonRefusal(op, str(response.get("error") or "no reason given"))
    return response.get("result")
