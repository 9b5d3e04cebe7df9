"""Which directories are no project: the system's own trees and the kernel's pseudo-filesystems.

A "project" is whatever directory a coding session ran in, and the file index treats every file the
agent touched inside it as project text. A session started in `/etc` therefore made `/etc/shadow`
and `/etc/passwd` "project files", one in `/proc` made `/proc/<pid>/status` one. Name lists cannot
keep up with what a system tree holds (`/var/backups/shadow.bak`, `/root/.bash_history`, the key
files under `/etc/ssl`), so such directories are refused whole, twice over:

* by path — the real (symlink-resolved) directory lies in a system tree (`/etc`, `/usr`, `/var`, ...),
  or *is* one of the broad directories whose subdirectories are people's work (`/`, `/home`, `/opt`,
  `/srv`, `/tmp`, ...);
* by file-system type — the directory (or a file being read) lives on a kernel pseudo-filesystem
  (`proc`, `sysfs`, `devtmpfs`, `cgroup`, ...), wherever it is mounted: a bind mount of `/proc` into a
  work tree is no more a project than `/proc` is. `tmpfs` is *not* refused: temporary directories and
  many containers' work trees live on it.

The file-system type comes from `/proc/self/mountinfo` (Linux), matched by the device number a
`stat` reports and, when no mount carries that number (btrfs subvolumes report their own), by the
longest mount point above the path. The table is cached for a few seconds: a drain asks once per
file, and mounts change rarely. Where there is no mountinfo (macOS), only the path rules apply.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

#: Trees whose every directory is the system's, never a developer's project (Linux and macOS).
SYSTEM_TREES: tuple[str, ...] = (
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/run",
    "/snap",
    "/var",
    "/lost+found",
    "/System",
    "/Library",
    "/private/etc",
    "/private/var/root",
    "/private/var/db",
)

#: Places inside `SYSTEM_TREES` where people do keep work (a web root, a root user's home checked below).
WORK_TREES: tuple[str, ...] = ("/var/www",)

#: Directories too broad to be one project, though their subdirectories may each be one.
BROAD_DIRECTORIES: frozenset[str] = frozenset(
    {"/", "/home", "/Users", "/opt", "/srv", "/mnt", "/media", "/tmp", "/var/tmp", "/var/www", "/private"}
)

#: Kernel pseudo-filesystems: their "files" are live system state, device nodes or control knobs.
PSEUDO_FILESYSTEMS: frozenset[str] = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "securityfs",
        "debugfs",
        "tracefs",
        "configfs",
        "pstore",
        "bpf",
        "efivarfs",
        "fusectl",
        "mqueue",
        "hugetlbfs",
        "binfmt_misc",
        "autofs",
        "rpc_pipefs",
        "nsfs",
        "selinuxfs",
        "smackfs",
        "apparmorfs",
        "devfs",  # macOS's /dev
    }
)

MOUNTINFO = Path("/proc/self/mountinfo")
#: Seconds a parsed mount table is trusted.
MOUNTS_TTL = 5.0


@dataclass(frozen=True)
class Mount:
    """One line of mountinfo: where a file system is mounted, its device number and its type."""

    point: str
    device: tuple[int, int]
    fstype: str


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts a `/proc/<pid>/mountinfo` text lists; lines that do not parse are skipped.

    Format (proc(5)): `id parent major:minor root mount-point options [optional...] - fstype source
    super-options`; the mount point escapes space, tab, newline and backslash as octal (`\\040`).
    """
    mounts: list[Mount] = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            separator = fields.index("-", 6)
            major, minor = fields[2].split(":")
            mounts.append(Mount(_unescape(fields[4]), (int(major), int(minor)), fields[separator + 1]))
        except (ValueError, IndexError):
            continue
    return mounts


_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), field) if "\\" in field else field


