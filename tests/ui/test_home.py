"""Issue 32: the home page shows the memory — its figures read in a real headless Chromium agree with
`cairn stats --json` and `cairn projects --json`, the chart's bars add up to the ideas stored, and
ideas said on different days land in different bars although one backfill indexed them together.

The module backfills two small fixture projects (claude-code-viewer, fasthooks) and one session built
here whose lines were written weeks apart, with the offline model; then gives recall something to
count (one SessionStart recall through the real op, one `show` that makes a hit, two drops in the
hook's counter) before `cairn ui` starts.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from cairn.daemon.recall_drops import count_drop
from cairn.ui.units import compact, percent
from tests.helpers.builders import Transcript
from tests.helpers.hostile_disks import CAIRN, cairn_env
from tests.helpers.paths import REAL_TRANSCRIPTS
from tests.ui.helpers import Viewer, backfilled, require_chromium, running_viewer, signed_in

pytestmark = pytest.mark.process

PROJECTS = ("claude-code-viewer", "fasthooks")
HERON = "/work/heron"
#: The heron session's three days: weeks apart, so whatever the bucket size they fall in three bars.
HERON_DAYS = (
    datetime(2025, 10, 1, 9, tzinfo=UTC),
    datetime(2025, 11, 12, 9, tzinfo=UTC),
    datetime(2025, 12, 3, 9, tzinfo=UTC),
)

# Runs in a subprocess on the home, as a hook and the coding agent would reach the store.
_RECALL = """
import asyncio, json, sys
from cairn.config import Settings
from cairn.ui.backend import Ops

async def main():
    ops = Ops(Settings.load())
    start = await ops.call("recall", {"event": "SessionStart", "session_id": "cc-home-test",
                                      "cwd": "/path/to/Demo", "source": "startup"})
    if start["ids"]:
        await ops.call("show", {"id": start["ids"][0], "record_hit": True})
    await ops.close()
    print(json.dumps(start["ids"]))

asyncio.run(main())
"""


#: What was said on each of them: distinct enough that the offline model keeps every line as an idea.
HERON_LINES = (
    (
        "Why does the heron cache lose every entry after a restart?",
        "We decided to persist the heron cache to disk on shutdown, so a restart keeps it.",
    ),
    (
        "Should heron compress what it stores? The disk fills up quickly.",
        "We chose zstd compression for heron's stored pages: the disk use dropped by two thirds.",
    ),
    (
        "How long should heron keep a page before dropping it?",
        "Decision: heron expires pages after seven days, checked by a nightly sweep.",
    ),
)


def _heron_session(directory: Path) -> None:
    """One session said over two months: a question and a decision on each of three days."""
    transcript = Transcript(HERON, start=HERON_DAYS[0])
    for day, (question, answer) in zip(HERON_DAYS, HERON_LINES, strict=True):
        transcript.now = day
        transcript.user(question)
        transcript.say(answer)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{transcript.session_id}.jsonl").write_text(transcript.text(), encoding="utf-8")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    root = tmp_path_factory.mktemp("home-page")
    home = root / "home"
    projects = root / "projects"
    for name in PROJECTS:
        shutil.copytree(REAL_TRANSCRIPTS / name, projects / f"-home-dev-{name}")
    _heron_session(projects / "-work-heron")
    backfilled(home, projects)
    recalled = subprocess.run(
        [sys.executable, "-c", _RECALL], env=cairn_env(home), capture_output=True, text=True, timeout=300
    )
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout), "recall injected nothing: the recall figures would all be zero"
    count_drop(str(home), "UserPromptSubmit", "late", 200)
    count_drop(str(home), "SessionStart", "no_daemon", 200)
    return home


@pytest.fixture(scope="module")
def viewer(home: Path) -> Iterator[Viewer]:
    with running_viewer(home) as started:
        yield started


@pytest.fixture(scope="module")
def browser(viewer: Viewer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with signed_in(viewer, tmp_path_factory.mktemp("chromium")) as driver:
        assert driver.current_url.rstrip("/") == viewer.base  # redirected to the home page
        driver.set_window_size(1280, 2000)
        yield driver


@pytest.fixture
def page(browser: Any, viewer: Viewer, tmp_path: Path) -> Any:
    """The home page in Chromium for one test; its screenshot is saved under the test's temp dir."""
    browser.get(viewer.base + "/")
    browser.save_screenshot(str(tmp_path / "home.png"))
    return browser


