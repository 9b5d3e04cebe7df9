"""The README's promises, checked: every command it shows runs as written, every link leads somewhere.

A newcomer copies the README's shell blocks into a terminal. So this module reads those blocks and runs each
`cairn …` line as written (through `bash -c`, the way a terminal would), in a real process, against a copy of
the demo home and a fake `HOME` — `cairn install` edits `~/.claude`, which must never be the real one. The
blocks under one heading run in order in one environment, as a reader following that section would; the
sections run side by side. What cannot run here is still checked, honestly and by name: the two scripts (they
build a virtualenv from PyPI and run the whole suite) must exist, be executable and parse; a server
(`cairn ui`) must accept every option the README gives it. Every `cairn` command the README names, in a block
or inline, must be a real command with real options.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer

from cairn.cli import app
from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.process

README = REPO_ROOT / "README.md"
MAX_LINES = 300
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
#: The README's two commands, checked without running them: each builds a virtualenv from PyPI.
SCRIPTS = {"./scripts/start", "./scripts/test"}
#: `cairn` lines of the README that this test does not run, each with the reason; their options are checked.
NOT_RUN = {
    "cairn ui --open": "serves a web page until Ctrl-C, and opens a browser",
}
#: Exit statuses the README documents for a command, when it is not 0.
EXPECTED_STATUS: dict[str, int] = {}
#: A compact one-line settings file and a user config, as a user's own: install must leave them as found.
USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}
USER_CONFIG = {"numStartups": 3, "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}}


@dataclass
class Section:
    """The shell lines of the README's blocks under one heading, in order."""

    heading: str
    lines: list[str] = field(default_factory=list)


def readme_sections(text: str) -> list[Section]:
    """Every shell code block's command lines (comments and blank lines left out, `\\` continuations joined),
    grouped by the heading they sit under."""
    sections: list[Section] = []
    heading, language, pending = "", None, ""
    for raw in text.splitlines():
        fence = re.match(r"^```\s*(\S*)", raw)
        if fence:
            language = None if language is not None else fence.group(1).lower()
            continue
        if language is None:
            if raw.startswith("#"):
                heading = raw.lstrip("#").strip()
            continue
        if language not in SHELL_LANGUAGES:
            continue
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line.startswith("#"):
            continue
        if not sections or sections[-1].heading != heading:
            sections.append(Section(heading))
        sections[-1].lines.append(line)
    return sections


def argv(line: str) -> list[str]:
    """The words of a shell line as the shell splits them, its trailing comment left out."""
    return shlex.split(line, comments=True)


def command_key(line: str) -> str:
    return shlex.join(argv(line))


@functools.cache
def _cairn() -> Any:
    return typer.main.get_command(app)


def cairn_command(words: list[str]) -> tuple[Any, list[str]]:
    """The command `cairn WORDS` runs (typer's click command, whose `params` are its options) and the words
    naming it; fails when there is none. A group is told by its `commands` (typer vendors click), and asked
    for a subcommand through `get_command`, since `cairn` builds its commands when first asked."""
    command: Any = _cairn()
    path = ["cairn"]
    for word in words[1:]:
        if not hasattr(command, "commands"):
            break
        sub = command.get_command(command.context_class(command), word)
        if sub is None:
            break
        command, path = sub, [*path, word]
    if hasattr(command, "commands"):
        pytest.fail(f"`{shlex.join(words)}` names no cairn command (`{' '.join(path)}` is a group)")
    return command, path