class MountTable:
    """The mount table, parsed at most once per `ttl` seconds, answering "which file system is this on"."""

    def __init__(self, source: Path = MOUNTINFO, ttl: float = MOUNTS_TTL) -> None:
        self._source = source
        self._ttl = ttl
        self._lock = threading.Lock()
        self._read_at = -float("inf")
        self._by_device: dict[tuple[int, int], str] = {}
        self._by_point: list[tuple[str, str]] = []  # longest mount point first

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._read_at < self._ttl:
            return
        try:
            mounts = parse_mountinfo(self._source.read_text(encoding="utf-8", errors="surrogateescape"))
        except OSError:
            mounts = []  # no mountinfo (not Linux, or /proc hidden): only the path rules apply
        by_device: dict[tuple[int, int], str] = {}
        for mount in mounts:
            # Later lines stack on earlier ones; a device mounted twice keeps its type either way.
            by_device[mount.device] = mount.fstype
        points = {mount.point: mount.fstype for mount in mounts}
        self._by_device = by_device
        self._by_point = sorted(points.items(), key=lambda item: len(item[0]), reverse=True)
        self._read_at = now

    def fstype(self, path: str, device: int | None = None) -> str | None:
        """The type of the file system `path` (a real, absolute path) is on; `device` is its `st_dev`
        when the caller has stat'ed it. None when no mount table is known."""
        with self._lock:
            self._refresh()
            if device is not None:
                found = self._by_device.get((os.major(device), os.minor(device)))
                if found is not None:
                    return found
            for point, fstype in self._by_point:
                if path == point or path.startswith(point.rstrip("/") + "/"):
                    return fstype
            return None


_TABLE = MountTable()


def pseudo_filesystem(path: str, device: int | None = None, table: MountTable | None = None) -> str | None:
    """The pseudo-filesystem type `path` lives on (`proc`, `sysfs`, ...), or None for ordinary storage."""
    fstype = (table or _TABLE).fstype(path, device)
    return fstype if fstype in PSEUDO_FILESYSTEMS else None


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree + "/")


#: Homes that sit in a system tree by design (root's); other homes that *are* a system tree
#: (`HOME=/etc`, `HOME=/var` for a service) exempt nothing.
_HOME_TREES = frozenset({"/root", "/private/var/root"})


def _own_home(home: str) -> bool:
    return home in _HOME_TREES or (home not in SYSTEM_TREES and home not in BROAD_DIRECTORIES)


def system_tree(real_dir: str, home: str | None = None) -> str | None:
    """The system tree or broad directory `real_dir` (resolved, absolute) is, or lies in; else None.

    A home directory inside a system tree (root's `/root`, a service account's under `/var/lib`) is
    its user's own: its subdirectories are projects like anyone's (the home itself is refused by
    `covers_home`).
    """
    if real_dir in BROAD_DIRECTORIES:
        return real_dir
    if home and _own_home(home) and _inside(real_dir, home):
        return None
    if any(_inside(real_dir, tree) for tree in WORK_TREES):
        return None
    for tree in SYSTEM_TREES:
        if _inside(real_dir, tree):
            return tree
    return None


def project_refusal(project_dir: str | os.PathLike[str], table: MountTable | None = None) -> str | None:
    """Why `project_dir` is no project (a system tree, a broad directory, a pseudo-filesystem), or None."""
    try:
        real = os.path.realpath(project_dir, strict=False)
        home = os.path.realpath(Path.home())
    except (OSError, RuntimeError, ValueError):
        return f"{project_dir} cannot be resolved"
    tree = system_tree(real, home)
    if tree is not None:
        if tree == real and tree in BROAD_DIRECTORIES:
            return f"{real} holds many projects or none: too broad to index"
        return f"{real} is in the system tree {tree}, not a project"
    try:
        device: int | None = os.stat(real).st_dev
    except OSError:
        device = None
    fstype = pseudo_filesystem(real, device, table)
    if fstype is not None:
        return f"{real} is on a {fstype} pseudo-filesystem, not a project"
    return None
