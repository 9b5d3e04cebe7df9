"""glibc malloc arenas are capped in cairn processes, unless the user set MALLOC_ARENA_MAX."""

from __future__ import annotations

import ctypes.util
import os
import sys

import pytest

from cairn.malloc import limit_malloc_arenas

glibc = pytest.mark.skipif(
    sys.platform != "linux" or "libc.so" not in (ctypes.util.find_library("c") or ""), reason="glibc only"
)


@glibc
def test_glibc_takes_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas() is True


def test_the_users_own_setting_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert limit_malloc_arenas() is False
    assert os.environ["MALLOC_ARENA_MAX"] == "8"
