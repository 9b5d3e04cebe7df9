"""The Claude Code hook in Python: the same contract as `hook.sh`, for machines without the sqlite3 CLI.

`cairn install` prefers `hook.sh` (a shell and one sqlite3 process start in a few milliseconds); this
module is the fallback it installs when no usable `sqlite3` is on PATH, run as
`python -S -E .../hook.py` so the interpreter skips site-packages and imports nothing but the standard
library — which is why nothing here imports cairn. `cairn hook` runs it too, for debugging.

The contract, shared with `hook.sh` and tested against both: read one JSON payload on stdin, queue
its `transcript_path` (and a SubagentStop's `agent_transcript_path`) as a pending `work_queue` row
unless one is already pending, for the five indexing events and `.jsonl` paths only; never create the
store; give up on a busy database after 200 ms; start the daemon, detached, when none is alive; print
nothing on stdout; always exit 0, writing one line to `$CAIRN_HOME/logs/hook.log` for every failure.
"""

from __future__ import annotations

import json
import os
import sys
import time

EVENTS = frozenset({"UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd"})
BUSY_TIMEOUT_S = 0.2
# hook.sh and this file start the daemon one starter at a time, through this marker directory.
STARTING_MARKER = "daemon.starting"
STARTING_STALE_SECONDS = 120  # longer than `cairn daemon start` waits (process.START_TIMEOUT)


def cairn_home() -> str:
    """`$CAIRN_HOME`, else `~/.cairn`, exactly as `hook.sh` resolves it."""
    return os.environ.get("CAIRN_HOME") or os.path.join(os.path.expanduser("~"), ".cairn")


#: The most of one message a hook.log line keeps (hook.sh keeps as many).
LOG_LINE_CHARS = 1000


def log(home: str, message: str, *, source: str = "cairn-hook") -> None:
    """Append one line to the hook log; a hook that cannot even log stays quiet rather than fail."""
    line = " ".join(message.split())
    if len(line) > LOG_LINE_CHARS:  # a hostile payload can make an error as long as itself
        line = f"{line[:LOG_LINE_CHARS]}… [{len(line) - LOG_LINE_CHARS} more characters not logged]"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        os.makedirs(os.path.join(home, "logs"), exist_ok=True)
        with open(os.path.join(home, "logs", "hook.log"), "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {source}: {line}\n")
    except OSError:
        pass


def rows_for(payload: object) -> list[tuple[str, str | None, str]]:
    """The `(path, session_id, event)` rows a payload asks for; empty when it is not for cairn."""
    if not isinstance(payload, dict):
        return []
    event = payload.get("hook_event_name")
    if event not in EVENTS:
        return []
    session = payload.get("session_id")
    session_id = session if isinstance(session, str) else None
    rows = []
    for key in ("transcript_path", "agent_transcript_path"):
        path = payload.get(key)
        if isinstance(path, str) and path.endswith(".jsonl"):
            rows.append((path, session_id, event))
    return rows


def _uri(path: str) -> str:
    """A read-write, never-create SQLite URI for `path` (only `%`, `?` and `#` need escaping)."""
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{escaped}?mode=rw"


def enqueue(db_path: str, rows: list[tuple[str, str | None, str]]) -> None:
    """Insert the rows as pending, collapsing into an already pending row of the same path; a row the
    daemon deferred because indexing is paused becomes due now, so the new lines get captured
    (`cairn.daemon.queue`)."""
    import sqlite3  # here, not at the top: the recall hook imports this module and never needs SQLite

    conn = sqlite3.connect(_uri(db_path), uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = NORMAL")  # no fsync per commit, as in hook.sh
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO work_queue (path, session_id, event) VALUES (?, ?, ?) "
            "ON CONFLICT (path) WHERE status = 'pending' DO UPDATE SET next_try_at = NULL "
            "WHERE work_queue.event = 'paused'",
            rows,
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def daemon_alive(home: str) -> bool:
    """Whether the pidfile's first line names a live process (the daemon re-checks the rest).

    A zombie is not alive: `kill -0` succeeds on a process that exited until its parent reaps it, and
    where nothing reaps (PID 1 of some containers) a daemon killed with SIGKILL stays a zombie for
    good, so a check by signal alone never started another one.
    """
    try:
        with open(os.path.join(home, "daemon.pid"), encoding="ascii") as fh:
            pid = int(fh.readline().strip())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether /proc says `pid` has exited and waits to be reaped (False where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[:1] == [b"Z"]


def spawn_daemon(home: str, *, source: str = "cairn-hook") -> None:
    """Start `cairn daemon start` in its own session with no stdio, unless one runs or spawning is off.

    Only for an existing store (a hook never creates one), and from `home` as working directory so a
    `cairn` directory in the user's project cannot shadow the package `-m cairn` loads.
    """
    if os.environ.get("CAIRN_HOOK_NO_SPAWN") == "1":
        return
    start_in_background(home, source=source)


def start_in_background(home: str, *, source: str) -> None:
    """Start `cairn daemon start` detached, unless a daemon is alive, another process is starting one,
    or there is no store yet; a failure to start is one line in the hook log under `source`."""
    if daemon_alive(home) or not os.path.isfile(os.path.join(home, "cairn.db")):
        return
    import subprocess

    python = os.environ.get("CAIRN_PYTHON") or sys.executable
    marker = os.path.join(home, STARTING_MARKER)
    if not _claim(marker):
        return  # another hook is starting the daemon right now (see hook.sh)
    try:
        subprocess.Popen(
            ["/bin/sh", "-c", '"$0" -m cairn daemon start; rmdir "$1"', python, marker],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd=home,
            env={**os.environ, "CAIRN_HOME": home},
        )
    except OSError as exc:
        os.rmdir(marker)
        log(home, f"could not start the daemon with {python}: {exc}", source=source)


def _claim(marker: str) -> bool:
    """Take the one-starter-at-a-time marker (a directory: mkdir is atomic); a marker older than
    `STARTING_STALE_SECONDS` was left by a killed starter and is taken over."""
    try:
        os.mkdir(marker)
        return True
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        if time.time() - os.stat(marker).st_mtime < STARTING_STALE_SECONDS:
            return False
        os.rmdir(marker)
        os.mkdir(marker)
    except OSError:
        return False
    return True


def run(raw: bytes) -> None:
    """Handle one payload; every failure is logged, none escapes."""
    import sqlite3

    home = cairn_home()
    db_path = os.path.join(home, "cairn.db")
    if not os.path.isfile(db_path):
        log(home, f"no cairn store at {db_path} (run 'cairn index' or 'cairn daemon start' once); not queued")
        return
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        log(home, f"invalid hook payload ({len(raw)} bytes, not one JSON object); nothing queued")
    else:
        rows = rows_for(payload)
        if rows:
            try:
                enqueue(db_path, rows)
            except sqlite3.Error as exc:
                log(home, f"could not queue {len(rows)} path(s) in {db_path}: {exc}")
    spawn_daemon(home)


def main() -> int:
    """Entry point: read stdin, handle it, exit 0 whatever happened."""
    os.umask(0o077)  # what it creates (queue, logs, the daemon it starts) is the user's alone
    try:
        raw = sys.stdin.buffer.read()
    except OSError:
        raw = b""
    try:
        run(raw)
    except Exception as exc:
        log(cairn_home(), f"hook failed: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
