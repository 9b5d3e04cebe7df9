"""Every listing laid out for the terminal it is printed on, read the way a person reads it.

The store holds real indexed sessions (the demo and two viewer sessions, `indexed_home`) plus a file
index, file requests and learned associations (`fill`, as the file indexer and the feedback loop leave
them). Each listing command runs at 80 and at 120 columns, in this process with COLUMNS set (rich reads
the width from it on every print) and, for a few, as a real process on a pseudo-terminal of that width.
What must hold everywhere: no line is wider than the terminal, no id or date is split, every word of
the text shown is whole (up to the width a text column is always given: a longer word, a long path,
folds rather than being cut), no Python value (`None`, `False`, `{'a': 1}`) is shown, the columns left
out are named with how to see them, and an empty listing says what is true of the store.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Settings
from cairn.store.store import Store
from tests.helpers import inprocess
from tests.helpers.learn import fill
from tests.helpers.progress import run_on_a_terminal, strip_escapes

WIDTHS = (80, 120)
#: The longest word every text column shows whole at 80 columns (the narrowest a text column with
#: prose is drawn is 20); a longer one (`tests/orders/test_checkout.py::test_concurrent_checkout`) folds.
WHOLE_WORD = 20
#: Where a date starts; what follows must be one whole date in the short form, never an ISO string.
DATE_START = re.compile(r"(?<![\w.-])\d{4}-\d")
WHOLE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2})?(?![\d:])")
PYTHON_VALUES = re.compile(r"\b(None|True|False)\b|\{'|': ")
HINT = re.compile(r"(\d+) columns? hidden at this width: (.+?) \(--wide or --json shows them\)")


@dataclass(frozen=True)
class Listing:
    """A listing command and the fields of its `--json` rows whose text it shows in a primary column."""

    args: tuple[str, ...]
    texts: tuple[str, ...] = ()
    rows: str | None = None  #: the key of the rows in a `--json` object (`files` answers with one)


LISTINGS = [
    Listing(("ideas",), ("content", "intent")),
    Listing(("ideas", "--superseded"), ("content",)),
    Listing(("questions",), ("content", "resolution")),
    Listing(("todos",), ("content", "resolution")),
    Listing(("projects",), ("name", "path")),
    Listing(("topics",), ("name", "summary")),
    Listing(("entities",), ("name", "type")),
    Listing(("files",), ("rel_path",), rows="documents"),
    Listing(("files", "--status", "failed"), ("outcome",), rows="requests"),
    Listing(("learn", "associations"), ("query",)),
    Listing(("config",)),
    Listing(("stats",)),
    Listing(("status",)),
]
HELP = [
    ("eval", "recall"),
    ("eval", "sessions"),
    ("ideas",),
    ("files",),
    ("questions",),
    ("install",),
]


@pytest.fixture(scope="module")
def env(indexed_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Real indexed sessions, a file index, file requests and associations, in a home of its own."""
    root = tmp_path_factory.mktemp("listings")
    home = root / "home"
    shutil.copytree(indexed_home, home, symlinks=True)

    async def filled() -> None:
        async with await Store.open(Settings.load(home)) as store:
            await fill(store)

    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(home))
        asyncio.run(filled())
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    yield {**base, "CAIRN_HOME": str(home), "CAIRN_CLAUDE_PROJECTS_DIR": str(root / "claude-projects")}