def unknown_options(words: list[str]) -> list[str]:
    """The options in `cairn WORDS` that its command does not have."""
    command, _ = cairn_command(words)
    known = {"--help"} | {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
    written = [word.split("=", 1)[0] for word in words if word.startswith("-") and word != "-"]
    return [option for option in written if option not in known]


README_TEXT = README.read_text()
SECTIONS = readme_sections(README_TEXT)
SHELL_LINES = [line for section in SECTIONS for line in section.lines]


def inline_commands(text: str) -> list[str]:
    """The `cairn …` spans of the README's prose and tables. The first column of the troubleshooting table
    quotes what cairn prints ("cairn needs Python 3.11 or newer"), not commands, so it is left out."""
    kept, heading = [], ""
    for line in re.sub(r"```.*?```", "", text, flags=re.S).splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif heading == "Troubleshooting" and line.startswith("|"):
            line = "|".join(line.split("|")[2:])
        kept.append(line)
    spans = re.findall(r"`(cairn\s[^`]+)`", "\n".join(kept))
    return sorted({" ".join(span.split()) for span in spans})


INLINE_CAIRN = inline_commands(README_TEXT)


def test_the_readme_is_short_and_shows_the_two_commands() -> None:
    lines = README_TEXT.splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move what is not for users to docs/"
    shown = {argv(line)[0] for line in SHELL_LINES}
    assert shown >= SCRIPTS, "the README's two commands are ./scripts/start and ./scripts/test"
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "exec ./scripts/test" in ci, "CI runs exactly the README's test command"


def test_every_relative_link_in_the_readme_leads_to_a_file_and_heading_that_exist() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", README_TEXT, flags=re.S))
    relative = [link for link in links if not re.match(r"^[a-z]+:", link)]
    assert len(relative) > 10, relative  # the docs/ links, the screenshot, the changelog
    for link in relative:
        path, _, anchor = link.partition("#")
        target = (README.parent / path) if path else README
        assert target.is_file(), f"README links to {link}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target.read_text()), f"README links to {link}: no such heading"


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes of a page's headings (lower case, punctuation dropped, spaces as dashes)."""
    headings = re.findall(r"^#+\s+(.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_cairn_command_and_option_the_readme_names_exists() -> None:
    named = [line for line in SHELL_LINES if argv(line)[0] == "cairn"] + INLINE_CAIRN
    assert len(named) > 20, named
    for line in named:
        words = argv(line)
        assert not unknown_options(words), f"`{line}`: cairn has no option {unknown_options(words)}"
    others = [line for line in SHELL_LINES if argv(line)[0] not in SCRIPTS | {"cairn"}]
    assert not others, f"README commands this test cannot check: {others}"
    shown = {command_key(line) for line in SHELL_LINES}
    assert set(NOT_RUN) <= shown, "NOT_RUN names a command the README no longer shows"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_readme_scripts_exist_are_executable_and_parse(script: str) -> None:
    path = REPO_ROOT / script
    assert path.is_file() and os.access(path, os.X_OK), f"{script} is missing or not executable"
    for file in (path, REPO_ROOT / "scripts" / "_venv.sh"):
        parsed = subprocess.run(["bash", "-n", str(file)], capture_output=True, text=True, timeout=30)
        assert parsed.returncode == 0, parsed.stderr


def test_the_servers_the_readme_starts_take_its_options(tmp_path: Path) -> None:
    """A server is not run here, but its `--help`, from a real process, lists every option the README uses."""
    for line in NOT_RUN:
        words = argv(line)
        _, path = cairn_command(words)
        shown = subprocess.run(
            ["bash", "-c", shlex.join([*path, "--help"])], env=_environment(tmp_path, "help"), **_RUN
        )
        assert shown.returncode == 0, shown.stderr
        for option in (word for word in words if word.startswith("--")):
            assert option in shown.stdout, f"`{' '.join(path)} --help` does not list {option}"


# Running the README's commands

_RUN = {"capture_output": True, "text": True, "stdin": subprocess.DEVNULL, "timeout": 240}


def _environment(root: Path, name: str) -> dict[str, str]:
    """A terminal's environment for one README section: its own cairn home, a fake HOME, no API key, and the
    `cairn` of this checkout first on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("CAIRN_") and key not in {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}
    }
    return {
        **env,
        "HOME": str(root / f"{name}-user"),
        "CAIRN_HOME": str(root / f"{name}-home"),
        "CAIRN_CLAUDE_PROJECTS_DIR": str(root / f"{name}-claude-projects"),  # no history: the demo session
        "CAIRN_IDLE_EXIT_SECONDS": "60",  # a daemon a command starts goes away on its own too
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    }


@dataclass
class Ran:
    line: str
    proc: subprocess.CompletedProcess[str]
    claude_files: dict[str, str | None]  # the fake ~/.claude/settings.json and ~/.claude.json after it


def _claude_files(home: Path) -> dict[str, str | None]:
    """Claude Code's two files under `home`, as text (None where there is none)."""
    files = {"settings": home / ".claude" / "settings.json", "config": home / ".claude.json"}
    return {name: path.read_text() if path.exists() else None for name, path in files.items()}


def _run_section(section: Section, root: Path, name: str, demo_home: Path) -> list[Ran]:
    env = _environment(root, name)
    shutil.copytree(demo_home, env["CAIRN_HOME"], symlinks=True)
    user = Path(env["HOME"])
    (user / ".claude").mkdir(parents=True)
    (user / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, separators=(",", ":")))
    (user / ".claude.json").write_text(json.dumps(USER_CONFIG, indent=2) + "\n")
    work = root / f"{name}-cwd"
    work.mkdir()
    ran = []
    try:
        for line in section.lines:
            if argv(line)[0] != "cairn" or command_key(line) in NOT_RUN:
                continue
            proc = subprocess.run(["bash", "-c", line], env=env, cwd=work, **_RUN)
            ran.append(Ran(line, proc, _claude_files(user)))
    finally:  # no daemon outlives the test, whichever command started it
        subprocess.run(["cairn", "daemon", "stop"], env=env, cwd=work, **_RUN)
    return ran


@pytest.fixture(scope="module")
def readme_runs(demo_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Every README section's `cairn` lines run as written, the sections side by side, by command."""
    root = tmp_path_factory.mktemp("readme")
    real = _claude_files(Path.home())
    runnable = [s for s in SECTIONS if any(argv(line)[0] == "cairn" for line in s.lines)]
    with ThreadPoolExecutor(max_workers=len(runnable)) as pool:
        futures = [pool.submit(_run_section, s, root, f"s{i}", demo_home) for i, s in enumerate(runnable)]
        ran = [r for future in futures for r in future.result()]
    assert _claude_files(Path.home()) == real, "a README command changed the real ~/.claude"
    return {command_key(r.line): r for r in ran}


def test_every_readme_command_runs_as_written(readme_runs: dict[str, Ran]) -> None:
    expected = [line for line in SHELL_LINES if argv(line)[0] == "cairn" and command_key(line) not in NOT_RUN]
    assert [r.line for r in readme_runs.values()] == expected
    for r in readme_runs.values():
        status = EXPECTED_STATUS.get(command_key(r.line), 0)
        assert r.proc.returncode == status, f"`{r.line}` exited {r.proc.returncode}:\n{r.proc.stderr}"
        assert "Traceback" not in r.proc.stderr, f"`{r.line}`:\n{r.proc.stderr}"
        assert (r.proc.stdout + r.proc.stderr).strip(), f"`{r.line}` printed nothing"


def _pruned(value: object) -> object:
    """JSON without its empty objects and lists: what a person reads as the same settings."""
    if isinstance(value, dict):
        kept = {key: _pruned(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, [])}
    if isinstance(value, list):
        return [item for item in map(_pruned, value) if item not in ({}, [])]
    return value


def test_the_readme_install_edits_the_fake_home_and_uninstall_undoes_it(readme_runs: dict[str, Ran]) -> None:
    installed, uninstalled = readme_runs.get("cairn install"), readme_runs.get("cairn install --uninstall")
    assert installed and uninstalled, "the README installs into Claude Code and shows how to uninstall"
    assert "cairn-hook" in (installed.claude_files["settings"] or ""), "cairn install wrote no capture hook"
    assert '"cairn"' in (installed.claude_files["config"] or ""), "cairn install registered no MCP server"
    after = {name: json.loads(text or "{}") for name, text in uninstalled.claude_files.items()}
    assert _pruned(after["settings"]) == _pruned(USER_SETTINGS)
    assert _pruned(after["config"]) == _pruned(USER_CONFIG)