def _cli(home: Path, *args: str) -> Any:
    proc = subprocess.run(
        [*CAIRN, *args, "--json"], env=cairn_env(home), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _query(home: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=30)) as conn:
        return list(conn.execute(sql, params))


def _all(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, css))


def _one(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def test_the_figures_are_cairn_stats(page: Any, home: Path) -> None:
    stats = _cli(home, "stats")
    assert stats["ideas"] > 10 and stats["recall_injections"] > 0  # the comparison means something
    for key in ("sessions", "messages", "ideas", "recall_injections", "recall_hits", "recall_drops"):
        card = _one(page, f"#figure-{key}")
        assert int(card.get_attribute("data-value")) == stats[key], key
        assert _one(card, ".figure-value").text == compact(stats[key]), key
    assert _one(page, "#figure-projects").get_attribute("data-value") == str(stats["projects"])
    rate = _one(page, "#figure-recall_hit_rate")
    assert float(rate.get_attribute("data-value")) == stats["recall_hit_rate"]
    assert _one(rate, ".figure-value").text == percent(stats["recall_hit_rate"])
    assert stats["recall_drops"] == 2 and stats["recall_hits"] == 1
    shown = {
        li.get_attribute("data-intent"): int(li.get_attribute("data-value"))
        for li in _all(page, "#ideas-by-intent li")
    }
    assert {k: v for k, v in shown.items() if v} == stats["ideas_by_intent"]


def test_open_items_are_the_open_questions_and_todos(page: Any, home: Path) -> None:
    questions = _cli(home, "questions", "--open", "--limit", "1000")
    todos = _cli(home, "todos", "--open", "--limit", "1000")
    card = _one(page, "#figure-open_items")
    assert int(card.get_attribute("data-value")) == len(questions) + len(todos)
    assert f"{len(questions)} questions · {len(todos)} todos" in card.text


def test_each_project_row_is_cairn_projects(page: Any, home: Path) -> None:
    projects = _cli(home, "projects")
    assert len(projects) == 3
    rows = {
        row.get_attribute("data-project-path"): row for row in _all(page, "#project-figures tr.project-row")
    }
    assert set(rows) == {p["path"] for p in projects}
    for project in projects:
        row = rows[project["path"]]

        def cell(key: str, row: Any = row) -> Any:
            return _one(row, f"td[data-figure='{key}']")

        assert int(cell("sessions").get_attribute("data-value")) == project["sessions"]
        assert int(cell("ideas").get_attribute("data-value")) == project["ideas"]
        assert int(cell("open_items").get_attribute("data-questions")) == project["open_questions"]
        ((messages,),) = _query(
            home,
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id "
            "JOIN projects p ON p.id = s.project_id WHERE p.path = ?",
            (project["path"],),
        )
        assert int(cell("messages").get_attribute("data-value")) == messages
        link = urlsplit(_one(row, "a.project-link").get_attribute("href"))
        assert (link.path, parse_qs(link.query)) == ("/timeline", {"project": [project["path"]]})


def test_the_chart_adds_up_to_the_ideas(page: Any, home: Path) -> None:
    stats = _cli(home, "stats")
    bars = _all(page, "#remembered-chart g.bucket")
    assert 1 < len(bars) <= 60
    assert sum(int(bar.get_attribute("data-ideas")) for bar in bars) == stats["ideas"]
    by_intent: dict[str, int] = {}
    for bar in bars:
        segments = _all(bar, "rect.segment")
        assert sum(int(s.get_attribute("data-count")) for s in segments) == int(
            bar.get_attribute("data-ideas")
        )
        for segment in segments:
            intent = segment.get_attribute("data-intent")
            by_intent[intent] = by_intent.get(intent, 0) + int(segment.get_attribute("data-count"))
        title = _one(bar, "title").get_attribute("textContent")
        assert f"{int(bar.get_attribute('data-ideas')):,} idea" in title
    assert by_intent == stats["ideas_by_intent"]
    labels = [t.text for t in _all(page, "#remembered-chart text.axis-label") if t.text]
    assert any(label[-4:].isdigit() and label[:1].isdigit() for label in labels), labels  # e.g. "1 Sep 2025"


def test_the_chart_buckets_ideas_by_when_they_were_said(page: Any, home: Path) -> None:
    heron = _query(
        home,
        "SELECT i.said_at, i.created_at FROM ideas i JOIN sessions s ON s.id = i.session_id "
        "JOIN projects p ON p.id = s.project_id WHERE p.path = ?",
        (HERON,),
    )
    said_days = {said[:10] for said, _ in heron}
    indexed_days = {created[:10] for _, created in heron}
    assert said_days == {day.date().isoformat() for day in HERON_DAYS}, heron  # said on three days ...
    assert len(indexed_days) == 1  # ... indexed by one backfill
    bars = [
        (bar.get_attribute("data-start"), bar.get_attribute("data-end"), int(bar.get_attribute("data-ideas")))
        for bar in _all(page, "#remembered-chart g.bucket")
    ]

    def bar_of(day: str) -> tuple[str, str, int]:
        found = [bar for bar in bars if bar[0] <= day <= bar[1]]
        assert len(found) == 1, (day, bars)
        return found[0]

    holding = {day: bar_of(day) for day in said_days}
    assert len(set(holding.values())) == len(said_days)  # one bar per day the heron ideas were said
    for day, bar in holding.items():
        assert bar[2] >= sum(1 for said, _ in heron if said[:10] == day)
    # Nothing stands at the index time: the bars end with the newest said time, months before it.
    (index_day,) = indexed_days
    assert all(bar[1] < index_day for bar in bars)


def test_the_daemon_panel_says_what_happened_last(page: Any, home: Path) -> None:
    # Read in one script call: the page swaps the card in every 5 s, so an element found and then read
    # could be replaced in between.
    card = page.execute_script(
        """const q = (s) => document.querySelector(s);
        return {
          running: q("#daemon-state").dataset.running,
          last: q("#daemon-last-run").innerText,
          doing: q("#daemon-doing").innerText,
          queue: Object.fromEntries([...document.querySelectorAll("#daemon-queue [data-queue]")]
            .map((e) => [e.dataset.queue, Number(e.dataset.value)])),
        };"""
    )
    assert card["running"] == "no"
    ((run_id, outcome),) = _query(home, "SELECT id, outcome FROM index_runs ORDER BY id DESC LIMIT 1")
    assert card["last"].startswith(f"#{run_id} {outcome}") and "tokens" in card["last"]
    assert "nothing" in card["doing"]
    status = _cli(home, "status")
    assert card["queue"] == {
        "pending": status["queue"]["pending"],
        "running": status["queue"]["running"],
        "parked": status["queue"]["parked"],
        "done": status["queue"]["done"],
    }


def test_the_health_page_speaks_in_words_and_units(page: Any, viewer: Viewer, home: Path) -> None:
    page.get(viewer.base + "/health")
    text = _one(page, "main").text
    for raw in ("db size bytes", "db_size_bytes", "True", "False", "None", "enabled"):
        assert raw not in text, raw
    size = _one(page, "#db-size").text
    number, unit = size.split()
    assert unit in ("KB", "MB", "GB") and float(number) > 0
    stats = _cli(home, "stats")
    assert f"{stats['messages']:,}" in _one(page, "#health-store").text


def test_an_empty_memory_says_how_to_fill_it(tmp_path: Path) -> None:
    with running_viewer(tmp_path / "home") as viewer:
        answer = viewer.get("/")
    assert answer.status_code == 200
    assert 'id="empty-memory"' in answer.text and "cairn backfill" in answer.text
    assert 'id="figures"' not in answer.text
