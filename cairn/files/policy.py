"""What the file index may read: project files only, text only, size-capped, never secrets or ignored files.

A path in a transcript is only a hint: the agent may have read `~/.ssh/id_rsa`, a `.env` with live
keys, a symlink that points out of the repository, a build artefact or a 40 MB minified bundle. The
index stores file text in SQLite and sends it to Chroma, so each of those must be refused *before* a
byte is read, and the refusal must be a reason people can count (`cairn files`), never an exception
that stops the other files of a drain. Every check here answers with a `Refusal` carrying a stable
reason code instead of raising.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from cairn.files.paths import ProjectPath, resolve_in_project
from cairn.files.system import project_refusal, pseudo_filesystem
from cairn.transcripts.redact import LABEL

RefusalReason = Literal[
    "outside_project",
    "not_a_project",
    "missing",
    "not_a_file",
    "secret",
    "too_large",
    "ignored",
    "git_unavailable",
    "binary",
]

#: Bytes looked at for a NUL, the classic "this is binary" sign (git and grep use the same test).
BINARY_SNIFF_BYTES = 8192

#: Seconds one `git check-ignore` may take; a hung git must not hang the drain.
GIT_TIMEOUT = 20.0

# Names (lower-cased) that hold credentials by convention. Deliberately broad: a missed secret ends
# up embedded and searchable, a refused ordinary file only costs one search result.
_SECRET_NAMES = (
    ".env",
    ".env*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.env",
    "*.tfstate",
    "*.tfstate.*",
    "credentials*",
    "*secret*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".git-credentials",
    "kubeconfig*",
    ".pgpass",
    ".my.cnf",
    # System credential stores: a copy in a backup or a container image's tree is as secret as the
    # original (the originals are in refused system trees anyway, see `cairn.files.system`).
    "shadow",
    "shadow-",
    "shadow.bak",
    "gshadow",
    "gshadow-",
    "gshadow.bak",
    "opasswd",
    "master.passwd",
    "spwd.db",
    "sudoers",
    "sudoers.bak",
    "sudoers.dist",
    "*.keytab",
    "htpasswd",
    "ssh_host_*key",
)
#: Directories whose every file is a credential store or config that holds tokens.
_SECRET_DIRS = frozenset(
    {".git", ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", "secrets", "sudoers.d"}
)


@dataclass(frozen=True)
class Refusal:
    """Why a file is not indexed: a reason code for counting, and a detail for people.

    `relative` is the file's path in the project when it got that far, so a document indexed before
    the file turned secret, ignored or missing can be found and dropped.
    """

    reason: RefusalReason
    detail: str
    relative: str | None = None


@dataclass(frozen=True)
class Admitted:
    """A file the index may store: where it is, its exact bytes (for the hash) and its text."""

    path: ProjectPath
    data: bytes
    text: str


def is_secret(path: str) -> bool:
    """Whether a (relative or absolute, POSIX or native) path looks like it holds credentials."""
    parts = [part.lower() for part in PurePosixPath(path.replace(os.sep, "/")).parts]
    if not parts:
        return False
    if any(part in _SECRET_DIRS for part in parts[:-1]):
        return True
    return _secret_name(parts[-1])


def _secret_name(name: str) -> bool:
    name = name.lower()
    return name in _SECRET_DIRS or any(fnmatch.fnmatchcase(name, pattern) for pattern in _SECRET_NAMES)


def covers_home(project_dir: str | os.PathLike[str]) -> bool:
    """Whether a session's directory is the home directory, or `/` or another directory above it.

    A session started in `~` makes `~` its "project", and everything in it — `~/.kube/config`,
    `~/.docker/config.json`, a dozen other credential stores no name list keeps up with — would be
    inside it. Such a directory is no project, and nothing in it is indexed.
    """
    try:
        home = Path.home().resolve()
        root = Path(project_dir).resolve()
    except (OSError, RuntimeError):
        return True
    return root == home or root in home.parents


def redacted_dir(project_dir: str | os.PathLike[str]) -> str | None:
    """Why a project's directory cannot be read at all, or None: its stored path held a secret and holds
    the redaction marker in its place (`cairn.store.projects`), so it names no directory on disk.

    Checked before the path is resolved: `[REDACTED:github_token]` is a legal directory name, and one
    made on purpose must not receive another project's file requests."""
    text = os.fspath(project_dir)
    if LABEL.search(text) is None:
        return None
    return f"{text} held a secret and is stored redacted: cairn cannot find it on disk"


def not_a_project(project_dir: str | os.PathLike[str]) -> str | None:
    """Why a session's directory is no project whose files may be read, or None when it is one.

    The home directory and everything above it (`covers_home`), system trees such as `/etc` or `/proc`
    and kernel pseudo-filesystems (`cairn.files.system.project_refusal`).
    """
    if covers_home(project_dir):
        return f"{project_dir} is the home directory or above it: too broad to index"
    return project_refusal(project_dir)


