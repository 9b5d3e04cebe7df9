"""`cairn search`, `content`, `show` and `timeline` end to end, over real transcripts indexed offline.

One indexed store (the shared `indexed_home`) is copied per module and every test only reads it, so the
order the tests run in does not matter; the tests that need an empty store use their own `cairn_home`.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cairn.cli import results as cli_results
from cairn.cli import search as cli_search
from tests.helpers import hostile_disks
from tests.helpers.cli import cairn, cairn_json


@pytest.fixture(scope="module", autouse=True)
def indexed(tmp_path_factory: pytest.TempPathFactory, indexed_home: Path) -> Iterator[Path]:
    """A CAIRN_HOME holding the demo session and two small real transcripts, indexed offline: this
    this module's own copy of the shared `indexed_home`."""
    root = tmp_path_factory.mktemp("cli-search")
    shutil.copytree(indexed_home, root / "cairn-home", symlinks=True)
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CAIRN_")]:
            mp.delenv(key)
        mp.setenv("CAIRN_HOME", str(root / "cairn-home"))
        mp.setenv("CAIRN_CLAUDE_PROJECTS_DIR", str(root / "claude-projects"))
        yield root / "cairn-home"


def search_json(*args: str) -> dict[str, Any]:
    return cairn_json("search", *args)


def test_natural_language_and_exact_queries_print_a_table() -> None:
    out = cairn("search", "should we move the orders database to postgres").stdout
    assert "Postgres" in out and "Black Friday" in out
    assert re.search(r"\d+ of \d+", out)

    exact = cairn("search", "busy_timeout").stdout
    assert "busy_timeout" in exact
    assert "acme-api" in exact, "each result says which project and topic it comes from"


def test_json_is_the_search_page_with_score_parts() -> None:
    page = search_json("WAL journal mode")
    assert page["total"] >= len(page["results"]) > 0
    assert page["mode"] == "hybrid"
    first = page["results"][0]
    assert {"id", "kind", "score", "scores", "snippet", "session", "source"} <= set(first)
    assert {"bm25", "vector", "fusion", "recency", "importance", "usage", "boost"} <= set(first["scores"])
    marked = [r["snippet"][a:b].lower() for r in page["results"] for a, b in r["highlights"]]
    assert {"wal", "journal"} <= set(marked), "matched words are given as offsets into the snippet"
    assert not any("**" in r["snippet"] for r in page["results"])


def test_kind_and_intent_filters() -> None:
    ideas = search_json("orders", "--kind", "ideas", "--limit", "20")["results"]
    assert ideas and all(r["kind"] == "idea" for r in ideas)
    messages = search_json("orders", "--kind", "messages", "--limit", "20")["results"]
    assert messages and all(r["kind"] == "message" for r in messages)
    decisions = search_json("orders", "--intent", "decision", "--intent", "conclusion", "--limit", "20")
    assert decisions["results"]
    assert {r["intent"] for r in decisions["results"]} <= {"decision", "conclusion"}
    assert all(r["kind"] == "idea" for r in decisions["results"])


def test_paging_gives_new_ids_and_the_same_total() -> None:
    first = search_json("orders", "--limit", "2")
    assert first["next_token"], first
    second = search_json("--page-token", first["next_token"], "--limit", "2")
    assert second["total"] == first["total"]
    assert second["results"]
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}

    # A person is offered a larger --limit; the token, hundreds of characters, stays in --json.
    table = cairn("search", "orders", "--limit", "2", env={"COLUMNS": "80"}).stdout
    shown = min(first["total"], 100)
    assert f"2 of {first['total']} shown: --limit {shown} shows" in " ".join(table.split())
    assert first["next_token"] not in table and all(len(line) <= 80 for line in table.splitlines())
    assert len(search_json("orders", "--limit", str(shown))["results"]) == shown


def test_show_an_item_found_by_search() -> None:
    hit = search_json("busy_timeout", "--kind", "ideas")["results"][0]
    out = cairn("show", hit["id"]).stdout
    assert f"#{hit['id']}" in out
    assert "busy_timeout" in out
    assert "demo-session.jsonl" in out, "the source file is shown"

    detail = cairn_json("show", f"#{hit['id']}")
    assert detail["id"] == hit["id"] and detail["kind"] == "idea"
    assert detail["content"] == hit["content"]

    span = hit["session"]["topic_id"]
    assert span is not None
    span_out = cairn("show", span).stdout
    assert "ideas" in span_out and "busy_timeout" in span_out, "a span lists its ideas"