def cairn(env: dict[str, str], width: int, *args: str) -> str:
    """What `cairn ARGS` prints on a terminal `width` columns wide (stdout and stderr)."""
    proc = inprocess.run(args, {**env, "COLUMNS": str(width)})
    assert proc.returncode == 0, f"cairn {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def answer(env: dict[str, str], *args: str) -> Any:
    proc = inprocess.run([*args, "--json"], env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_fits(text: str, width: int) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, "\n".join(too_wide)


def assert_dates_whole(text: str) -> None:
    """Every date is one whole `YYYY-MM-DD[ HH:MM]`: none split over cells or lines, none in ISO form."""
    for start in DATE_START.finditer(text):
        assert WHOLE_DATE.match(text, start.start()), f"a date cut or raw: {text[start.start() :][:30]!r}"
    assert not re.search(r"\d{2}T\d{2}:\d{2}|\.\d{3}Z", text), "an ISO timestamp is shown"


def assert_no_python(text: str) -> None:
    found = PYTHON_VALUES.search(text)
    assert not found, f"a Python value {found[0]!r} is shown:\n{text}"


def rows_of(data: Any, listing: Listing) -> list[dict[str, Any]]:
    return data[listing.rows] if listing.rows else data


def words(value: Any) -> list[str]:
    if isinstance(value, list):
        return [w for item in value for w in words(item)]
    return str(value or "").split()


def assert_words_whole(text: str, rows: list[dict[str, Any]], fields: tuple[str, ...]) -> None:
    """Every word of the text shown, up to `WHOLE_WORD` long, appears whole in what was printed."""
    for row in rows:
        for field in fields:
            for word in words(row.get(field)):
                if len(word) <= WHOLE_WORD:
                    assert word in text, f"{word!r} of {field} of row {row.get('id')} is not whole:\n{text}"


def hidden(text: str) -> list[str]:
    """The columns the hint under a listing says were left out."""
    found = HINT.search(" ".join(text.split()))
    return found[2].split(", ") if found else []


def header_cells(text: str) -> str:
    """The header of the first table drawn: the lines between its top rule and the rule under it."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    under = next(i for i, line in enumerate(lines) if line.startswith("┡"))
    return " ".join(" ".join(lines[top + 1 : under]).replace("┃", " ").split())


def shows(header: str, column: str) -> bool:
    """Whether a header holds `column`; a narrow column's header is drawn a word a line."""
    return set(column.split()) <= set(header.split())


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("listing", LISTINGS, ids=lambda listing: " ".join(listing.args))
def test_each_listing_reads_well_at_the_terminals_width(
    env: dict[str, str], listing: Listing, width: int
) -> None:
    text = cairn(env, width, *listing.args)
    assert text.strip()
    assert_fits(text, width)
    assert_dates_whole(text)
    assert_no_python(text)
    data = answer(env, *listing.args)
    if "…" not in json.dumps(data, ensure_ascii=False):
        assert "…" not in text, f"something was cut:\n{text}"
    if listing.texts:
        rows = rows_of(data, listing)
        assert rows, f"the fixture lists nothing for {listing.args}"
        assert_words_whole(text, rows, listing.texts)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    "listing", [listing for listing in LISTINGS if listing.texts], ids=lambda listing: " ".join(listing.args)
)
def test_columns_left_out_are_named_and_wide_shows_them(
    env: dict[str, str], listing: Listing, width: int
) -> None:
    text = cairn(env, width, *listing.args)
    left_out = hidden(text)
    for column in left_out:
        assert not shows(header_cells(text), column), f"{column} is said to be hidden but is drawn"
    if listing.args[0] == "learn":
        return  # the associations table stacks its secondary facts under the query and the file
    wide = cairn(env, width, *listing.args, "--wide")
    assert not hidden(wide), "--wide leaves nothing out"
    for column in left_out:
        assert shows(header_cells(wide), column), f"--wide does not show {column}"
    assert_dates_whole(wide)
    assert_no_python(wide)


def test_at_80_columns_the_secondary_columns_give_way_to_the_text(env: dict[str, str]) -> None:
    """The issue's three listings: eight columns squeezed into `busy_timeo`/`ut`, a timestamp over three
    cells, a path cut to `bench/lo`. Now the text and dates are whole and the rest is named."""
    ideas = cairn(env, 80, "ideas")
    assert re.search(r"┃ id ┃ intent\s+┃ content\s+┃ said\s+┃", ideas), ideas
    assert {"topic", "importance"} <= set(hidden(ideas)), hidden(ideas)
    assert "superseded by" not in ideas and "declined" not in ideas, "empty in every row: left out"
    assert "busy_timeout" in cairn(env, 80, "questions")

    projects = cairn(env, 80, "projects")
    last_active = {row["name"]: row["last_active"] for row in answer(env, "projects") if row["last_active"]}
    assert last_active
    for name, stamp in last_active.items():
        assert re.search(rf"│ {re.escape(name)}\s.*│ \d{{4}}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}} │", projects), (
            name,
            stamp,
            projects,
        )
    assert "covers" in hidden(projects)

    files = cairn(env, 80, "files")
    for row in answer(env, "files")["documents"]:
        assert row["rel_path"] in files


