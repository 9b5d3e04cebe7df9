"""The recall hook: bring cairn's memory into a Claude Code session at its start and with each prompt.

Claude Code runs this on `SessionStart` (every source: startup, resume, clear, compact) and on
`UserPromptSubmit`, and waits for it before the session or the prompt goes on, so it is built to be
cheap and to never be the reason the user waits:

- It runs as `python -S -E .../recall.py` and imports only the standard library and its sibling, the
  capture hook `hook.py` (itself stdlib-only): the interpreter then starts in ~15 ms instead of the
  ~1 s cairn's own imports would cost.
- It does no searching itself. The daemon already holds the store, the index and the embedding
  model warm, so the hook forwards the payload as one `recall` request over `$CAIRN_HOME/cairn.sock`
  and relays the answer.
- Everything it does fits in one hard deadline measured from its start: `DEFAULT_DEADLINE_S`, or
  `WARMUP_DEADLINE_S` while a daemon that started moments ago has not yet reported its embedding
  model warm (`daemon.warm`): the first prompt after a start would otherwise always be dropped, since
  loading the model takes longer than the default. `$CAIRN_RECALL_DEADLINE_MS` replaces both. A daemon
  that is not running, refuses, or answers too late means "nothing to inject", never an error or a
  delay — and one drop more in the count `cairn status` shows (`recall_drops`).

What it prints is exactly Claude Code's documented hook output, and only when there is something
to add: `{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}`. In every other
case stdout stays empty, since anything else printed on `UserPromptSubmit` would end up in Claude's
context. It always exits 0. Unexpected failures (a malformed payload, a daemon that refuses or breaks
the protocol, a late answer) get one line in `$CAIRN_HOME/logs/hook.log`; no daemon at all is the
normal state of a machine where cairn idled out, so that is not logged.

On `SessionStart` with no daemon alive it starts one, detached and without waiting for it, the way
the capture hook does, so the prompts that follow are served (the capture hook only runs once the
first prompt is submitted, which is too late for the session's first recall).
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time

STARTED = time.monotonic()

# The capture hook's helpers (home, log, daemon start). Run as a script under `-S -E` the package may
# not be importable, but the script's own directory is `sys.path[0]`.
if __package__:
    from cairn.daemon import hook, recall_drops
else:
    import hook  # type: ignore[no-redef]
    import recall_drops  # type: ignore[no-redef]

EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})
# From this module's first line. The shell and interpreter start before it (~10 ms, several times that
# on a loaded machine) and the exit after it must fit too: a hook that waits out this deadline still
# ends well inside the 300 ms it may ever take (benchmarks/recall.py measures it).
DEFAULT_DEADLINE_S = 0.2
# While the daemon warms up: inside the 3 s Claude Code gives the hook (`install.RECALL_TIMEOUT_S`).
WARMUP_DEADLINE_S = 2.5
# A daemon that has not reported warm this long after its start never will (it predates the marker,
# or its warm-up hangs): it gets the default deadline, so it cannot hold every prompt up.
WARMUP_WINDOW_S = 120.0
# The daemon writes its pid here once its tokenizer and embedding model are loaded (`loop._warm_up`).
WARM_MARKER = "daemon.warm"


def _configured() -> float | None:
    """`$CAIRN_RECALL_DEADLINE_MS` in seconds (at most 60), or None when it is unset or not a number.

    That is for a user who would rather wait than miss the memory, and for tests that check what is
    injected on a loaded machine, not how fast (a late answer would make them flaky).
    """
    try:
        return min(60.0, max(0.0, float(os.environ["CAIRN_RECALL_DEADLINE_MS"]) / 1000))
    except (KeyError, ValueError):
        return None


CONFIGURED_S = _configured()
# Until `adapt` knows the daemon's state: reading the payload needs no more than the default.
DEADLINE_S = DEFAULT_DEADLINE_S if CONFIGURED_S is None else CONFIGURED_S


def _first_line(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.readline().strip()
    except (OSError, ValueError):
        return None


def warming(home: str, now: float | None = None) -> bool:
    """Whether the daemon started less than `WARMUP_WINDOW_S` ago and has not reported warm yet.

    The pidfile's lines are the daemon's pid and start time; `daemon.warm` names the pid of the daemon
    that finished warming up, so one left by an earlier daemon does not count for the next.
    """
    try:
        with open(os.path.join(home, "daemon.pid"), encoding="ascii") as fh:
            pid, started = fh.readline().strip(), float(fh.readline().strip() or 0)
    except (OSError, ValueError):
        return False
    if not pid or (time.time() if now is None else now) - started > WARMUP_WINDOW_S:
        return False
    return _first_line(os.path.join(home, WARM_MARKER)) != pid


def adapt(home: str) -> float:
    """Set and return the deadline for asking the daemon: the configured one if there is one, else
    the warm-up deadline while the daemon warms up, else the default."""
    global DEADLINE_S
    if CONFIGURED_S is not None:
        DEADLINE_S = CONFIGURED_S
    else:
        DEADLINE_S = WARMUP_DEADLINE_S if warming(home) else DEFAULT_DEADLINE_S
    return DEADLINE_S


def drop(home: str, event: str, reason: str) -> None:
    """Count one drop; a count that cannot be written is logged, never raised."""
    try:
        recall_drops.count_drop(home, event, reason, DEADLINE_S * 1000)
    except (OSError, ValueError) as exc:
        log(home, f"could not count a dropped {event} recall: {type(exc).__name__}: {exc}")


# Claude Code's payload is small, except for a pasted prompt; anything beyond this is not a payload.
MAX_STDIN_BYTES = 4 * 1024 * 1024
# The daemon embeds only a prompt's start, and its request line is limited to 1 MiB.
MAX_PROMPT_CHARS = 16_000
MAX_REPLY_BYTES = 1024 * 1024


class Late(Exception):
    """The deadline passed before the step finished."""


def log(home: str, message: str) -> None:
    """One line in the hook log, marked as the recall hook's."""
    hook.log(home, message, source="cairn-recall")