def test_show_a_message_and_unknown_ids() -> None:
    message = search_json("database is locked", "--kind", "messages")["results"][0]
    assert message["id"].startswith("m")
    assert "locked" in cairn("show", message["id"]).stdout

    for bad in ("s999999", "nonsense"):
        proc = cairn("show", bad, check=False)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and "error:" in proc.stderr


def test_timeline_around_an_idea() -> None:
    anchor = search_json("busy_timeout", "--kind", "ideas")["results"][0]
    data = cairn_json("timeline", anchor["id"], "--before", "2", "--after", "2")
    assert data["anchor"]["id"] == anchor["id"]
    assert len(data["before"]) <= 2 and len(data["after"]) <= 2
    assert data["before"] or data["after"]
    assert data["sessions"]

    out = cairn("timeline", anchor["id"], "--before", "2", "--after", "2").stdout
    [marked] = [line for line in out.splitlines() if "▶" in line]
    assert f"#{anchor['id']}" in marked
    assert "session" in out and "acme-api" in out


def test_content_by_term_and_concept() -> None:
    out = cairn("content", "--term", "busy_timeout", "--limit", "3").stdout
    assert "busy_timeout" in out and "demo-session.jsonl" in out
    data = cairn_json("content", "--concept", "database locking in tests", "--term", "WAL")
    assert data["results"]
    assert {"chunk_id", "document_id", "content", "relevance_score", "chunk_index"} <= set(data["results"][0])
    assert "total_results" in data["statistics"] and "has_more" in data["continuation"]


def test_content_needs_a_concept_or_a_term() -> None:
    proc = cairn("content", check=False)
    assert proc.returncode == 2
    assert "--concept" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("query", ['"', "NEAR(", "*", "-x", "", "[bold]x[/]", "a AND OR NOT", "\\"])
def test_hostile_queries_never_crash(query: str) -> None:
    proc = cairn("search", "--limit", "3", "--", query, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.parametrize("query", ['"', "NEAR(", ""])
def test_hostile_queries_as_json(query: str) -> None:
    page = json.loads(cairn("search", "--json", "--limit", "3", "--", query).stdout)
    assert isinstance(page["results"], list) and page["total"] >= 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["x", "--mode", "fuzzy"], "--mode"),
        (["x", "--kind", "files"], "--kind"),
        (["x", "--since", "last tuesday"], "--since"),
        (["x", "--intent", "wish"], "unknown intent"),
        (["x", "--limit", "0"], "--limit"),
        (["--page-token", "not-a-token"], "continuation token"),
    ],
)
def test_bad_arguments_are_one_clean_error(args: list[str], expected: str) -> None:
    proc = cairn("search", *args, check=False)
    assert proc.returncode in (1, 2)
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_matches_says_what_to_try() -> None:
    out = cairn("search", "zyxwvut qqqqq", "--mode", "keyword").stdout
    assert "No matches" in out and "--mode semantic" in out


def test_empty_store_suggests_backfill(cairn_home: Path) -> None:
    out = cairn("search", "anything").stdout
    assert "No matches" in out and "cairn backfill" in out


# Rendering, in process: what the tables make of text a transcript could contain.


def _render(renderable: Any) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=160, color_system=None).print(renderable)
    return buffer.getvalue()


def test_highlights_become_bold_and_markup_and_stars_stay_literal() -> None:
    snippet = "use WAL not [bold]x[/bold] C:\\dir and a **stray** \x1b[2J end"
    text = cli_results.highlighted(snippet, [[4, 7], [30, 33], [55, 58]])
    assert text.plain == "use WAL not [bold]x[/bold] C:\\dir and a **stray** \u241b[2J end"
    bold = [text.plain[s.start : s.end] for s in text.spans if s.style == "bold"]
    assert bold == ["WAL", "dir", "end"]  # offsets hold where a control character was made visible


def test_superseded_results_point_at_their_successor() -> None:
    page = {
        "results": [
            {
                "id": "3",
                "kind": "idea",
                "intent": "decision",
                "score": 0.5,
                "snippet": "use Postgres",
                "highlights": [[4, 12]],
                "said_at": "2025-01-02T03:04:05Z",
                "session": {"id": "abc", "project_name": "shop", "topic": "Storage"},
                "superseded": True,
                "superseded_by": {"id": "9", "preview": "stay on SQLite"},
            }
        ]
    }
    out = _render(cli_results.search_table(page))
    assert "use Postgres" in out and "→ #9" in out and "shop · Storage" in out


