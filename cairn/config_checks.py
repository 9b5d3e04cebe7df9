"""The checks `Settings` runs on values a range alone cannot judge, each failing with what to do instead.

A setting is read when a command or the daemon starts, and a bad one used to surface far from its
cause: `idle_exit_seconds = inf` was accepted and killed the daemon later with an OverflowError, an empty
`chroma_url` or `embedding = "openai"` without a key ended a search or a sync in a traceback, a NUL in a
path in a ValueError from the OS, and `claude_projects_dir = ""` meant the current directory (a `sync`
from a shell in `/` scanned the whole disk). These checks run at load, so every command says it in one
line naming the setting (`cairn.cli.common.invalid_settings_line`). Nothing here imports cairn.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

CHROMA_EXAMPLE = "http://127.0.0.1:8000"


def no_nul(value: object) -> object:
    """`value`, unless it is text (or a list of texts) holding a NUL, which no path or name can hold."""
    texts = value if isinstance(value, list) else [value]
    if any(isinstance(text, str) and "\x00" in text for text in texts):
        raise ValueError("holds a NUL character (\\0), which no path or name can: remove it")
    return value


def projects_dir_text(value: object) -> object:
    """Refuse an empty `claude_projects_dir` before it becomes `Path("")`, which is the current directory."""
    if isinstance(value, str) and not value.strip():
        raise ValueError(
            "is empty, which would mean whatever directory cairn runs in: give the directory Claude Code "
            "writes transcripts to (default ~/.claude/projects), or remove the setting"
        )
    return value


def projects_dir(path: Path) -> Path:
    """`path`, if it is absolute once `~` is expanded: a relative one would be read from wherever the
    command (or the daemon) happens to run."""
    if not path.expanduser().is_absolute():
        raise ValueError(
            f"{str(path)!r} is a relative path, read from whatever directory cairn runs in: give an "
            "absolute one, or one starting with ~"
        )
    return path


def parse_chroma_url(url: str) -> tuple[str, int, bool]:
    """`(host, port, ssl)` of a Chroma server URL such as `http://127.0.0.1:8000`; ValueError if none."""
    if not url.strip():
        raise ValueError(
            f"chroma_url is empty: give a Chroma server URL such as {CHROMA_EXAMPLE}, or remove the setting "
            "to keep the vectors in CAIRN_HOME"
        )
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError(f"chroma_url must look like http://host:port, got {url!r}")
    if parts.path not in {"", "/"} or parts.query or parts.fragment:
        raise ValueError(f"chroma_url cannot carry a path or query, got {url!r}")
    ssl = parts.scheme == "https"
    try:
        port = parts.port if parts.port is not None else (443 if ssl else 8000)
    except ValueError:
        raise ValueError(f"chroma_url has no valid port (1 to 65535), got {url!r}") from None
    return parts.hostname, port, ssl


def embedding_key(embedding: str, url: str | None, key_env: str) -> None:
    """Refuse `embedding = "openai"` against OpenAI's own endpoint with no key in `$key_env`: every
    embedding would fail (a self-hosted endpoint, `url`, may need none)."""
    if embedding == "openai" and not url and not os.environ.get(key_env):
        raise ValueError(
            f"embedding = 'openai' needs an API key in ${key_env}: export it, set embedding_api_key_env to "
            "the variable that holds it, set embedding_url to a self-hosted endpoint, or remove embedding "
            "to use the packaged offline model"
        )
