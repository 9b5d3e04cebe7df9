#!/bin/sh
# cairn's Claude Code hook (UserPromptSubmit, Stop, SubagentStop, PreCompact, SessionEnd).
#
# Claude Code waits for this script on every prompt and answer, so it does the least it can: one
# sqlite3 process puts the transcript path into `work_queue`, and the daemon does the rest. A shell
# script over the sqlite3 CLI starts in a few milliseconds; even a bare Python interpreter costs more.
#
# Safety: the payload never becomes shell words or SQL text. sqlite3 reads stdin itself into a temp
# table (`.import --ascii`: one field, no quoting rules, since JSON never holds the ASCII 0x1E/0x1F
# separators), and SQL's json functions pick the fields out; paths with quotes, `$(...)`, backticks
# or `;` are stored verbatim and never evaluated. `-init /dev/null` keeps a user's ~/.sqliterc out.
#
# It always exits 0 and prints nothing on stdout (for UserPromptSubmit, stdout would be added to
# Claude's context). Failures go to $CAIRN_HOME/logs/hook.log, one line each.
#
# Environment (set by `cairn install` in the hook command): CAIRN_HOME (default ~/.cairn),
# CAIRN_PYTHON (the interpreter cairn is installed in, to start the daemon), CAIRN_SQLITE3 (default
# `sqlite3` on PATH), CAIRN_HOOK_NO_SPAWN=1 to never start the daemon.
#
# `synchronous = NORMAL` (as the store itself uses): no fsync per commit. A notification lost to a
# power cut costs nothing — the next hook, or a backfill, queues the file again.

# Everything this creates (the store on a first run, logs, the daemon it starts) is the user's alone.
umask 077

home=${CAIRN_HOME:-${HOME:-}/.cairn}
db=$home/cairn.db

# One line each, at most 1000 bytes of the message: a hostile payload can make an error as long as itself.
log() {
    mkdir -p "$home/logs" 2>/dev/null &&
        printf '%s cairn-hook: %.1000s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1" >>"$home/logs/hook.log" 2>/dev/null
}

spawn_daemon() {
    [ "${CAIRN_HOOK_NO_SPAWN:-}" = 1 ] && return 0
    pid=
    [ -r "$home/daemon.pid" ] && read -r pid _rest <"$home/daemon.pid" 2>/dev/null
    case $pid in
    '' | *[!0-9]*) ;;
    *)
        # Alive, unless it is a zombie: `kill -0` succeeds on an exited process nobody reaped (where
        # PID 1 never reaps, for good). /proc's state field, read with builtins only, says so.
        if kill -0 "$pid" 2>/dev/null; then
            stat=
            [ -r "/proc/$pid/stat" ] && read -r stat <"/proc/$pid/stat" 2>/dev/null
            stat=${stat##*) }
            [ "${stat%% *}" = Z ] || return 0
        fi
        ;;
    esac
    if [ -z "${CAIRN_PYTHON:-}" ]; then
        log "no daemon is running and CAIRN_PYTHON is unset, so none was started; run 'cairn install' again"
        return 0
    fi
    # One starter at a time: a burst of hooks (Claude Code fires several per turn) must not start a
    # herd of interpreters that starve the new daemon until every starter gives up on it. The marker
    # is a directory (mkdir is atomic), removed when the start returns; one left behind by a killed
    # starter is ignored after two minutes (a start gives up after one).
    marker=$home/daemon.starting
    if ! mkdir "$marker" 2>/dev/null; then
        [ -n "$(find "$marker" -maxdepth 0 -mmin -2 2>/dev/null)" ] && return 0
        rmdir "$marker" 2>/dev/null
        mkdir "$marker" 2>/dev/null || return 0
    fi
    # Detached: a new session, no inherited stdio, so Claude Code never waits on the daemon. The
    # interpreter and the marker reach the inner shell as arguments, never as code.
    start='"$0" -m cairn daemon start; rmdir "$1"'
    if command -v setsid >/dev/null 2>&1; then
        CAIRN_HOME=$home setsid -f /bin/sh -c "$start" "$CAIRN_PYTHON" "$marker" </dev/null >/dev/null 2>&1 ||
            log "could not start the daemon with $CAIRN_PYTHON"
    else
        CAIRN_HOME=$home nohup /bin/sh -c "$start" "$CAIRN_PYTHON" "$marker" </dev/null >/dev/null 2>&1 &
    fi
}

if [ ! -f "$db" ]; then
    cat >/dev/null 2>&1
    log "no cairn store at $db (run 'cairn index' or 'cairn daemon start' once); transcript not queued"
    exit 0
fi

out=$(
    "${CAIRN_SQLITE3:-sqlite3}" -init /dev/null -batch -bail "$db" \
        ".timeout 200" \
        "PRAGMA synchronous = NORMAL" \
        "CREATE TEMP TABLE p(j TEXT)" \
        ".import --ascii /dev/stdin p" \
        "CREATE TEMP TABLE h AS SELECT j FROM temp.p
           WHERE (SELECT count(*) FROM temp.p) = 1 AND json_valid(j) AND json_type(j) = 'object'" \
        "SELECT 'invalid hook payload (' || coalesce((SELECT sum(length(CAST(j AS BLOB))) FROM temp.p), 0)
                || ' bytes, not one JSON object); nothing queued'
           WHERE NOT EXISTS (SELECT 1 FROM temp.h)" \
        "CREATE TEMP TABLE e AS
           SELECT json_extract(j, '\$.transcript_path') AS path,
                  CASE json_type(j, '\$.session_id') WHEN 'text' THEN json_extract(j, '\$.session_id') END
                    AS session_id,
                  json_extract(j, '\$.hook_event_name') AS event
             FROM temp.h WHERE json_type(j, '\$.transcript_path') = 'text'
           UNION ALL
           SELECT json_extract(j, '\$.agent_transcript_path'),
                  CASE json_type(j, '\$.session_id') WHEN 'text' THEN json_extract(j, '\$.session_id') END,
                  json_extract(j, '\$.hook_event_name')
             FROM temp.h WHERE json_type(j, '\$.agent_transcript_path') = 'text'" \
        "INSERT INTO main.work_queue (path, session_id, event)
           SELECT path, session_id, event FROM temp.e
            WHERE event IN ('UserPromptSubmit', 'Stop', 'SubagentStop', 'PreCompact', 'SessionEnd')
              AND substr(path, -6) = '.jsonl'
           ON CONFLICT (path) WHERE status = 'pending'
             DO UPDATE SET next_try_at = NULL WHERE work_queue.event = 'paused'" \
        2>&1
)
rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    log "$(printf '%s' "sqlite3 exit $rc: $out" | tr '\n' ' ')"
fi

spawn_daemon
exit 0
