"""`cairn search` without a daemon (`search_without_daemon = "keywords"`, the default): it answers from
SQLite alone, without importing Chroma or the embedding model's runtime, and says so when meaning could
have changed the answer; the same answer as the search that loads them when the words decide it (the
keyword mode, decisive matches), and that search itself when no word matched or meaning was asked for.

A search counts its results as used, which ranks them a little higher next time, so answers compared
with each other come from two copies of one store, each asked the same searches in the same order.
The daemon's side (starting it on a search, through it) is in `tests/daemon/test_cli_search_daemon.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cairn.cli import search as cli_search
from tests.helpers.cli import cairn

pytestmark = pytest.mark.process

#: What a search without the daemon must not import on the keyword path: Chroma, the embedding model's
#: runtime and tokenizer, numpy, the vector index — the seconds of a cold start — nor the modules of
#: other ops (forget, import, recall: a tenth of a second of imports).
HEAVY_MODULES = (
    "chromadb",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "cairn.store.vectors",
    "pydantic_ai",
    "cairn.lifecycle.ops",
    "cairn.recall.ops",
)

#: `cairn search --json` as the console script runs it, listing on stderr, as it exits, every module
#: it imported.
LIST_MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
from cairn.cli import app
app(["search", *sys.argv[1:], "--json"], prog_name="cairn")
"""

QUERY = "database is locked"


@pytest.fixture
def home(demo_home: Path, cairn_home: Path) -> Path:
    shutil.copytree(demo_home, cairn_home, symlinks=True)
    return cairn_home


@pytest.fixture
def loaded(demo_home: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a second copy of the store, searched by loading the model without a daemon."""
    copy = tmp_path / "loaded-home"
    shutil.copytree(demo_home, copy, symlinks=True)
    return {"CAIRN_HOME": str(copy), "CAIRN_SEARCH_WITHOUT_DAEMON": "hybrid"}


def _page(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    return json.loads(cairn("search", *args, "--json", env=env).stdout)


def _ids(page: dict[str, Any]) -> list[str]:
    return [str(result["id"]) for result in page["results"]]


def _keywords_only(page: dict[str, Any]) -> bool:
    return str(page.get("vectors_unavailable") or "").startswith("keyword matches only")


def test_a_cold_search_answers_by_keywords_without_loading_the_model(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", LIST_MODULES, QUERY],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    page = json.loads(proc.stdout)
    assert page["results"] and page["mode"] == "hybrid"
    assert _keywords_only(page) and page["vectors_unavailable"] in page["notices"]
    assert "`cairn daemon start`" in page["vectors_unavailable"], "says how the next search gets meaning"
    imported = set(json.loads(proc.stderr.rpartition("MODULES ")[2]))
    assert {"cairn.search.hybrid", "cairn.store.db"} <= imported
    heavy = {m for m in imported if any(m == h or m.startswith(f"{h}.") for h in HEAVY_MODULES)}
    assert not heavy


def test_the_cold_answer_has_the_shape_of_the_loaded_one(home: Path, loaded: dict[str, str]) -> None:
    cold, warm = _page(QUERY), _page(QUERY, env=loaded)
    assert set(cold) == set(warm)
    assert {key for r in cold["results"] for key in r} <= {key for r in warm["results"] for key in r}
    assert not _keywords_only(warm) and warm["vectors_unavailable"] is None


def test_a_table_says_the_search_was_by_keywords(home: Path) -> None:
    table = cairn("search", QUERY, env={"COLUMNS": "200"})
    assert "note: keyword matches only" in table.stdout
    assert "daemon" not in table.stderr, "a script reading stderr gets no advice, and nothing was started"


def test_keyword_mode_answers_as_the_loaded_search_does(home: Path, loaded: dict[str, str]) -> None:
    for query in (QUERY, "busy_timeout", "Postgres"):
        cold, warm = _page(query, "--mode", "keyword"), _page(query, "--mode", "keyword", env=loaded)
        assert _ids(cold) == _ids(warm) and cold["results"], query
        assert cold["notices"] == warm["notices"] and cold["vectors_unavailable"] is None


def test_decisive_keywords_give_the_hybrid_answer(
    home: Path, loaded: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With thresholds every match passes, keyword matches are decisive, and hybrid search skips the
    vectors: the cold search gives its answer exactly, with no keyword-only notice."""
    monkeypatch.setenv("CAIRN_SEARCH_DECISIVE_TOP", "0")
    monkeypatch.setenv("CAIRN_SEARCH_DECISIVE_GAP", "0")
    for query in (QUERY, "which database for the orders service"):
        cold, warm = _page(query), _page(query, env=loaded)
        assert cold["vector_skipped"] and warm["vector_skipped"], query
        assert _ids(cold) == _ids(warm) and cold["results"], query
        assert cold["notices"] == warm["notices"] and not _keywords_only(cold)


def test_a_query_no_word_matches_loads_the_model(home: Path) -> None:
    """Words found nothing and meaning may: "no matches" is not said until meaning was searched."""
    page = _page("zebra crossing over the river")
    assert not _keywords_only(page)
    assert not any(n.startswith("keyword matches only") for n in page["notices"])


def test_semantic_mode_loads_the_model(home: Path) -> None:
    page = _page("why did the tests fail now and then", "--mode", "semantic")
    assert page["results"] and page["mode"] == "semantic"
    assert not _keywords_only(page) and page["vectors_unavailable"] is None


def test_the_notice_says_the_daemon_is_starting_only_when_a_search_starts_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a search would start the daemon decides which next step its notice names; the start
    itself, with real processes, is tested in `tests/daemon/test_cli_search_daemon.py`."""
    monkeypatch.setattr(cli_search, "_start_daemon", lambda settings: False)
    monkeypatch.setattr(cli_search, "_at_terminal", lambda: True)
    monkeypatch.setenv("CAIRN_SEARCH_STARTS_DAEMON", "true")
    assert cli_search.NEXT_STARTED in _page(QUERY)["vectors_unavailable"]
    monkeypatch.setenv("CAIRN_MODEL", "anthropic:claude-haiku-4-5")
    assert cli_search.NEXT_START_IT in _page(QUERY)["vectors_unavailable"]
