"""Issue 32: correcting an idea on its page in a real Chromium, and seeing it at once in `cairn search
--json` and in recall (`cairn hook --recall`, as Claude Code's hook asks the daemon).

The module backfills the demo session (project acme-api: questions and a todo the indexer settled, a
decision, a fix, conclusions) and one small real transcript project with the offline model, starts a
daemon (recall needs one; the viewer's and the CLI's ops then go through it, as they do for a user) and
`cairn ui`, and clicks each correction as a person would. Each test works on its own ideas of the shared
memory.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import Daemons
from tests.helpers.hostile_disks import CAIRN, cairn_env
from tests.helpers.paths import DEMO, REAL_TRANSCRIPTS
from tests.ui.helpers import (
    Viewer,
    backfilled,
    require_chromium,
    running_viewer,
    wait_for,
)

pytestmark = pytest.mark.process

CWD = "/home/dev/acme-api"
UNDO_SECONDS = "2"
DAEMON_ENV = {"CAIRN_MODEL": "offline", "CAIRN_IDLE_EXIT_SECONDS": "3600"}
# What the importance test asks, by prompt and by search.
PROMPT = "is the lock upgrade fixed now"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()  # before the backfill: a run without a browser skips at once
    root = tmp_path_factory.mktemp("corrections")
    projects = root / "projects"
    (projects / "-home-dev-acme-api").mkdir(parents=True)
    shutil.copy(DEMO, projects / "-home-dev-acme-api" / DEMO.name)
    shutil.copytree(REAL_TRANSCRIPTS / "fasthooks", projects / "-home-dev-fasthooks")
    home = root / "home"
    backfilled(home, projects)
    return home


@pytest.fixture(scope="module")
def daemon(home: Path) -> Iterator[None]:
    daemons = Daemons(home, env=cairn_env(home, **DAEMON_ENV))
    try:
        daemons.start()
        wait_for(lambda: recall(home, "SessionStart") is not None, 120, "the daemon to answer recall")
        yield
    finally:
        daemons.cleanup()


@pytest.fixture(scope="module")
def viewer(home: Path, daemon: None) -> Iterator[Viewer]:
    with running_viewer(home, "--undo-seconds", UNDO_SECONDS) as started:
        yield started


@pytest.fixture
def page(browser: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    yield browser
    browser.save_screenshot(str(tmp_path / f"{request.node.name}.png"))


def idea(home: Path, intent: str, words: str) -> int:
    """The id of the acme-api idea of `intent` whose content holds `words`."""
    with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=30)) as conn:
        rows = conn.execute(
            "SELECT id FROM ideas WHERE intent = ? AND content LIKE ?", (intent, f"%{words}%")
        ).fetchall()
    assert len(rows) == 1, (intent, words, rows)
    return int(rows[0][0])


def search(home: Path, query: str) -> dict[int, dict[str, Any]]:
    """`cairn search QUERY --json` over acme-api's ideas, as a user runs it: results by idea id."""
    proc = subprocess.run(
        [*CAIRN, "search", query, "--project", "acme-api", "--kind", "ideas", "--limit", "30", "--json"],
        env=cairn_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {int(r["id"]): r for r in json.loads(proc.stdout)["results"]}


def recall(home: Path, event: str, prompt: str | None = None) -> str | None:
    """What `cairn hook --recall` injects into a new session of acme-api for `event`."""
    payload: dict[str, str] = {"session_id": str(uuid.uuid4()), "cwd": CWD, "hook_event_name": event}
    if prompt is None:
        payload["source"] = "startup"
    else:
        payload["prompt"] = prompt
    env = {**cairn_env(home), "CAIRN_RECALL_DEADLINE_MS": "30000", "CAIRN_HOOK_NO_SPAWN": "1"}
    proc = subprocess.run(
        [*CAIRN, "hook", "--recall"],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    if not proc.stdout.strip():
        return None
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def recalled(home: Path, event: str = "SessionStart", prompt: str | None = None) -> dict[int, str]:
    """Each idea recall injects, by id, with the section heading it is under."""
    text = recall(home, event, prompt) or ""
    out: dict[int, str] = {}
    heading = ""
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith("#"):
            heading = line
        elif line.startswith("#") and line[1:].split(" ", 1)[0].isdigit():
            out[int(line[1:].split(" ", 1)[0])] = heading
    return out


def open_item(page: Any, viewer: Viewer, idea_id: int, ready: str) -> None:
    """The idea's page, once the element `ready` (an id) is on it."""
    from selenium.webdriver.common.by import By

    page.get(f"{viewer.base}/item/{idea_id}")
    wait_for(lambda: page.find_elements(By.ID, ready), 60, f"#{ready} on idea {idea_id}'s page")


def click(page: Any, viewer: Viewer, idea_id: int, button: str, then: str) -> None:
    """Open the idea's page, click `button`, and wait for the page it lands on to show `then`."""
    from selenium.webdriver.common.by import By

    open_item(page, viewer, idea_id, button)
    page.find_element(By.ID, button).click()
    wait_for(lambda: page.find_elements(By.ID, then), 60, f"#{then} after clicking #{button}")
    assert page.current_url.endswith(f"/item/{idea_id}")


def test_declined_leaves_recall_stays_in_search_and_reopen_brings_it_back(
    page: Any, viewer: Viewer, home: Path
) -> None:
    rule = idea(home, "conclusion", "migrations run only from CI")
    assert recalled(home).get(rule) == "Latest conclusions:"
    assert search(home, "production migrations CI")[rule]["declined_at"] is None

    click(page, viewer, rule, "mark-declined", "declined-at")

    declined = search(home, "production migrations CI")[rule]
    assert declined["declined_at"] is not None, "declined ideas stay searchable, as history"
    assert rule not in recalled(home)

    click(page, viewer, rule, "reopen", "mark-declined")

    assert search(home, "production migrations CI")[rule]["declined_at"] is None
    assert recalled(home).get(rule) == "Latest conclusions:"


def test_a_question_reopened_then_marked_answered(page: Any, viewer: Viewer, home: Path) -> None:
    from selenium.webdriver.common.by import By

    question = idea(home, "question", "move orders to Postgres")
    assert search(home, "Postgres Black Friday")[question]["answered_at"] is not None
    assert question not in recalled(home), "the indexer saw it answered"

    click(page, viewer, question, "reopen", "mark-answered")

    assert search(home, "Postgres Black Friday")[question]["answered_at"] is None
    assert recalled(home).get(question) == "Open questions:"
    page.get(f"{viewer.base}/board?project=acme-api")
    wait_for(lambda: page.find_elements(By.CSS_SELECTOR, ".open-questions"), 60, "the board")
    assert f"/item/{question}" in page.find_element(By.CSS_SELECTOR, ".open-questions").get_attribute(
        "innerHTML"
    )

    click(page, viewer, question, "mark-answered", "answered-at")

    assert "marked answered by the user" in page.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert search(home, "Postgres Black Friday")[question]["answered_at"] is not None
    assert question not in recalled(home)


def test_a_todo_reopened_then_marked_done(page: Any, viewer: Viewer, home: Path) -> None:
    from selenium.webdriver.common.by import By

    todo = idea(home, "todo", "load test")
    assert search(home, "load test orders per minute")[todo]["completed_at"] is not None

    click(page, viewer, todo, "reopen", "mark-done")

    assert search(home, "load test orders per minute")[todo]["completed_at"] is None
    assert recalled(home).get(todo) == "Open todos:"

    click(page, viewer, todo, "mark-done", "completed-at")

    assert search(home, "load test orders per minute")[todo]["completed_at"] is not None
    assert todo not in recalled(home)
    page.get(f"{viewer.base}/board?project=acme-api")
    wait_for(lambda: page.find_elements(By.CSS_SELECTOR, ".done"), 60, "the board")
    assert "marked done by the user" in page.find_element(By.CSS_SELECTOR, ".done").text


def set_importance(page: Any, viewer: Viewer, idea_id: int, value: str) -> None:
    from selenium.webdriver.common.by import By

    open_item(page, viewer, idea_id, "importance")
    field = page.find_element(By.ID, "importance")
    field.clear()
    field.send_keys(value)
    page.find_element(By.ID, "save-importance").click()
    wait_for(
        lambda: (
            page.find_elements(By.ID, "importance-shown")
            and page.find_element(By.ID, "importance-shown").text == f"{float(value):.2f}"
        ),
        60,
        f"importance {value} on idea {idea_id}'s page",
    )


def test_importance_reorders_search_and_recall(page: Any, viewer: Viewer, home: Path) -> None:
    """The prompt finds the fix of the flaky test and the conclusion that found its cause (the lock
    upgrade) by their own words, at a close score: the fix's importance decides which comes first, in
    search and in what recall injects. (The cause is set to 1, the importance a conclusion already has:
    only the fix's moves.)"""
    fix = idea(home, "solution", "BEGIN IMMEDIATE does")
    cause = idea(home, "conclusion", "The real cause")
    before = search(home, PROMPT)

    set_importance(page, viewer, fix, "0")
    set_importance(page, viewer, cause, "1")

    lowered = search(home, PROMPT)
    assert (lowered[fix]["scores"]["importance"], lowered[cause]["scores"]["importance"]) == (0.0, 1.0)
    assert lowered[fix]["score"] < before[fix]["score"]
    assert ranked(lowered, fix, cause) == [cause, fix]
    injected = [i for i in recalled(home, "UserPromptSubmit", PROMPT) if i in (fix, cause)]
    assert injected == [cause, fix]

    set_importance(page, viewer, fix, "1")

    raised = search(home, PROMPT)
    assert raised[fix]["scores"]["importance"] == 1.0 and raised[fix]["score"] > lowered[fix]["score"]
    assert ranked(raised, fix, cause) == [fix, cause]
    injected = [i for i in recalled(home, "UserPromptSubmit", PROMPT) if i in (fix, cause)]
    assert injected == [fix, cause]


def ranked(results: dict[int, dict[str, Any]], *ideas: int) -> list[int]:
    """`ideas` in the order the search ranked them."""
    return sorted(ideas, key=lambda i: -results[i]["score"])


def test_wrong_forgets_it_after_the_undo_window_and_records_its_place(
    page: Any, viewer: Viewer, home: Path
) -> None:
    from selenium.webdriver.common.by import By

    verdict = idea(home, "conclusion", "We do not need Postgres")
    assert verdict in search(home, "stay on SQLite")
    assert recalled(home).get(verdict) == "Latest conclusions:"

    open_item(page, viewer, verdict, "wrong-forget")
    page.find_element(By.ID, "wrong-forget").click()
    wait_for(lambda: page.find_elements(By.ID, "confirm-forget"), 60, "the forget confirmation")
    page.find_element(By.ID, "confirm-forget").click()
    # The page counts the undo window down and reloads itself when it ends.
    wait_for(lambda: f"Forgot idea #{verdict}." in body_text(page), 60, "the forget applied")

    assert verdict not in search(home, "stay on SQLite")
    assert verdict not in recalled(home)
    with contextlib.closing(sqlite3.connect(home / "cairn.db", timeout=30)) as conn:
        tombstones = conn.execute("SELECT state, importance FROM idea_corrections WHERE state = 'forgotten'")
        assert tombstones.fetchall() == [("forgotten", None)]


def body_text(page: Any) -> str:
    """The page's text, or "" while it is being replaced (a reload in between is no failure)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        return str(page.find_element(By.TAG_NAME, "body").text)
    except (StaleElementReferenceException, NoSuchElementException):  # the next page has no body yet
        return ""


def test_a_post_from_another_origin_is_refused_before_anything_changes(viewer: Viewer, home: Path) -> None:
    import httpx

    target = idea(home, "solution", "BEGIN IMMEDIATE does")

    for origin in ("https://evil.example", "null", f"http://127.0.0.1:{viewer.port + 1}"):
        refused = httpx.post(
            f"{viewer.base}/correct",
            data={"token": viewer.token, "idea": str(target), "state": "declined"},
            headers={"x-cairn-token": viewer.token, "origin": origin},
            timeout=30,
        )
        assert refused.status_code == 403, origin
    assert search(home, "lock-upgrade deadlock BEGIN IMMEDIATE")[target]["declined_at"] is None
    # From the viewer's own origin the op decides, and its refusal is the page's one line.
    wrong_intent = httpx.post(
        f"{viewer.base}/correct",
        data={"token": viewer.token, "idea": str(target), "state": "answered"},
        headers={"x-cairn-token": viewer.token, "origin": viewer.base},
        timeout=30,
    )
    assert wrong_intent.status_code == 400 and "only a question or problem" in wrong_intent.text