def admit(
    project_dir: str | os.PathLike[str],
    path: str,
    *,
    max_bytes: int,
    gitignore: GitIgnore | None = None,
    cwd: str | None = None,
) -> Admitted | Refusal:
    """Every check in order, cheapest first; the file is opened only once all the others pass.

    Raises only OSError, for a file that exists but cannot be read (permissions, I/O): that is a
    failure, not a policy decision — the drain records it as `failed`, and the next touch of the file
    tries again.
    """
    hidden = redacted_dir(project_dir)
    if hidden is not None:
        return Refusal("secret", hidden)
    refused = not_a_project(project_dir)
    if refused is not None:
        return Refusal("not_a_project", refused)
    located = resolve_in_project(project_dir, path, cwd=cwd)
    if located is None:
        return Refusal("outside_project", f"{path} is not inside {project_dir}")
    rel = located.relative
    try:
        info = located.absolute.stat()
    except (FileNotFoundError, NotADirectoryError):
        return Refusal("missing", f"{rel} does not exist", rel)
    if not stat.S_ISREG(info.st_mode):
        # FIFOs and devices would block or never end; directories have no text.
        return Refusal("not_a_file", f"{rel} is not a regular file", rel)
    # Both the name the agent used and the real one: a symlink `notes.txt` -> `.env` is as secret as `.env`.
    if is_secret(rel) or _secret_name(os.path.basename(path)):
        return Refusal("secret", f"{rel} looks like it holds credentials", rel)
    if info.st_size > max_bytes:
        return Refusal("too_large", f"{rel} is {info.st_size} bytes (limit {max_bytes})", rel)
    ignored = (gitignore or GitIgnore(project_dir)).check(rel)
    if ignored is not None:
        return Refusal(ignored.reason, ignored.detail, rel)
    opened = _read_beneath(Path(project_dir).resolve(), rel, max_bytes)
    if isinstance(opened, str):
        return Refusal("not_a_file", f"{rel} {opened}", rel)
    data = opened
    if len(data) > max_bytes:  # it grew since the stat
        return Refusal("too_large", f"{rel} is over {max_bytes} bytes", rel)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return Refusal("binary", f"{rel} is binary (NUL byte)", rel)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Refusal("binary", f"{rel} is not UTF-8 text ({exc.reason} at byte {exc.start})", rel)
    return Admitted(path=located, data=data, text=text)


#: How a file is opened for reading: never through a symlink (a swap after the checks above), never
#: blocking (a swap for a FIFO would hang the drain), never adopting a terminal as controlling tty.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_DIR_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def _read_beneath(root: Path, relative: str, max_bytes: int) -> bytes | str:
    """Up to `max_bytes + 1` bytes of `root/relative`, or why the file is not what was checked.

    Every check above looked at a path; between those checks and the read, any component of it can
    be swapped (a directory for a symlink out of the project, the file for a FIFO, a device or a
    symlink to `/etc/shadow`). So the path is walked again one component at a time from the project
    root, each opened relative to its parent without following symlinks, and the opened file itself
    is `fstat`ed: whatever it is *now* is what gets read, or refused. A component that vanished
    raises FileNotFoundError like any missing file would.
    """
    parts = PurePosixPath(relative).parts
    descriptor = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=descriptor)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    return "changed into a path through a symlink while being read"
                raise
            os.close(descriptor)
            descriptor = child
        try:
            handle = os.open(parts[-1], _OPEN_FLAGS, dir_fd=descriptor)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.ENOTDIR):
                return "was replaced by a symlink or special file while being read"
            raise
    finally:
        os.close(descriptor)
    with os.fdopen(handle, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "was replaced by something that is not a regular file while being read"
        fstype = pseudo_filesystem(os.path.join(root, relative), info.st_dev)
        if fstype is not None:
            return f"is on a {fstype} pseudo-filesystem"
        os.set_blocking(stream.fileno(), True)
        return stream.read(max_bytes + 1)


class GitIgnore:
    """Asks git which project paths it ignores, remembering answers so a drain asks once per batch.

    A project that is not a git work tree ignores nothing. A project that is one (a `.git` in it or a
    parent) but whose git cannot be run refuses everything with `git_unavailable`: without git the
    ignore rules cannot be evaluated, and guessing wrong would index build output or vendored secrets.
    A path git refuses to judge (one inside a submodule, say) is refused the same way, alone.
    """

    def __init__(self, project_dir: str | os.PathLike[str], *, git: str = "git") -> None:
        self.project_dir = Path(project_dir)
        self._git = git
        self._known: dict[str, bool | str] = {}  # True/False: ignored or not; str: why git could not say

    def check(self, relative: str) -> Refusal | None:
        """None when git does not ignore `relative` (a path relative to the project), else the refusal."""
        if relative not in self._known:
            self.prime([relative])
        answer = self._known[relative]
        if isinstance(answer, str):
            return Refusal("git_unavailable", answer)
        return Refusal("ignored", f"{relative} is ignored by git") if answer else None

    def prime(self, relatives: Iterable[str]) -> None:
        """Ask git about every path not asked yet, in one `check-ignore --stdin` call."""
        wanted = [rel for rel in dict.fromkeys(relatives) if rel not in self._known]
        if not wanted:
            return
        answer = self._ask(wanted)
        if isinstance(answer, set):
            self._known.update((rel, rel in answer) for rel in wanted)
        elif len(wanted) > 1 and not answer.startswith("git could not be run"):
            for rel in wanted:  # one path git will not judge must not condemn the batch
                self.prime([rel])
        else:
            failure: bool | str = answer if _inside_git_tree(self.project_dir) else False
            self._known.update((rel, failure) for rel in wanted)

    def _ask(self, relatives: list[str]) -> set[str] | str:
        """The ignored subset of `relatives`, or why git could not tell."""
        try:
            completed = subprocess.run(
                [self._git, "-C", str(self.project_dir), "check-ignore", "-z", "--stdin"],
                input=b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel in relatives),
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"git could not be run: {exc}"
        if completed.returncode in (0, 1):  # 0: some are ignored; 1: none are
            return {part.decode("utf-8", "surrogateescape") for part in completed.stdout.split(b"\0") if part}
        message = completed.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in message.lower():
            return set()
        return f"git check-ignore failed ({completed.returncode}): {message[:200]}"


def _inside_git_tree(directory: Path) -> bool:
    try:
        real = directory.resolve()
    except (OSError, RuntimeError):
        return True  # cannot tell: be safe
    return any((candidate / ".git").exists() for candidate in (real, *real.parents))
