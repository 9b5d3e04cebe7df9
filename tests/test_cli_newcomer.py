"""A newcomer's first hour at 80 columns (issue 31, part 3): what `scripts/start` prints, `--help`, and
the answers of search, content and import, read the way a person reads them.

`scripts/start`'s cairn commands run as real processes on an 80-column pseudo-terminal (the live
progress display is a terminal's) over two small real transcripts, in a fresh HOME. Every line drawn
must fit, and no internal row (`None`, a raw page token, an offline model's token count) may appear.
The other tests read the store that run left, in this process, at COLUMNS=80.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import inprocess
from tests.helpers.paths import REPO_ROOT
from tests.helpers.progress import banner_env, lay_out_small, run_on_a_terminal, strip_escapes

pytestmark = pytest.mark.process

WIDTH = 80
START = REPO_ROOT / "scripts" / "start"
#: A page token or any other run of 60+ word characters with no space: nothing a person reads.
RAW_TOKEN = re.compile(r"[A-Za-z0-9_\-=]{60,}")
#: What the display calls each phase, and the elapsed time and ETA it must show whole.
LABELS = ("capture", "embedding", "indexing")
ELAPSED = r"\d+\.\ds|\d+m\d\ds|\d+h\d\dm"


@dataclass(frozen=True)
class Newcomer:
    env: dict[str, str]  #: HOME, CAIRN_HOME and the transcripts' directory of this first run
    drawn: dict[str, str]  #: each `scripts/start` command (as written there) -> what the terminal showed


OPTIONS = ["--model", "offline"]


def start_commands() -> list[list[str]]:
    """The cairn commands `scripts/start` runs, in order; its `"$@"` (the user's options) as `--model
    offline`, which is what a newcomer without an API key gets."""
    commands = []
    for line in START.read_text().splitlines():
        if line.startswith(".venv/bin/cairn "):
            words = shlex.split(line)[1:]
            commands.append(
                [w for word in words for w in (["--model", "offline"] if word == "$@" else [word])]
            )
    assert [c[0] for c in commands] == ["backfill", "stats", "search"], commands
    return commands


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Newcomer:
    root = tmp_path_factory.mktemp("newcomer")
    (root / "home").mkdir()
    lay_out_small(root / "claude-projects")
    env = {k: v for k, v in banner_env().items() if not k.startswith("CAIRN_")}
    env.update(
        HOME=str(root / "home"),
        CAIRN_HOME=str(root / "home" / ".cairn"),
        CAIRN_CLAUDE_PROJECTS_DIR=str(root / "claude-projects"),
        # A search at a terminal would start a daemon that outlives the test, and answer the next ones.
        CAIRN_SEARCH_STARTS_DAEMON="false",
    )
    drawn = {}
    for command in start_commands():
        text, _wall = run_on_a_terminal(command, env, columns=WIDTH)
        drawn[shlex.join(command)] = strip_escapes(text)
    return Newcomer(env, drawn)


@pytest.fixture
def as_newcomer(newcomer: Newcomer, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The newcomer's environment, at 80 columns, for commands run in this process."""
    for key in [k for k in os.environ if k.startswith("CAIRN_")]:
        monkeypatch.delenv(key)
    for key, value in newcomer.env.items():
        monkeypatch.setenv(key, value)
    yield {**newcomer.env, "COLUMNS": str(WIDTH)}


def cairn(env: dict[str, str], *args: str) -> str:
    proc = inprocess.run(args, env)
    assert proc.returncode == 0, (
        f"cairn {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout + proc.stderr


def cairn_json(env: dict[str, str], *args: str) -> Any:
    """A command's `--json` answer: stdout alone (a search without the daemon says so on stderr)."""
    proc = inprocess.run(args, env)
    assert proc.returncode == 0, f"cairn {' '.join(args)} exited {proc.returncode}\n{proc.stderr}"
    return json.loads(proc.stdout)


def screen_lines(text: str) -> list[str]:
    """Every line or live-display frame the text holds (a frame ends in a carriage return)."""
    return [line.rstrip() for line in re.split(r"[\r\n]", text)]


def assert_reads_well(text: str) -> None:
    """Every line fits 80 columns; no internal row, Python None or raw token is shown."""
    lines = screen_lines(text)
    too_long = [line for line in lines if len(line) > WIDTH]
    assert not too_long, "\n".join(too_long)
    assert not re.search(r"\bNone\b", text), text
    assert not RAW_TOKEN.search(text), RAW_TOKEN.search(text)
    assert not re.search(r"│ (stopped|input tokens|tool calls|requests|skipped lines)\b", text), text


def test_scripts_start_fits_80_columns_without_internal_rows(newcomer: Newcomer) -> None:
    for command, text in newcomer.drawn.items():
        assert text.strip(), f"{command} drew nothing"
        assert_reads_well(text)
    backfill = newcomer.drawn["backfill --model offline"]
    assert re.search(r"sessions\s*│ 2 of 2 done", backfill)
    assert re.search(r"ideas\s*│ \d+", backfill) and re.search(r"runs\s*│ 2 ok, 0 failed", backfill)
    assert not re.search(r"tokens?\b", backfill), "an offline model's token counts read like spend"
    assert re.search(r"vectors\s*│ ", newcomer.drawn["stats"]), "the stats table"
    assert re.search(r"\d+ of \d+", newcomer.drawn[shlex.join(start_commands()[2])]), "search results"
    echoed = [shlex.split(line)[1] for line in START.read_text().splitlines() if line.startswith("echo ")]
    assert all(len(line) <= WIDTH for line in echoed), echoed


def test_the_live_display_shows_each_phase_with_elapsed_and_eta_whole(newcomer: Newcomer) -> None:
    frames = screen_lines(newcomer.drawn["backfill --model offline"])
    for label in LABELS:
        drawn = [line for line in frames if line.startswith(f"{label} ")]
        assert drawn, f"no {label} line drawn"
        assert all("…" not in line for line in drawn), drawn
        assert re.search(rf" ({ELAPSED}) done$", drawn[-1]), drawn[-1]
    assert any(re.search(rf" ({ELAPSED}) eta (\?|{ELAPSED})$", line) for line in frames), "an ETA is drawn"


HELP_COMMANDS = [
    [],
    ["backfill"],
    ["search"],
    ["install"],
    ["daemon"],
    ["content"],
    ["eval", "qa"],
    ["eval", "recall"],
    ["ideas"],
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=lambda c: " ".join(c) or "cairn")
def test_help_wraps_cleanly_at_80_columns(command: list[str], as_newcomer: dict[str, str]) -> None:
    text = cairn(as_newcomer, *command, "--help")
    lines = text.splitlines()
    assert all(len(line) <= WIDTH for line in lines), [line for line in lines if len(line) > WIDTH]
    assert not ragged_breaks(lines), "\n".join(ragged_breaks(lines))


def test_help_says_what_the_daemon_is(as_newcomer: dict[str, str]) -> None:
    text = " ".join(cairn(as_newcomer, "--help").replace("│", " ").split())
    assert "background indexer" not in text
    assert "captures and indexes your sessions as you work and makes search fast" in text


def ragged_breaks(lines: list[str]) -> list[str]:
    """Lines `--help` broke although the next line's first word would have fitted on them: the mark of
    a docstring's own line breaks kept, where wrapping at the terminal's width fills each line."""
    found = []
    for before, line in itertools.pairwise(lines):
        if not line.strip() or not before.strip():
            continue
        if before.startswith("│") and line.startswith("│"):  # a cell of a panel, continued
            above, text = before[1:-1], line[1:-1]
            start = len(text) - len(text.lstrip())
            above_text = above[start:].rstrip()
            if start <= 2 or not above_text or above[start - 1] != " " or "  " in above_text.strip():
                continue  # a new row, no text in that column above, or not the row's last column
            if text.lstrip().startswith(("[default:", "[required]", "[env var:")):
                continue  # typer's notes after an option's help: items of their own, not wrapped text
            room = len(text) - start - 1  # the panel's right padding
        elif before.startswith(" ") and line.startswith(" ") and "Usage:" not in before:
            above_text, text, room = before[1:].rstrip(), line, WIDTH - 2  # the text above the panels
        else:
            continue
        if len(above_text) + 1 + len(text.split()[0]) <= room:
            found.append(f"{before}\n{line}")
    cells = [cell for line in lines if line.startswith("│") for cell in re.split(r"\s{2,}", line[1:-1])]
    found += [f"a metavar cut: {cell}" for cell in cells if cell.startswith("<") and ">" not in cell]
    return found


def test_more_results_are_offered_in_cli_words_not_a_raw_token(as_newcomer: dict[str, str]) -> None:
    page = cairn_json(as_newcomer, "search", "test", "--limit", "1", "--json")
    assert page["next_token"] and page["total"] > 1, "the token stays in --json, for scripts"
    text = cairn(as_newcomer, "search", "test", "--limit", "1")
    assert_reads_well(text)
    assert f"1 of {page['total']} shown: --limit {page['total']} shows them all" in " ".join(text.split())


#: How the MCP tools' hints put things, which a shell user cannot type.
MCP_WORDS = (
    "show(id=",
    "continuation_token",
    "min_score",
    "semantic_concepts",
    "exact_terms",
    "`search` tool",
)


def test_content_hints_are_cli_words(as_newcomer: dict[str, str]) -> None:
    data = cairn_json(as_newcomer, "content", "--term", "test", "--limit", "1", "--json")
    assert data["continuation"]["has_more"], "a second page, so the hints offer more"
    text = cairn(as_newcomer, "content", "--term", "test", "--limit", "1")
    assert_reads_well(text)
    flat = " ".join(text.split())
    for mcp_word in (
        "show(id=",
        "continuation_token",
        "min_score",
        "semantic_concepts",
        "exact_terms",
        "tool",
    ):
        assert mcp_word not in flat, f"{mcp_word!r} is the MCP tool's word, not the CLI's:\n{text}"
    assert f"cairn show {data['results'][0]['chunk_id']} shows the best match in full" in flat
    assert "--limit" in flat and "--min-score" in flat


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "tests", "--since", "2999-01-01"], "--since 2999-01-01 is in the future"),
        (
            ["search", "tests", "--since", "2026-03-01", "--until", "2026-02-01"],
            "--since 2026-03-01 is after --until 2026-02-01",
        ),
        (["search", "tests", "--since", "3d", "--until", "1w"], "--since 3d ("),
        (["backfill", *OPTIONS, "--since", "2999-01-01"], "Nothing to backfill: the date range is empty"),
        (["reindex", *OPTIONS, "--since", "2999-01-01"], "Nothing to reindex: the date range is empty"),
    ],
)
def test_an_empty_date_range_is_named(args: list[str], said: str, as_newcomer: dict[str, str]) -> None:
    flat = " ".join(cairn(as_newcomer, *args).split())
    assert said in flat and "the date range is empty" in flat, flat


def test_import_counts_the_vectors_the_store_then_holds(as_newcomer: dict[str, str], tmp_path: Path) -> None:
    """It said "3,182 vectors computed" for a store that then held 1,015: it counted the queued rows,
    most of which (tool output, noise, first passages) get no vector."""
    export = tmp_path / "memory.jsonl"
    cairn(as_newcomer, "export", "--out", str(export))
    fresh = {**as_newcomer, "CAIRN_HOME": str(tmp_path / "fresh")}
    said = " ".join(cairn(fresh, "import", str(export)).split())
    stats = cairn_json(fresh, "stats", "--json")
    held = sum(stats["vectors"].values())
    assert held > 0 and stats["pending_vectors"] == 0
    assert f"the search index gained {held:,} vectors." in said, said
