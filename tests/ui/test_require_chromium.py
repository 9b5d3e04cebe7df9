"""The browser tests' guard: skipped with how to get them where Chromium is missing, failed under CI=true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui import helpers


def test_a_missing_browser_skips_saying_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(helpers, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium chromium-driver"):
        helpers.require_chromium()


def test_a_missing_browser_fails_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helpers, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and no browser"):
        helpers.require_chromium()
