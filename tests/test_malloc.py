"""glibc malloc is tuned in cairn processes (arenas, fixed mmap and trim thresholds), unless the user set
a parameter: then glibc has the user's value and cairn leaves that one alone."""

from __future__ import annotations

import ctypes.util
import os
import sys

import pytest

from cairn.malloc import TUNING, tune_malloc

glibc = pytest.mark.skipif(
    sys.platform != "linux" or "libc.so" not in (ctypes.util.find_library("c") or ""), reason="glibc only"
)


@glibc
def test_glibc_takes_every_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    for item in TUNING:
        monkeypatch.delenv(item.variable, raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert tune_malloc() == ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]


@glibc
def test_the_users_own_settings_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576")
    assert tune_malloc() == ["MALLOC_MMAP_THRESHOLD_"]
    assert os.environ["MALLOC_ARENA_MAX"] == "8"


def test_nothing_is_set_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert tune_malloc() == []
