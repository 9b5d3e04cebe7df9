"""The recall hook as Claude Code runs it, for the tests of tests/daemon and tests/recall: hook payloads,
the installed recall command run through a shell, its injected context read back and checked, a daemon
serving a home, and a fake daemon on the socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cairn.config import Settings
from cairn.daemon.client import NoDaemon, daemon_request
from cairn.daemon.install import recall_command, write_launchers
from tests.daemon.helpers import Daemons, wait_for

DEMO_CWD = "/home/dev/acme-api"
ON_TOPIC = "the orders tests fail with database is locked again"
DEMO_SECRET = "sk-ant-api03-DEMO"
# Generous: these tests check what is injected, not how fast (see the module docstring).
PATIENT_MS = 20_000
HANG_S = 2.0
IDEA_LINE = re.compile(r"^#(\d+) [a-z_]+ \((\d{4}-\d{2}-\d{2}|undated)\) \S")


def warm(home: Path) -> None:
    """One recall straight over the socket, so the daemon loads its search machinery before the hooks."""
    settings = Settings.load(home)
    args = {"event": "UserPromptSubmit", "session_id": "warm-up", "cwd": DEMO_CWD, "prompt": "warm up"}

    def answered() -> bool:
        try:
            asyncio.run(daemon_request(settings, "recall", args, timeout=60))
        except NoDaemon:
            return False
        return True

    wait_for(answered, 60, "the daemon to answer a recall request")


@contextlib.contextmanager
def serving(home: Path, **env: str) -> Iterator[Path]:
    """A daemon for `home` with `env` added to its environment, killed when the block ends."""
    daemons = Daemons(home, env={"CAIRN_HOME": str(home), **env})
    try:
        daemons.start()
        warm(home)
        yield home
    finally:
        daemons.cleanup()


def payload(event: str, session: str, **fields: str) -> dict[str, Any]:
    """A hook input as Claude Code sends it (the common fields, then the event's own)."""
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-acme-api/{session}.jsonl",
        "cwd": DEMO_CWD,
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def session_start(session: str, source: str = "startup", **fields: str) -> dict[str, Any]:
    return payload("SessionStart", session, source=source, **fields)


def prompt(session: str, text: str, **fields: str) -> dict[str, Any]:
    return payload("UserPromptSubmit", session, prompt=text, **fields)


def new_session() -> str:
    return str(uuid.uuid4())


def run_hook(
    home: Path, data: bytes | dict[str, Any], *, deadline_ms: int | None = PATIENT_MS, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed recall command through a shell, as Claude Code does; it must exit 0, silently.

    `CAIRN_HOME` comes from the command itself (a non-default home is pinned there), not from the
    test's environment; `deadline_ms` None leaves the hook its own deadline.
    """
    raw = json.dumps(data).encode() if isinstance(data, dict) else data
    environ = {k: v for k, v in os.environ.items() if k != "CAIRN_HOME"}
    environ["CAIRN_HOOK_NO_SPAWN"] = "1"
    if deadline_ms is not None:
        environ["CAIRN_RECALL_DEADLINE_MS"] = str(deadline_ms)
    environ.update(env)
    settings = Settings.load(home)
    write_launchers(settings, sqlite3="")  # what `cairn install` writes; recall does not use sqlite3
    command = recall_command(settings)
    proc = subprocess.run(["/bin/sh", "-c", command], input=raw, capture_output=True, env=environ, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    return proc


def injected(proc: subprocess.CompletedProcess[bytes], event: str) -> str | None:
    """The injected context, checked against Claude Code's documented hook output; None for no output."""
    if proc.stdout == b"":
        return None
    text = proc.stdout.decode()
    assert text.endswith("\n") and text.count("\n") == 1, "one JSON object on one line"
    output = json.loads(text)
    assert isinstance(output, dict) and list(output) == ["hookSpecificOutput"]
    specific = output["hookSpecificOutput"]
    assert isinstance(specific, dict) and sorted(specific) == ["additionalContext", "hookEventName"]
    assert specific["hookEventName"] == event
    context = specific["additionalContext"]
    assert isinstance(context, str) and context.strip()
    assert context.startswith("<cairn-memory>\n") and context.endswith("\n</cairn-memory>")
    assert context.count("<cairn-memory>") == 1 and context.count("</cairn-memory>") == 1
    assert DEMO_SECRET not in context, "secrets said in a session are never injected"
    return context


def idea_ids(context: str) -> list[int]:
    return [int(m.group(1)) for line in context.splitlines() if (m := IDEA_LINE.match(line))]


@contextlib.contextmanager
def fake_daemon(home: Path, answer: Callable[[bytes], bytes | None]) -> Iterator[list[bytes]]:
    """A socket server at `home` that reads one request line per connection and sends `answer(line)`
    (None: never answers, until the block ends); yields the requests it received."""
    home.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(home / "cairn.sock"))
    server.listen(8)
    server.settimeout(0.1)
    requests: list[bytes] = []
    done = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                line = b""
                while not line.endswith(b"\n") and (chunk := conn.recv(65536)):
                    line += chunk
                requests.append(line)
                reply = answer(line)
                if reply is None:
                    held.append(conn)
                    continue
                conn.sendall(reply)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield requests
    finally:
        done.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
