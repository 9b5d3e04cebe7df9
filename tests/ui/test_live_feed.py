"""Issue 18: the live feed shows what a running daemon indexes — a transcript line appended while the
feed page is open in Chromium appears on that page (its script polls every 2 s; no reload), within a
generous deadline; the figure is printed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import Daemons, enqueue, offline_daemons
from tests.ui.helpers import Viewer, chromium_driver, require_chromium, running_viewer, wait_for

pytestmark = pytest.mark.process

SESSION = "1ed5fee0-0000-4000-8000-000000000001"


@pytest.fixture
def daemons(cairn_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    settings = {"CAIRN_BATCH_WINDOW_SECONDS": "0.2", "CAIRN_IDLE_EXIT_SECONDS": "120"}
    with offline_daemons(cairn_home, monkeypatch, **settings) as started:
        yield started


def _line(n: int, role: str, text: str) -> str:
    entry = {
        "type": role,
        "uuid": f"{role}-{n}",
        "parentUuid": None if n == 1 else f"line-{n - 1}",
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/kingfisher",
        "sessionId": SESSION,
        "timestamp": f"2025-11-01T10:00:{n:02d}.000Z",
        "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
    }
    return json.dumps(entry) + "\n"


def test_an_appended_line_shows_in_the_feed_while_the_daemon_runs(
    daemons: Daemons, cairn_home: Path, tmp_path: Path
) -> None:
    require_chromium()
    transcript = tmp_path / "projects" / "-work-kingfisher" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(_line(1, "user", "How should the kingfisher cache evict old entries?"))
    daemons.start()
    with running_viewer(cairn_home) as viewer:
        enqueue(cairn_home, transcript, SESSION)
        wait_for(lambda: "kingfisher" in viewer.get("/feed/items").text, 60, "the first line's idea")

        driver = chromium_driver(tmp_path / "chromium")
        try:
            driver.get(viewer.url)  # the first load: token → cookie (it lands on the home page)
            driver.get(viewer.base + "/feed")  # the feed page, left open
            _append_and_watch(driver, viewer, transcript, cairn_home, tmp_path)
        finally:
            driver.quit()


def _append_and_watch(driver: Any, viewer: Viewer, transcript: Path, home: Path, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    def listed() -> bool:
        return "least recent use" in driver.find_element(By.ID, "feed").text

    assert not listed()
    # Labelled, so the offline indexer stores it as a decision whatever its learned model makes of a
    # one-message update (docs/indexing.md, Labels): "We decided to evict …" alone is under the model's
    # threshold, and then there is nothing for the feed to show.
    decision = "Decision: evict kingfisher cache entries by least recent use."
    with transcript.open("a", encoding="utf-8") as out:
        out.write(_line(2, "assistant", decision))
    written = time.monotonic()
    enqueue(home, transcript, SESSION)  # what the Stop hook does after the answer
    wait_for(lambda: "least recent use" in viewer.get("/feed/items").text, 60, "the daemon to index the line")
    wait_for(listed, 60, "the appended line on the open feed page")
    seconds = time.monotonic() - written
    print(f"\nlive feed: the appended line's idea was on the open page {seconds:.2f} s after it was written")
    driver.save_screenshot(str(shots / "live-feed.png"))
    event = [e for e in driver.find_elements(By.CSS_SELECTOR, "li.event-idea") if "least recent" in e.text]
    assert event and "decision" in event[0].text


def test_the_home_pages_daemon_card_follows_the_daemon_without_a_reload(
    daemons: Daemons, cairn_home: Path, tmp_path: Path
) -> None:
    """The card is swapped in every 5 s by the page's script: a daemon started while the page is open
    shows as running on that page (the same page: a flag set on it survives)."""
    require_chromium()
    with running_viewer(cairn_home) as viewer:
        driver = chromium_driver(tmp_path / "chromium")
        try:
            driver.get(viewer.url)  # the first load: token → cookie, then the home page (no daemon yet)

            def read(script: str) -> str:
                # One script call per read: the card is swapped every 5 s, so an element found first and
                # read afterwards can be gone in between (a stale element).
                return str(driver.execute_script(script))

            def state() -> str:
                return read("return document.getElementById('daemon-state').dataset.running")

            assert state() == "no"
            driver.execute_script("window.cairnSamePage = true")
            daemons.start()
            wait_for(lambda: state() == "yes", 90, "the open home page to show the daemon running")
            assert driver.execute_script("return window.cairnSamePage === true"), "the page was reloaded"
            updated = "return document.getElementById('daemon-updated').textContent"
            wait_for(lambda: "updated" in read(updated), 30, "the card's time")
            driver.save_screenshot(str(tmp_path / "home-daemon.png"))
        finally:
            driver.quit()
