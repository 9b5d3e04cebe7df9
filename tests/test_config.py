"""Settings: CAIRN_* variables over $CAIRN_HOME/config.toml over defaults; every path under CAIRN_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from cairn.config import Settings


def test_every_state_path_lives_under_home(cairn_home: Path) -> None:
    settings = Settings.load()
    assert settings.home == cairn_home.resolve()
    for path in (
        settings.db_path,
        settings.chroma_dir,
        settings.logs_dir,
        settings.lock_path,
        settings.pid_path,
        settings.socket_path,
        settings.config_path,
    ):
        assert path.is_relative_to(settings.home)


def test_two_homes_are_isolated(tmp_path: Path) -> None:
    a, b = Settings.load(tmp_path / "a"), Settings.load(tmp_path / "b")
    assert a.db_path != b.db_path and a.chroma_dir != b.chroma_dir and a.lock_path != b.lock_path


def test_config_toml_is_read_and_env_wins(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cairn_home.mkdir(parents=True)
    (cairn_home / "config.toml").write_text('tool_result_head_chars = 42\nembedding = "openai"\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # openai without a key is refused at load
    settings = Settings.load()
    assert settings.tool_result_head_chars == 42
    assert settings.embedding == "openai"
    monkeypatch.setenv("CAIRN_TOOL_RESULT_HEAD_CHARS", "7")
    assert Settings.load().tool_result_head_chars == 7


def test_invalid_value_is_a_clear_error(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_EMBEDDING", "word2vec")
    with pytest.raises(ValidationError, match="embedding"):
        Settings.load()


def test_home_defaults_to_dot_cairn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CAIRN_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Settings.load().home == (tmp_path / ".cairn").resolve()