def remaining() -> float:
    """Seconds left before the deadline; raises `Late` once there are none."""
    left = DEADLINE_S - (time.monotonic() - STARTED)
    if left <= 0:
        raise Late
    return left


def read_stdin() -> bytes | None:
    """The payload, or None when it is too large; a writer that does not close stdin in time is `Late`."""
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size = 0
    while True:
        ready, _, _ = select.select([fd], [], [], remaining())
        if not ready:
            raise Late
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            return None
        chunks.append(chunk)


def _text(payload: dict[str, object], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def request_args(payload: object) -> dict[str, object] | None:
    """The `recall` op's arguments for a hook payload; None when the payload is not one recall answers."""
    if not isinstance(payload, dict):
        return None
    event = payload.get("hook_event_name")
    session_id = _text(payload, "session_id")
    if event not in EVENTS or not session_id:
        return None
    prompt = _text(payload, "prompt") if event == "UserPromptSubmit" else None
    if event == "UserPromptSubmit" and not (prompt and prompt.strip()):
        return None
    return {
        "event": event,
        "session_id": session_id,
        "cwd": _text(payload, "cwd"),
        "prompt": prompt[:MAX_PROMPT_CHARS] if prompt else None,
        "source": _text(payload, "source") if event == "SessionStart" else None,
        "transcript_path": _text(payload, "transcript_path"),
    }


def ask(home: str, args: dict[str, object]) -> bytes:
    """Send one `recall` request and return the reply line; `OSError` when no daemon listens."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(remaining())
        sock.connect(os.path.join(home, "cairn.sock"))
        sock.settimeout(remaining())
        sock.sendall(json.dumps({"op": "recall", "args": args}).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            sock.settimeout(remaining())
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
            if len(reply) > MAX_REPLY_BYTES:
                raise ValueError(f"reply longer than {MAX_REPLY_BYTES} bytes")
        return reply
    except TimeoutError as exc:
        raise Late from exc
    finally:
        sock.close()


def context_of(reply: bytes) -> str | None:
    """The context to inject from the daemon's reply line; ValueError when the reply is not a good one."""
    response = json.loads(reply)
    if not isinstance(response, dict) or "ok" not in response:
        raise ValueError("malformed reply")
    if response["ok"] is not True:
        raise ValueError(f"refused: {response.get('error', 'no reason given')}")
    result = response.get("result")
    if not isinstance(result, dict):
        raise ValueError("malformed result")
    text = result.get("additionalContext")
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError("additionalContext is not a string")
    return text if text.strip() else None


def run(home: str) -> str | None:
    """The hook output line for this process's payload, or None for "print nothing"."""
    try:
        raw = read_stdin()
    except Late:
        log(home, "the hook payload did not arrive in time; nothing injected")
        drop(home, "unknown", "late")
        return None
    if raw is None:
        log(home, f"hook payload over {MAX_STDIN_BYTES} bytes; nothing injected")
        return None
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        log(home, f"invalid hook payload ({len(raw)} bytes, not one JSON object); nothing injected")
        return None
    args = request_args(payload)
    if args is None:
        return None
    event = str(args["event"])
    adapt(home)
    try:
        reply = ask(home, args)
    except Late:
        log(home, f"the daemon did not answer {event} within {DEADLINE_S * 1000:.0f} ms; nothing injected")
        drop(home, event, "late")
        return None
    except (FileNotFoundError, ConnectionRefusedError):
        drop(home, event, "no_daemon")
        if event == "SessionStart":
            hook.spawn_daemon(home, source="cairn-recall")
        return None
    except (OSError, ValueError) as exc:
        log(home, f"could not ask the daemon for {event} recall: {type(exc).__name__}: {exc}")
        drop(home, event, "failed")
        return None
    try:
        text = context_of(reply)
    except ValueError as exc:
        log(home, f"bad {event} recall answer from the daemon ({exc}); nothing injected")
        drop(home, event, "failed")
        return None
    if text is None:
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


def main() -> int:
    """Entry point: print the hook output if there is any, exit 0 whatever happened."""
    os.umask(0o077)  # what it creates (recall records, logs) is the user's alone
    home = hook.cairn_home()
    try:
        line = run(home)
    except Exception as exc:
        log(home, f"recall hook failed: {type(exc).__name__}: {exc}")
        return 0
    if line is not None:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