def test_show_panel_lists_relations_both_ways() -> None:
    item = {
        "id": "4",
        "kind": "idea",
        "intent": "decision",
        "content": "Use WAL.",
        "source": {"file": "/t/x.jsonl", "line": 7},
        "relations": [
            {
                "type": "builds_on",
                "direction": "outgoing",
                "idea": {"id": "2", "intent": "conclusion", "preview": "the cause"},
            },
            {
                "type": "answers",
                "direction": "incoming",
                "idea": {"id": "5", "intent": "solution", "preview": "the fix"},
            },
        ],
        "entities": [{"id": 1, "name": "SQLite", "type": "technology"}],
        "answered_by": None,
        "supersedes": [{"id": "1", "intent": "decision", "preview": "old", "superseded": True}],
    }
    out = _render(cli_search.show_panel(item))
    assert "/t/x.jsonl:7" in out
    assert "→ builds on #2" in out and "#5 solution" in out and "(answers this)" in out
    assert "SQLite (technology)" in out and "supersedes" in out


@pytest.mark.parametrize(
    "value", ["2025-01-31", "2025-01-31T14:00", "2025-01-31T14:00:00+02:00", "3d", "today"]
)
def test_dates_are_accepted_in_several_forms(value: str) -> None:
    parsed = cli_search.parse_when(value, "--since")
    assert parsed is not None and "T" in parsed


def test_projects_lists_what_project_filters_accept() -> None:
    projects = cairn_json("projects")
    by_name = {p["name"]: p for p in projects}
    assert "acme-api" in by_name
    acme = by_name["acme-api"]
    assert acme["sessions"] == 1 and acme["ideas"] > 0 and acme["path"].endswith("acme-api")
    by_path = search_json("busy_timeout", "--project", acme["path"])
    by_name_page = search_json("busy_timeout", "--project", "acme-api")
    assert by_path["results"] and [r["id"] for r in by_path["results"]] == [
        r["id"] for r in by_name_page["results"]
    ]
    assert {r["session"]["project_name"] for r in by_path["results"]} == {"acme-api"}


@pytest.mark.process
@pytest.mark.parametrize("down", ["damaged local store", "unreachable server"])
def test_search_without_vectors_answers_by_keyword_in_one_note_and_counts_what_it_returns(
    down: str, demo_home: Path, tmp_path: Path
) -> None:
    """With the vector store down, `search --json` answers from keyword matches: every page counts the
    same `total`, which is what paging through returns, and the page says once, in a note and in
    `vectors_unavailable`, that meaning took no part and why. A damaged local store (Chroma's own
    "file is not a database") printed a traceback above the answer: Chroma's errors were taken for a
    bug of cairn's and logged whole to a terminal with no log handler."""
    home = hostile_disks.copy_home(demo_home, tmp_path)
    # The search that opens the vector store without a daemon (by default it answers by keywords first).
    env: dict[str, str] = {"CAIRN_SEARCH_WITHOUT_DAEMON": "hybrid"}
    if down == "damaged local store":
        (home / "chroma" / "chroma.sqlite3").write_bytes(b"not a database\n")
        expected = [f"the vector store at {home / 'chroma'} cannot be used", "`cairn doctor` says what to do"]
    else:
        env["CAIRN_CHROMA_URL"] = "http://127.0.0.1:9"
        expected = ["cannot reach the Chroma server at http://127.0.0.1:9", "start the Chroma server"]

    def page(*args: str) -> dict[str, Any]:
        proc = hostile_disks.run_cairn(home, "search", *args, "--limit", "3", "--json", **env)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return dict(json.loads(proc.stdout))

    for mode in ("hybrid", "semantic"):
        first = page("database locked", "--mode", mode)
        why = first["vectors_unavailable"]
        assert why is not None and why.startswith("semantic search is unavailable, keyword matches only")
        assert all(words in why for words in expected), why
        assert first["notices"] == [why]
        assert all(r["scores"]["vector"] is None for r in first["results"])
        ids, current = [], first
        while True:
            assert current["results"] and current["total"] == first["total"], current
            ids += [r["id"] for r in current["results"]]
            if current["next_token"] is None:
                break
            current = page("--page-token", current["next_token"])
        assert first["total"] == len(ids) == len(set(ids)) > 3, (mode, ids)

    keyword = page("database locked", "--mode", "keyword")
    assert keyword["vectors_unavailable"] is None and keyword["notices"] == [] and keyword["results"]
