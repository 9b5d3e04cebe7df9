"""The embedding model's thread count: every CPU this process may use for bulk work, a few when steady,
the user's `embedding_threads` over both; CPUs counted from the affinity mask and the cgroup quota."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cairn.config import Settings
from cairn.store import cpus
from cairn.store.cpus import available_cpus, cgroup_cpu_quota, embedding_threads
from cairn.store.embeddings import MiniLMInt8Embedding, make_embedding_function
from cairn.store.store import Store
from cairn.store.vectors import VectorIndex
from tests.helpers import inprocess


@pytest.mark.parametrize(("available", "bulk", "steady"), [(1, 1, 1), (2, 2, 1), (6, 6, 3), (16, 16, 4)])
def test_bulk_takes_every_cpu_and_steady_at_most_four_and_half(
    available: int, bulk: int, steady: int
) -> None:
    assert embedding_threads("bulk", cpus=available) == bulk
    assert embedding_threads("steady", cpus=available) == steady


def test_the_setting_overrides_both_modes() -> None:
    assert embedding_threads("bulk", 3, cpus=16) == 3
    assert embedding_threads("steady", 12, cpus=16) == 12


def test_a_bad_thread_count_or_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        embedding_threads("bulk", 0)
    with pytest.raises(ValueError, match="'bulk' or 'steady'"):
        embedding_threads("fast", cpus=4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=">= 1"):
        MiniLMInt8Embedding(threads=0)


def _affinity(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda _pid: set(range(count)), raising=False)


def _cgroup(tmp_path: Path, membership: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (tmp_path / "membership").write_text(membership)
    return root, tmp_path / "membership"


def test_the_affinity_mask_counts_when_no_quota_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _affinity(monkeypatch, 12)
    root, membership = _cgroup(tmp_path, "0::/user.slice\n", {"user.slice/cpu.max": "max 100000\n"})
    assert cgroup_cpu_quota(root, membership) is None
    assert available_cpus(root, membership) == 12
    assert available_cpus(tmp_path / "none", tmp_path / "no-such-file") == 12


def test_a_cgroup_v2_quota_lowers_the_count_and_a_parent_binds_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _affinity(monkeypatch, 16)
    root, membership = _cgroup(
        tmp_path,
        "0::/box/job\n",
        {"box/job/cpu.max": "600000 100000\n", "box/cpu.max": "250000 100000\n", "cpu.max": "max 100000"},
    )
    assert cgroup_cpu_quota(root, membership) == 2.5
    assert available_cpus(root, membership) == 2  # threads beyond a quota only queue for it
    assert embedding_threads("bulk", cpus=available_cpus(root, membership)) == 2


def test_a_cgroup_v1_quota_counts_and_a_fraction_of_a_cpu_still_gives_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _affinity(monkeypatch, 8)
    root, membership = _cgroup(
        tmp_path,
        "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n",
        {
            "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "50000\n",
            "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        },
    )
    assert cgroup_cpu_quota(root, membership) == 0.5
    assert available_cpus(root, membership) == 1


def test_a_namespaced_cgroup_path_reads_the_limit_it_can_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a container /proc/self/cgroup may name a path its /sys/fs/cgroup does not hold; the limit sits
    on the namespace's root."""
    _affinity(monkeypatch, 8)
    root, membership = _cgroup(
        tmp_path,
        "1:cpu:/kubepods/pod1/ctr\n",
        {"cpu/cpu.cfs_quota_us": "300000", "cpu/cpu.cfs_period_us": "100000"},
    )
    assert available_cpus(root, membership) == 3


def test_the_factory_builds_the_callers_mode_and_the_setting_wins(
    cairn_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cpus, "available_cpus", lambda: 16)
    settings = Settings.load(cairn_home)
    bulk, steady = make_embedding_function(settings, "bulk"), make_embedding_function(settings, "steady")
    assert isinstance(bulk, MiniLMInt8Embedding) and isinstance(steady, MiniLMInt8Embedding)
    assert (bulk.threads, steady.threads) == (16, 4)
    assert MiniLMInt8Embedding().threads == 4  # a function nobody chose a mode for stays steady
    monkeypatch.setenv("CAIRN_EMBEDDING_THREADS", "3")
    pinned = Settings.load(cairn_home)
    assert pinned.embedding_threads == 3
    for mode in ("bulk", "steady"):
        function = make_embedding_function(pinned, mode)
        assert isinstance(function, MiniLMInt8Embedding) and function.threads == 3


async def test_a_store_embeds_in_the_mode_it_was_opened_for(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cpus, "available_cpus", lambda: 6)
    for mode, threads in (("bulk", 6), ("steady", 3)):
        store = await Store.open(settings, embedding_mode=mode)  # type: ignore[arg-type]
        try:
            function = store.vectors.embedding_function
            assert isinstance(function, MiniLMInt8Embedding) and function.threads == threads
        finally:
            await store.close()


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_bad_setting_is_one_line(cairn_home: Path, value: str) -> None:
    env = {"CAIRN_HOME": str(cairn_home), "CAIRN_EMBEDDING_THREADS": value, "PATH": "/usr/bin:/bin"}
    proc = inprocess.run(["stats"], env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "embedding_threads" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "http" not in lines[0]


def test_a_block_embeds_in_another_mode_with_one_model_loaded_at_a_time(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's steady index runs a client's job in bulk mode: the function is swapped for the
    block and back, the replaced model unloaded each time, and the vectors are the same."""
    monkeypatch.setattr(cpus, "available_cpus", lambda: 3)
    index = VectorIndex(settings, mode="steady")
    steady = index.embedding_function
    assert isinstance(steady, MiniLMInt8Embedding) and steady.threads == 1
    before = index.embedding_function(["the flaky test was a race"])
    with index.embedding_mode("bulk"):
        bulk = index.embedding_function
        assert isinstance(bulk, MiniLMInt8Embedding) and bulk.threads == 3
        assert steady._loaded is None  # unloaded: one model in memory, not two
        inside = bulk(["the flaky test was a race"])
        with index.embedding_mode("bulk"):
            assert index.embedding_function is bulk  # already bulk: nothing to swap
    assert index.embedding_function is steady and bulk._loaded is None
    np.testing.assert_allclose(inside, before, atol=1e-6)
    monkeypatch.setenv("CAIRN_EMBEDDING_THREADS", "2")
    pinned = VectorIndex(Settings.load(settings.home), mode="steady")
    with pinned.embedding_mode("bulk"):
        assert pinned.embedding_function.threads == 2  # type: ignore[attr-defined]