def test_wide_is_as_wide_as_it_needs_and_json_keeps_its_shape(env: dict[str, str]) -> None:
    wide = cairn(env, 80, "ideas", "--wide")
    header = header_cells(wide)
    assert "topic" in header and "importance" in header
    assert max(len(line) for line in wide.splitlines()) > 80, "past the edge, for `less -S`"
    rows = answer(env, "ideas")
    assert answer(env, "ideas", "--wide") == rows
    assert {"id", "intent", "content", "said_at", "superseded_by", "declined_at", "topic"} <= set(rows[0])
    files = answer(env, "files")
    assert {"documents", "requests", "documents_total"} <= set(files)


def test_config_shows_values_as_toml_writes_them(env: dict[str, str]) -> None:
    text = cairn(env, 80, "config")
    flat = " ".join(text.replace("│", " ").split())
    settings = answer(env, "config")["settings"]
    for name in settings:
        assert re.search(rf"│ {name}\s+│", text), f"{name} is not shown whole"
    assert re.search(r"│ recall_enabled\s+│ true\s", text) and re.search(
        r"│ include_thinking\s+│ false\s", text
    )
    assert re.search(r'│ embedding\s+│ "minilm-int8"\s', text), "a string is quoted"
    assert re.search(r"│ chroma_url\s+│ # not set\s", text)
    assert '# not set: "offline" runs' in flat
    assert "search_boosts { decision = 0.75," in flat and '"tool_result:Bash" = 1.0' in flat
    assert re.search(r"│ learn_tools\s+│ \[\]\s", text), "an empty list as TOML writes it"


@pytest.mark.parametrize("width", WIDTHS)
def test_timeline_reads_well(env: dict[str, str], width: int) -> None:
    first = answer(env, "ideas")[-1]["id"]
    text = cairn(env, width, "timeline", str(first))
    assert_fits(text, width)
    assert_dates_whole(text)
    assert_no_python(text)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", HELP, ids=" ".join)
def test_help_shows_every_option_whole(env: dict[str, str], command: tuple[str, ...], width: int) -> None:
    """An option's help is wrapped, never cut with `…` (`tests/fixtures/transcrip…` in `eval recall`)."""
    text = cairn(env, width, *command, "--help")
    assert_fits(text, width)
    assert "…" not in text, text
    if command == ("eval", "recall"):
        flat = "".join(line.strip("│ ") for line in text.splitlines())
        assert "tests/fixtures/transcripts" in flat.replace(" ", "")


@pytest.mark.parametrize(
    "args",
    [("ideas",), ("questions",), ("todos",), ("projects",), ("topics",), ("entities",), ("files",)],
    ids=" ".join,
)
def test_an_empty_store_says_so(args: tuple[str, ...], tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    empty = {**base, "CAIRN_HOME": str(tmp_path / "home"), "CAIRN_CLAUDE_PROJECTS_DIR": str(tmp_path / "cp")}
    text = " ".join(cairn(empty, 80, *args).split())
    said = "Nothing in the file index yet" if args == ("files",) else f"No {args[0]} stored yet"
    assert said in text, text
    assert "┏" not in text and "hidden" not in text


def test_an_empty_open_listing_says_what_became_of_the_rest(env: dict[str, str]) -> None:
    for kind in ("questions", "todos"):
        if answer(env, kind, "--open"):
            continue
        stored = answer(env, kind)
        said = " ".join(cairn(env, 80, kind, "--open").split())
        assert f"No open {kind} — " in said and "stored:" in said, said
        assert "stored yet" not in said and len(stored) > 0


@pytest.mark.process
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", [("ideas",), ("projects",), ("files",), ("config",)], ids=" ".join)
def test_on_a_real_terminal(env: dict[str, str], args: tuple[str, ...], width: int) -> None:
    """The same on a pseudo-terminal: rich draws for a terminal there (colours, its window size)."""
    drawn, _wall = run_on_a_terminal(list(args), env, columns=width, timeout=120)
    text = strip_escapes(drawn).replace("\r\n", "\n")
    assert_fits(text, width)
    assert_dates_whole(text)
    assert_no_python(text)
    assert "┏" in text
