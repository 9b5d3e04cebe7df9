"""`write_setting`: the setting `cairn install` writes into the user's config.toml, every other byte kept."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cairn.config import ConfigError, Settings, toml_value, write_setting


def test_a_new_file_gets_the_line_private(tmp_path: Path) -> None:
    path = tmp_path / "home" / "config.toml"
    assert write_setting(path, "model", "claude-code") is True
    assert path.read_text() == 'model = "claude-code"\n' and path.stat().st_mode & 0o777 == 0o600
    assert Settings.load(tmp_path / "home").model == "claude-code"
    assert write_setting(path, "model", "claude-code") is False


def test_an_existing_line_is_replaced_and_tables_stay_tables(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '# mine\nmodel="offline"  # for now\nrecall_enabled = false\n[prices.x]\ninput = 1\noutput = 2'
    )
    assert write_setting(path, "model", 'claude-code:claude-"q"')
    assert path.read_text() == (
        '# mine\nmodel = "claude-code:claude-\\"q\\""\nrecall_enabled = false\n'
        "[prices.x]\ninput = 1\noutput = 2"
    )
    assert tomllib.loads(path.read_text())["model"] == 'claude-code:claude-"q"'


def test_a_file_without_a_final_newline_or_tables_gets_the_line_at_its_end(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("daily_token_budget = 0")
    write_setting(path, "model", "offline")
    assert path.read_text() == 'daily_token_budget = 0\nmodel = "offline"\n'


def test_what_cannot_be_edited_alone_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    spread = 'model = """\nclaude-code"""\n'  # a value over two lines: replacing one line breaks it
    path.write_text(spread)
    with pytest.raises(ConfigError, match='add `model = "offline"` by hand'):
        write_setting(path, "model", "offline")
    assert path.read_text() == spread


def test_a_linked_config_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "cairn.toml"
    target.parent.mkdir()
    target.write_text("recall_prompt_lines = 2\n")
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    write_setting(link, "model", "claude-code")
    assert link.is_symlink() and target.read_text() == 'recall_prompt_lines = 2\nmodel = "claude-code"\n'


def test_values_are_written_as_toml_reads_them_back() -> None:
    values = {
        "flag": False,
        "name": 'say "hi"\n',
        "ratio": 0.75,
        "count": 3,
        "tools": ["Read", "Grep"],
        "none": [],
        "boosts": {"decision": 0.75, "tool_result:Bash": 1.0},
    }
    line = "\n".join(f"{key} = {toml_value(value)}" for key, value in values.items())
    assert tomllib.loads(line) == values
    assert toml_value(True) == "true" and toml_value({}) == "{}"
    assert (
        toml_value({"decision": 0.75, "tool_result:Bash": 1.0})
        == '{ decision = 0.75, "tool_result:Bash" = 1.0 }'
    )
