"""Values a type alone let through are refused at load, in one line.

`idle_exit_seconds = inf` was accepted and the daemon died later with an OverflowError; `chroma_url = ""`
and `embedding = "openai"` without a key ended in tracebacks; a NUL in `claude_projects_dir` too; and
`claude_projects_dir = ""` meant the current directory (a sync from a shell in `/` scanned the disk).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import ValidationError

from cairn.config import Settings
from tests.helpers.cli import cairn

#: (config.toml line, the setting the error names, words of what to do)
BAD = [
    ("idle_exit_seconds = inf", "idle_exit_seconds", "finite number"),
    ("idle_exit_seconds = nan", "idle_exit_seconds", "finite number"),
    ("idle_exit_seconds = 1e300", "idle_exit_seconds", "less than or equal to 31536000"),
    ("sqlite_busy_timeout_ms = 99999999999999999", "sqlite_busy_timeout_ms", "less than or equal to"),
    ("search_boosts = {decision = inf}", "search_boosts", "finite number"),
    ('chroma_url = ""', "chroma_url", "remove the setting"),
    ('chroma_url = "http://127.0.0.1:99999"', "chroma_url", "no valid port"),
    ('claude_projects_dir = ""', "claude_projects_dir", "is empty"),
    ('claude_projects_dir = "projects"', "claude_projects_dir", "relative path"),
    ('claude_projects_dir = "/tmp/a\\u0000b"', "claude_projects_dir", "NUL character"),
    ('embedding = "openai"', "embedding", "needs an API key in $OPENAI_API_KEY"),
]


@pytest.mark.parametrize(("line", "setting", "advice"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_setting_is_one_line_naming_it_and_what_to_do(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch, line: str, setting: str, advice: str
) -> None:
    monkeypatch.delenv("CAIRN_CLAUDE_PROJECTS_DIR")  # the file's value is the one under test
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cairn_home.mkdir(parents=True)
    config = cairn_home / "config.toml"
    config.write_text(line + "\n")
    proc = cairn("stats", "--json", check=False, timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [text for text in proc.stderr.splitlines() if text.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error: invalid cairn setting: ") and advice in lines[0], lines[0]
    assert f"{setting} ({config.resolve()})" in lines[0], lines[0]
    assert proc.stdout == ""


def test_openai_with_a_key_or_a_self_hosted_endpoint_is_accepted(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert Settings.load(cairn_home, embedding="openai", embedding_url="http://127.0.0.1:9/v1").embedding_url
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert Settings.load(cairn_home, embedding="openai").embedding == "openai"


def _bounds(name: str) -> list[Any]:
    return [
        m
        for m in Settings.model_fields[name].metadata
        if isinstance(m, (annotated_types.Le, annotated_types.Lt))
    ]


NUMBERS = [
    name
    for name, field in Settings.model_fields.items()
    if field.annotation in (int, float, int | None, float | None)
]


@pytest.mark.parametrize("name", NUMBERS)
def test_every_number_has_a_range_and_refuses_infinity(cairn_home: Path, name: str) -> None:
    assert _bounds(name), f"{name} has no upper bound"
    with pytest.raises(ValidationError, match=name):
        Settings.load(cairn_home, **{name: math.inf})
