"""Driving the viewer in tests: a real `cairn ui` process, httpx requests, a real headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.hostile_disks import CAIRN, cairn_env

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
HOSTILE = "<script>alert(1)</script>"


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> object:
    """`predicate()`'s first truthy value, polled until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@dataclass
class Viewer:
    proc: subprocess.Popen[str]
    port: int
    token: str
    url: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **kwargs: object) -> httpx.Response:
        headers = {"x-cairn-token": self.token, **dict(kwargs.pop("headers", {}) or {})}  # type: ignore[call-overload]
        return httpx.get(self.base + path, headers=headers, timeout=60, **kwargs)  # type: ignore[arg-type]


@contextlib.contextmanager
def running_viewer(home: Path, *args: str, **env: str) -> Iterator[Viewer]:
    """`cairn ui --port 0 --json ARGS` on `home` until the block ends; killed and reaped after it."""
    proc = subprocess.Popen(
        [*CAIRN, "ui", "--port", "0", "--json", *args],
        env=cairn_env(home, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"cairn ui printed nothing: {proc.stderr.read() if proc.stderr else ''}"
        started = json.loads(line)
        token = (home / "ui-token").read_text().strip()
        assert f"token={token}" in started["url"]
        viewer = Viewer(proc, int(started["port"]), token, started["url"])

        def answers() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                return viewer.get("/projects").status_code == 200
            return False

        wait_for(answers, 60, "the viewer to answer")
        yield viewer
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


#: Why a browser test cannot run, and how to get it running.
NO_BROWSER = (
    "browser tests need Debian's chromium and chromium-driver: `sudo apt-get install -y chromium "
    "chromium-driver` (scripts/test installs them when run as root)"
)


def require_chromium() -> None:
    """Skip a browser test where Chromium is missing, before anything expensive is built for it. Under
    CI=true a missing browser fails instead: CI always runs the browser tests, never skips them unseen."""
    if CHROMIUM.exists() and CHROMEDRIVER.exists() and shutil.which("chromium") is not None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and no browser: {NO_BROWSER}")
    pytest.skip(NO_BROWSER)


def chromium_driver(download_dir: Path):  # type: ignore[no-untyped-def]
    """Debian's headless Chromium through its chromedriver — Selenium Manager never downloads anything."""
    require_chromium()
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        "--no-first-run",
        f"--user-data-dir={download_dir}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)


def backfilled(home: Path, projects: Path, timeout: float = 900) -> Path:
    """`home` after `cairn backfill --model offline` over the Claude projects folder `projects`."""
    proc = subprocess.run(
        [*CAIRN, "backfill", "--model", "offline", "--json"],
        env=cairn_env(home, CAIRN_CLAUDE_PROJECTS_DIR=str(projects)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return home


@contextlib.contextmanager
def signed_in(viewer: Viewer, download_dir: Path) -> Iterator[Any]:
    """A Chromium that opened the viewer's printed URL (its token is now a cookie), quit at the end."""
    driver = chromium_driver(download_dir)
    try:
        driver.set_page_load_timeout(120)
        driver.get(viewer.url)  # the first load: token → cookie, then redirected without it
        assert "token=" not in driver.current_url
        yield driver
    finally:
        driver.quit()


def hostile_transcript(directory: Path) -> Path:
    """A small session whose user message carries a script tag and a question the offline model keeps."""
    directory.mkdir(parents=True, exist_ok=True)
    session = "5e55a0e1-0000-4000-8000-00000000abcd"
    path = directory / f"{session}.jsonl"
    base = {"isSidechain": False, "userType": "external", "cwd": "/work/zebrafish", "sessionId": session}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2025-10-01T10:00:00.000Z",
            "message": {
                "role": "user",
                "content": f"Why does the zebrafish preview show {HOSTILE} instead of the page title?",
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2025-10-01T10:00:05.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "We decided to escape the zebrafish preview title."}],
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path
