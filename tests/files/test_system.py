"""System trees, pseudo-filesystems, credential names and files swapped between check and read.

The attack of issue 14: a session whose cwd is `/etc` (or `/proc`) made `/etc/shadow`, `/etc/passwd`
and `/proc/cpuinfo` "project files", and the index chunked them. These tests run that session
through capture and the drain, then each defence on its own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cairn.config import Settings
from cairn.files.policy import Admitted, GitIgnore, Refusal, admit, is_secret, not_a_project
from cairn.files.system import MountTable, parse_mountinfo, project_refusal, pseudo_filesystem, system_tree
from cairn.ingest import sync_file
from cairn.store.store import Store
from tests.helpers.builders import Transcript

LIMIT = 10_000
HAS_MOUNTINFO = Path("/proc/self/mountinfo").exists()


def _reason(result: Admitted | Refusal) -> str:
    return result.reason if isinstance(result, Refusal) else "admitted"


@pytest.mark.skipif(not HAS_MOUNTINFO, reason="needs Linux's /etc and /proc")
async def test_a_session_in_etc_or_proc_stores_no_system_file(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    etc = Transcript("/etc")
    etc.user("what users are there?")
    for target in ("/etc/shadow", "/etc/passwd", "/etc/hostname", "shadow"):
        etc.tool("Read", {"file_path": target}, "     1→root:x:0:0:root:/root:/bin/bash")
    proc = Transcript("/proc")
    proc.user("how many cores?")
    for target in ("/proc/cpuinfo", f"/proc/{os.getpid()}/status", "self/status"):
        proc.tool("Read", {"file_path": target}, "     1→processor : 0")

    for name, transcript in (("etc", etc), ("proc", proc)):
        report = await sync_file(store, transcript.write(tmp_path / f"{name}.jsonl"), settings)
        assert report.error is None and report.files_indexed == 0

    assert await store.db.scalar("SELECT count(*) FROM file_documents") == 0
    assert await store.db.scalar("SELECT count(*) FROM file_chunks") == 0
    rows = await store.db.fetchall("SELECT path, status, outcome FROM file_requests ORDER BY path")
    assert rows, "the Read calls were seen, and each was refused"
    assert {(row["status"], row["outcome"]) for row in rows} == {("skipped", "not_a_project")}


@pytest.mark.parametrize(
    "directory",
    ["/", "/etc", "/etc/ssl", "/proc", "/proc/1", "/sys/class", "/dev", "/boot", "/var", "/var/lib/pg",
     "/var/log", "/usr", "/usr/local/src", "/bin", "/sbin", "/lib", "/lib64", "/run/user/1000", "/snap/core",
     "/home", "/opt", "/srv", "/tmp", "/mnt", "/var/www"],
)  # fmt: skip
def test_system_trees_and_broad_directories_are_no_projects(directory: str) -> None:
    assert system_tree(directory, home="/home/dev") is not None


@pytest.mark.parametrize(
    "directory",
    ["/home/dev/code/app", "/opt/service", "/srv/site", "/tmp/scratch", "/var/www/shop", "/mnt/data/repo",
     "/work/main"],
)  # fmt: skip
def test_work_directories_are_projects(directory: str) -> None:
    assert system_tree(directory, home="/home/dev") is None


def test_roots_own_home_holds_projects_but_no_one_elses_does() -> None:
    assert system_tree("/root/app", home="/root") is None
    assert system_tree("/root/app", home="/home/dev") == "/root"
    # A home that *is* a system tree exempts nothing under it.
    assert system_tree("/etc/ssl", home="/etc") == "/etc"
    assert system_tree("/var/lib/x", home="/var") == "/var"


def test_a_symlink_into_a_system_tree_is_resolved_first(tmp_path: Path) -> None:
    (tmp_path / "innocent").symlink_to("/etc", target_is_directory=True)
    refusal = project_refusal(tmp_path / "innocent")
    assert refusal is not None and "/etc" in refusal


def test_mountinfo_lines_parse_with_escapes_and_optional_fields() -> None:
    text = (
        "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
        "36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime master:1 shared:7 - ext3 /dev/root rw\n"
        "garbage line\n"
    )
    mounts = parse_mountinfo(text)
    assert [(m.point, m.device, m.fstype) for m in mounts] == [
        ("/proc", (0, 21), "proc"),
        ("/mnt/my disk", (98, 0), "ext3"),
    ]


def _table(tmp_path: Path, text: str) -> MountTable:
    source = tmp_path / "mountinfo"
    source.write_text(text)
    return MountTable(source)


def test_a_pseudo_filesystem_is_no_project_wherever_it_is_mounted(tmp_path: Path) -> None:
    project = tmp_path / "work" / "bound"
    project.mkdir(parents=True)
    # A bind mount of /proc into a work tree, as the mount table would list it (matched by path).
    table = _table(tmp_path, f"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:99 / {project} rw - proc proc rw\n")
    refusal = project_refusal(project, table)
    assert refusal is not None and "proc pseudo-filesystem" in refusal
    assert project_refusal(tmp_path / "work", table) is None


def test_the_device_number_decides_before_the_mount_point(tmp_path: Path) -> None:
    device = os.stat(tmp_path).st_dev
    major, minor = os.major(device), os.minor(device)
    # The directory's own device is listed as sysfs (mounted somewhere else entirely): still refused.
    table = _table(tmp_path, f"1 0 {major}:{minor} / /elsewhere rw - sysfs sysfs rw\n")
    assert pseudo_filesystem(str(tmp_path), device, table) == "sysfs"
    # tmpfs is ordinary storage: temporary directories and containers' work trees live on it.
    table = _table(tmp_path, f"1 0 {major}:{minor} / / rw - tmpfs tmpfs rw\n")
    assert pseudo_filesystem(str(tmp_path), device, table) is None
    assert project_refusal(tmp_path, table) is None


@pytest.mark.skipif(not HAS_MOUNTINFO, reason="needs /proc/self/mountinfo")
def test_the_real_proc_and_sys_are_pseudo_filesystems() -> None:
    assert pseudo_filesystem("/proc/self", os.stat("/proc/self").st_dev) == "proc"
    assert pseudo_filesystem("/sys", os.stat("/sys").st_dev) == "sysfs"


def test_a_missing_mount_table_leaves_the_path_rules(tmp_path: Path) -> None:
    table = MountTable(tmp_path / "no-such-mountinfo")
    assert project_refusal(tmp_path, table) is None
    assert project_refusal("/etc", table) is not None


def test_not_a_project_covers_home_and_system_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "app").mkdir(parents=True)
    assert not_a_project(tmp_path / "home") is not None
    assert not_a_project("/etc") is not None
    assert not_a_project(tmp_path / "home" / "app") is None


@pytest.mark.parametrize(
    "name",
    ["shadow", "shadow-", "gshadow", "shadow.bak", "sudoers", "sudoers.d/90-cloud-init", "krb5.keytab",
     "http.KEYTAB", "master.passwd", "spwd.db", "opasswd", ".pgpass", ".my.cnf", "ssh_host_ed25519_key",
     "backup/etc/shadow"],
)  # fmt: skip
def test_system_credential_files_are_secrets(name: str) -> None:
    assert is_secret(name)


def test_code_named_after_credentials_is_not_a_secret() -> None:
    for name in ("src/shadow.py", "shadow_dom.ts", "docs/sudoers.md", "passwd.go", "keytab_parser.rs"):
        assert not is_secret(name), name


# The window between the checks and the read: `GitIgnore.check` is the last step before the open, so a
# gitignore that swaps the file when asked is an attacker who wins every race.


class _SwapOnCheck(GitIgnore):
    def __init__(self, project: Path, swap: object) -> None:
        super().__init__(project)
        self._swap = swap

    def check(self, relative: str) -> Refusal | None:
        self._swap()  # type: ignore[operator]
        return None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "app.py").write_text("ROOT_PASSWORD = 'stolen'\n")
    return root


def test_a_file_swapped_for_a_fifo_after_the_checks_is_refused_without_blocking(project: Path) -> None:
    target = project / "src" / "app.py"

    def swap() -> None:
        target.unlink()
        os.mkfifo(target)

    result = admit(project, "src/app.py", max_bytes=LIMIT, gitignore=_SwapOnCheck(project, swap))
    assert isinstance(result, Refusal) and result.reason == "not_a_file"
    assert "not a regular file" in result.detail


def test_a_file_swapped_for_a_symlink_after_the_checks_is_refused(project: Path) -> None:
    target = project / "src" / "app.py"

    def swap() -> None:
        target.unlink()
        target.symlink_to(project.parent / "outside" / "app.py")

    result = admit(project, "src/app.py", max_bytes=LIMIT, gitignore=_SwapOnCheck(project, swap))
    assert isinstance(result, Refusal) and result.reason == "not_a_file"
    assert "symlink" in result.detail


def test_a_directory_swapped_for_a_symlink_after_the_checks_is_refused(project: Path) -> None:
    def swap() -> None:
        (project / "src").rename(project / "src-old")
        (project / "src").symlink_to(project.parent / "outside", target_is_directory=True)

    result = admit(project, "src/app.py", max_bytes=LIMIT, gitignore=_SwapOnCheck(project, swap))
    assert isinstance(result, Refusal) and result.reason == "not_a_file"
    assert "symlink" in result.detail


def test_a_file_deleted_after_the_checks_is_a_failure_to_read(project: Path) -> None:
    def swap() -> None:
        (project / "src" / "app.py").unlink()

    with pytest.raises(FileNotFoundError):
        admit(project, "src/app.py", max_bytes=LIMIT, gitignore=_SwapOnCheck(project, swap))


def test_an_untouched_file_reads_as_before(project: Path) -> None:
    result = admit(project, "src/app.py", max_bytes=LIMIT, gitignore=_SwapOnCheck(project, lambda: None))
    assert isinstance(result, Admitted) and result.text == "def main():\n    return 1\n"
