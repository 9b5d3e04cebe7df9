"""Configuration mistakes through the real `cairn` command: one line, exit code 2, never a traceback.

Each test runs `python -m cairn` as a subprocess on a temporary CAIRN_HOME, as a user's shell would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import cairn

BROKEN_TOML = 'recall_enabled = false\nmodel = "offline\nsearch_min_score = 0.3\n'


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


def _write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    return path


@pytest.mark.process
@pytest.mark.parametrize(
    "command",
    [("stats", "--json"), ("search", "sqlite"), ("doctor",), ("config",), ("daemon", "start"), ("mcp",)],
)
def test_a_malformed_config_file_is_one_line_with_file_line_and_column(
    cairn_home: Path, command: tuple[str, ...]
) -> None:
    path = _write_config(cairn_home, BROKEN_TOML)
    proc = cairn(*command, check=False, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert f"{path.resolve()}:2:" in line and "invalid TOML" in line and "move the file aside" in line
    # Nothing else runs; `cairn config` lists the settings the file may hold (tested below).
    assert proc.stdout == "" or command == ("config",)


@pytest.mark.process
def test_the_daemon_the_hook_starts_logs_a_config_error(cairn_home: Path) -> None:
    _write_config(cairn_home, BROKEN_TOML)
    proc = cairn("daemon", "start", check=False, timeout=120)
    assert proc.returncode == 2
    log = (cairn_home / "logs" / "hook.log").read_text()
    assert "cairn-daemon:" in log and "invalid TOML" in log and len(log.splitlines()) == 1


def test_a_bad_value_names_the_setting_and_where_it_came_from(cairn_home: Path) -> None:
    path = _write_config(cairn_home, "search_min_score = 7\n")
    proc = cairn("stats", check=False, env={"CAIRN_EMBEDDING": "word2vec"}, timeout=120)
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert "embedding ($CAIRN_EMBEDDING)" in line and f"search_min_score ({path.resolve()})" in line


def test_unknown_keys_and_variables_are_warned_with_the_closest_setting(cairn_home: Path) -> None:
    _write_config(cairn_home, "recal_enabled = false\nsearch_min_score = 0.3\n")
    proc = cairn("config", "--json", env={"CAIRN_MODLE": "offline"}, timeout=120)
    data = json.loads(proc.stdout)  # warnings never reach --json stdout
    warnings = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(warnings) == 2, proc.stderr
    assert "unknown setting 'recal_enabled'" in warnings[0] and "'recall_enabled'" in warnings[0]
    assert "CAIRN_MODLE" in warnings[1] and "did you mean CAIRN_MODEL?" in warnings[1]
    # The misspelled key is ignored; the valid one next to it is applied.
    assert data["settings"]["recall_enabled"] == {"value": True, "source": "default"}
    assert data["settings"]["search_min_score"] == {"value": 0.3, "source": "file"}


def test_config_json_shows_each_source_and_the_effective_model(cairn_home: Path) -> None:
    _write_config(cairn_home, "search_min_score = 0.3\nbatch_window_seconds = 1.0\n")
    data = json.loads(cairn("config", "--json", env={"CAIRN_BATCH_WINDOW_SECONDS": "0.5"}).stdout)
    settings = data["settings"]
    assert settings["search_min_score"] == {"value": 0.3, "source": "file"}
    assert settings["batch_window_seconds"] == {"value": 0.5, "source": "environment"}  # env over file
    assert settings["passage_tokens"]["source"] == "default"
    assert settings["model"] == {"value": None, "source": "default"}
    assert data["effective_model"] == "offline" and "no ANTHROPIC_API_KEY" in data["effective_model_source"]
    assert data["db_path"] == str(cairn_home.resolve() / "cairn.db")

    with_model = json.loads(cairn("config", "--json", env={"CAIRN_MODEL": "ollama:qwen3"}).stdout)
    assert with_model["effective_model"] == "ollama:qwen3"
    assert with_model["effective_model_source"] == "environment"
    table = cairn("config").stdout
    assert '# not set: "offline" runs' in table and "file" in table and "environment" in table


@pytest.mark.parametrize(
    "command", [("doctor",), ("backfill", "--dry-run"), ("reindex", "--dry-run"), ("sync",)]
)
def test_an_unknown_model_is_rejected_before_any_key_is_asked_for(
    cairn_home: Path, command: tuple[str, ...]
) -> None:
    proc = cairn(*command, check=False, env={"CAIRN_MODEL": "gpt-nonsense"}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert line.startswith("error: unknown model 'gpt-nonsense'; known: offline")
    assert "API_KEY" not in line


def test_a_model_option_is_checked_too(cairn_home: Path) -> None:
    proc = cairn("backfill", "--dry-run", "--model", "no-such-provider:x", check=False, timeout=120)
    assert proc.returncode == 2
    assert "unknown model 'no-such-provider:x'" in _one_error_line(proc.stderr)


@pytest.mark.parametrize(
    "command",
    [
        ("search", "x", "--since", "last tuesday"),
        ("backfill", "--since", "last tuesday"),
        ("reindex", "--dry-run", "--since", "last tuesday"),
    ],
)
def test_every_since_option_takes_the_one_date_parser(cairn_home: Path, command: tuple[str, ...]) -> None:
    proc = cairn(*command, check=False, env={"CAIRN_MODEL": "offline"}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert "--since 'last tuesday' is not a date" in line and "3d" in line


def test_ages_work_for_backfill_and_reindex(cairn_home: Path) -> None:
    env = {"CAIRN_MODEL": "offline"}
    backfill = json.loads(cairn("backfill", "--dry-run", "--since", "3d", "--json", env=env).stdout)
    assert "sessions" in backfill
    reindex = cairn("reindex", "--dry-run", "--since", "yesterday", "--json", env=env)
    assert reindex.returncode == 0, reindex.stderr


@pytest.mark.parametrize("variable", ["CAIRN_LEARN_TOOLS", "CAIRN_SEARCH_BOOSTS"])
def test_a_list_or_mapping_variable_that_is_not_json_is_one_line(cairn_home: Path, variable: str) -> None:
    """Issue 30: `CAIRN_LEARN_TOOLS=notjson` was a pydantic-settings traceback."""
    proc = cairn("stats", env={variable: "notjson"}, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {variable} is not valid JSON (a list is written "
        '["a", "b"], a mapping {"k": 1}): fix or unset it'
    ]


def test_an_unknown_model_in_config_is_warned_by_a_command_that_does_not_need_it(cairn_home: Path) -> None:
    """Issue 44: with `model = "gpt5"` in config.toml, search and the listings answered with no word of it
    while indexing stopped. A command that succeeds warns once; one that needs the model refuses it, once."""
    _write_config(cairn_home, 'model = "gpt5"\n')

    listed = cairn("stats", "--json", timeout=120)
    json.loads(listed.stdout)  # the warning never reaches --json stdout
    [warning] = [line for line in listed.stderr.splitlines() if line.strip()]
    assert warning.startswith("warning: unknown model 'gpt5'") and "indexing waits" in warning

    refused = cairn("doctor", check=False, timeout=120)
    assert refused.returncode == 2
    assert _one_error_line(refused.stderr).startswith("error: unknown model 'gpt5'")


def test_cairn_config_lists_the_settings_a_broken_config_may_take(cairn_home: Path) -> None:
    """Every config error ends "`cairn config` lists them": with that file broken, `cairn config` still
    does — each setting with its default — after the same one-line error and exit 2."""
    _write_config(cairn_home, 'recall_prompt_lines = "three"\n')
    proc = cairn("config", check=False, env={"COLUMNS": "120"}, timeout=120)
    assert proc.returncode == 2
    assert "recall_prompt_lines" in _one_error_line(proc.stderr)
    listed = {line.split("│")[1].strip() for line in proc.stdout.splitlines() if line.startswith("│")}
    assert {"recall_prompt_lines", "search_min_score", "model"} <= listed
    as_json = cairn("config", "--json", check=False, timeout=120)
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["defaults"]["recall_prompt_lines"] == 3
