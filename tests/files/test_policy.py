"""The index policy: each refusal with its reason, on real files, symlinks and a real git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cairn.files.policy import Admitted, GitIgnore, Refusal, admit, is_secret

LIMIT = 10_000

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n", encoding="utf-8")
    return root


def _reason(result: Admitted | Refusal) -> str:
    return result.reason if isinstance(result, Refusal) else "admitted"


def test_a_plain_project_file_is_admitted_with_its_bytes_and_text(project: Path) -> None:
    result = admit(project, str(project / "src" / "app.py"), max_bytes=LIMIT)
    assert isinstance(result, Admitted)
    assert result.path.relative == "src/app.py"
    assert result.data == b"def main():\n    return 1\n"
    assert result.text == "def main():\n    return 1\n"


def test_relative_paths_resolve_against_cwd_then_the_project(project: Path) -> None:
    assert _reason(admit(project, "src/app.py", max_bytes=LIMIT)) == "admitted"
    assert _reason(admit(project, "app.py", max_bytes=LIMIT, cwd=str(project / "src"))) == "admitted"


def test_paths_outside_the_project_are_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    assert _reason(admit(project, str(outside), max_bytes=LIMIT)) == "outside_project"
    assert _reason(admit(project, "src/../../elsewhere.py", max_bytes=LIMIT)) == "outside_project"
    assert _reason(admit(project, str(project), max_bytes=LIMIT)) == "outside_project"


def test_a_symlink_escaping_the_project_is_refused(project: Path, tmp_path: Path) -> None:
    secret_place = tmp_path / "private"
    secret_place.mkdir()
    (secret_place / "notes.txt").write_text("private notes\n")
    (project / "src" / "link.txt").symlink_to(secret_place / "notes.txt")
    (project / "linked_dir").symlink_to(secret_place, target_is_directory=True)
    assert _reason(admit(project, "src/link.txt", max_bytes=LIMIT)) == "outside_project"
    assert _reason(admit(project, "linked_dir/notes.txt", max_bytes=LIMIT)) == "outside_project"


def test_a_symlink_inside_the_project_is_indexed_under_its_real_path(project: Path) -> None:
    (project / "alias.py").symlink_to(project / "src" / "app.py")
    result = admit(project, "alias.py", max_bytes=LIMIT)
    assert isinstance(result, Admitted) and result.path.relative == "src/app.py"


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        ".ENV.production",
        "server.pem",
        "tls.key",
        "id_rsa",
        "id_ed25519.pub",
        "store.p12",
        "keys.jks",
        "vault.kdbx",
        "credentials.json",
        "client_secret.json",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".htpasswd",
        "prod.env",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        ".git-credentials",
        "kubeconfig.yaml",
    ],
)
def test_secret_looking_files_are_refused(project: Path, name: str) -> None:
    (project / name).write_text("TOKEN=abc\n")
    result = admit(project, name, max_bytes=LIMIT)
    assert isinstance(result, Refusal)
    assert (result.reason, result.relative) == ("secret", name)


def test_files_under_secret_directories_are_refused(project: Path) -> None:
    for directory in (".ssh", ".aws", ".gnupg", ".git", ".kube", ".docker", ".azure", "secrets"):
        (project / directory).mkdir()
        (project / directory / "config").write_text("[default]\n")
        assert _reason(admit(project, f"{directory}/config", max_bytes=LIMIT)) == "secret", directory


def test_a_symlink_named_innocently_but_pointing_at_a_secret_is_refused(project: Path) -> None:
    (project / ".env").write_text("API_KEY=abc\n")
    (project / "settings.txt").symlink_to(project / ".env")
    assert _reason(admit(project, "settings.txt", max_bytes=LIMIT)) == "secret"


def test_is_secret_leaves_ordinary_names_alone() -> None:
    for name in ("src/app.py", "docs/environment.md", "keyboard.ts", "src/tokens.py", "Makefile"):
        assert not is_secret(name), name


def test_missing_files_and_directories(project: Path) -> None:
    assert _reason(admit(project, "src/gone.py", max_bytes=LIMIT)) == "missing"
    assert _reason(admit(project, "src/app.py/inner", max_bytes=LIMIT)) == "missing"
    assert _reason(admit(project, "src", max_bytes=LIMIT)) == "not_a_file"


def test_a_fifo_is_not_opened(project: Path) -> None:
    os.mkfifo(project / "pipe")
    assert _reason(admit(project, "pipe", max_bytes=LIMIT)) == "not_a_file"


def test_too_large_files_are_refused_before_reading(project: Path) -> None:
    (project / "big.txt").write_text("a" * (LIMIT + 1))
    (project / "edge.txt").write_text("a" * LIMIT)
    assert _reason(admit(project, "big.txt", max_bytes=LIMIT)) == "too_large"
    assert _reason(admit(project, "edge.txt", max_bytes=LIMIT)) == "admitted"


def test_binary_files_are_refused(project: Path) -> None:
    (project / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (project / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert _reason(admit(project, "image.png", max_bytes=LIMIT)) == "binary"
    assert _reason(admit(project, "latin1.txt", max_bytes=LIMIT)) == "binary"


def test_a_utf8_bom_is_dropped_from_the_text(project: Path) -> None:
    (project / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    result = admit(project, "bom.txt", max_bytes=LIMIT)
    assert isinstance(result, Admitted) and result.text == "hello\n"


def test_an_unreadable_file_raises_oserror_for_the_caller_to_count(project: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    locked = project / "locked.txt"
    locked.write_text("x\n")
    locked.chmod(0)
    try:
        with pytest.raises(PermissionError):
            admit(project, "locked.txt", max_bytes=LIMIT)
    finally:
        locked.chmod(0o644)


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


@needs_git
def test_git_ignored_files_are_refused_tracked_and_plain_ones_admitted(project: Path) -> None:
    _git(project, "init", "-q")
    (project / ".gitignore").write_text("build/\n*.log\n")
    (project / "build").mkdir()
    (project / "build" / "out.js").write_text("compiled()\n")
    (project / "debug.log").write_text("log line\n")
    (project / "kept.log").write_text("tracked on purpose\n")
    _git(project, "add", "-f", "kept.log")
    gitignore = GitIgnore(project)
    gitignore.prime(["build/out.js", "debug.log", "kept.log", "src/app.py"])
    assert _reason(admit(project, "build/out.js", max_bytes=LIMIT, gitignore=gitignore)) == "ignored"
    assert _reason(admit(project, "debug.log", max_bytes=LIMIT, gitignore=gitignore)) == "ignored"
    assert _reason(admit(project, "kept.log", max_bytes=LIMIT, gitignore=gitignore)) == "admitted"
    assert _reason(admit(project, "src/app.py", max_bytes=LIMIT)) == "admitted"


@needs_git
def test_a_project_in_a_subdirectory_of_a_repository_uses_the_repository_rules(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    project = repo / "services" / "api"
    project.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("*.generated.ts\n")
    (project / "schema.generated.ts").write_text("export type X = 1;\n")
    (project / "handler.ts").write_text("export function handle() {}\n")
    assert _reason(admit(project, "schema.generated.ts", max_bytes=LIMIT)) == "ignored"
    assert _reason(admit(project, "handler.ts", max_bytes=LIMIT)) == "admitted"


def test_outside_a_git_work_tree_nothing_is_ignored(project: Path) -> None:
    (project / ".gitignore").write_text("*.py\n")  # not a repository: the file means nothing
    assert GitIgnore(project).check("src/app.py") is None


def test_without_git_a_repository_refuses_everything(project: Path) -> None:
    (project / ".git").mkdir()
    gitignore = GitIgnore(project, git=str(project / "no-such-git"))
    result = admit(project, "src/app.py", max_bytes=LIMIT, gitignore=gitignore)
    assert isinstance(result, Refusal) and result.reason == "git_unavailable"
    assert "git could not be run" in result.detail


def test_without_git_a_plain_directory_is_still_indexed(project: Path) -> None:
    gitignore = GitIgnore(project, git=str(project / "no-such-git"))
    assert _reason(admit(project, "src/app.py", max_bytes=LIMIT, gitignore=gitignore)) == "admitted"


def test_a_session_in_the_home_directory_or_above_indexes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "dev"
    (home / "code" / "app").mkdir(parents=True)
    (home / "notes.md").write_text("# notes\n")
    (home / "code" / "app" / "main.py").write_text("print(1)\n")
    monkeypatch.setenv("HOME", str(home))
    # `claude` started in ~ (or /): every credential store under it would count as a project file.
    assert _reason(admit(home, "notes.md", max_bytes=LIMIT)) == "not_a_project"
    assert _reason(admit(tmp_path / "home", "dev/notes.md", max_bytes=LIMIT)) == "not_a_project"
    assert _reason(admit("/", str(home / "notes.md"), max_bytes=LIMIT)) == "not_a_project"
    assert _reason(admit(home / "code" / "app", "main.py", max_bytes=LIMIT)) == "admitted"
